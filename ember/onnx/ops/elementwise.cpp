// ONNX elementwise operators: unary math, activations, binary arithmetic and comparisons
// (numpy broadcasting, as the op table's binary ops), variadic Max/Min/Sum/Mean, Where,
// Clip and the casts.
#include <cmath>

#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

namespace {

template <Backend B, OpCode C>
std::vector<RValue<B>> unary(Ctx<B>& c) {
  return one(c.in(0).unary(C));
}

template <Backend B, OpCode C>
std::vector<RValue<B>> binary(Ctx<B>& c) {
  const Tn<B>& a = c.in(0);
  const Tn<B>& b = c.in(1);
  if (a.dtype() != b.dtype())
    c.fail("inputs differ in element type: " + std::string(name(a.dtype())) + " and " +
           std::string(name(b.dtype())));
  return one(op<B>(C, {a, b}));
}

template <Backend B>
std::vector<RValue<B>> identity(Ctx<B>& c) {
  return {c.value(0)};
}

template <Backend B>
std::vector<RValue<B>> reciprocal(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  return one(1.0 / x);
}

template <Backend B>
std::vector<RValue<B>> pow(Ctx<B>& c) {
  const Tn<B>& a = c.in(0);
  Tn<B> b = c.in(1);
  if (b.dtype() != a.dtype()) b = b.cast(a.dtype());
  return one(op<B>(OpCode::Pow, {a, b}));
}

template <Backend B>
std::vector<RValue<B>> mod(Ctx<B>& c) {
  const Tn<B>& a = c.in(0);
  const Tn<B>& b = c.in(1);
  if (c.attr_i("fmod", 0) == 0) {
    if (is_float(a.dtype())) c.fail("fmod=0 is only defined for integer inputs");
    return one(op<B>(OpCode::Remainder, {a, b}));
  }
  // C's fmod: the sign of the dividend.
  if (is_float(a.dtype())) return one(a - (a / b).unary(OpCode::Trunc) * b);
  return one(a - (a / b) * b);  // integer division truncates toward zero
}

template <Backend B>
std::vector<RValue<B>> bit_shift(Ctx<B>& c) {
  const std::string dir = c.attr_s("direction");
  if (dir == "LEFT") return one(op<B>(OpCode::ShiftLeft, {c.in(0), c.in(1)}));
  if (dir == "RIGHT") return one(op<B>(OpCode::ShiftRight, {c.in(0), c.in(1)}));
  c.fail("direction must be LEFT or RIGHT, not \"" + dir + "\"");
}

template <Backend B>
std::vector<RValue<B>> is_inf(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const bool pos = c.attr_i("detect_positive", 1) != 0, neg = c.attr_i("detect_negative", 1) != 0;
  Tn<B> inf = x.isinf();
  if (pos && neg) return one(inf);
  if (!pos && !neg) return one(op<B>(OpCode::LogicalAnd, {inf, inf.unary(OpCode::LogicalNot)}));
  Tn<B> side = pos ? x.gt(0.0) : x.lt(scalar_of(x, 0.0));
  return one(op<B>(OpCode::LogicalAnd, {inf, side}));
}

template <Backend B, OpCode C>
std::vector<RValue<B>> variadic(Ctx<B>& c) {
  Tn<B> acc = c.in(0);
  for (size_t k = 1; k < c.num_inputs(); ++k) acc = op<B>(C, {acc, c.in(k)});
  return one(acc);
}

template <Backend B>
std::vector<RValue<B>> mean(Ctx<B>& c) {
  Tn<B> acc = c.in(0);
  for (size_t k = 1; k < c.num_inputs(); ++k) acc = acc + c.in(k);
  return one(acc / static_cast<double>(c.num_inputs()));
}

template <Backend B>
std::vector<RValue<B>> where(Ctx<B>& c) {
  return one(detail::where(c.in(0), c.in(1), c.in(2)));
}

template <Backend B>
std::vector<RValue<B>> clip(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  std::optional<Tn<B>> lo, hi;
  if (c.opset() < 11) {
    if (c.has_attr("min")) lo = scalar_of(x, c.attr_f("min", 0));
    if (c.has_attr("max")) hi = scalar_of(x, c.attr_f("max", 0));
  } else {
    lo = c.opt(1);
    hi = c.opt(2);
  }
  if (lo) x = op<B>(OpCode::Maximum, {x, lo->cast(x.dtype())});
  if (hi) x = op<B>(OpCode::Minimum, {x, hi->cast(x.dtype())});
  return one(x);
}

template <Backend B>
std::vector<RValue<B>> cast_op(Ctx<B>& c) {
  if (!c.has_attr("to")) c.fail("the attribute to is required");
  return one(c.in(0).cast(c.attr_dtype("to", DType::F32)));
}

template <Backend B>
std::vector<RValue<B>> cast_like(Ctx<B>& c) {
  return one(c.in(0).cast(c.in(1).dtype()));
}

// ---- activations ---------------------------------------------------------------------

template <Backend B>
std::vector<RValue<B>> elu(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const double alpha = c.attr_f("alpha", 1.0);
  return one(detail::where(x.gt(0.0), x, (x.unary(OpCode::Expm1)) * alpha));
}

template <Backend B>
std::vector<RValue<B>> celu(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const double alpha = c.attr_f("alpha", 1.0);
  Tn<B> neg = (x / alpha).unary(OpCode::Expm1) * alpha;
  return one(op<B>(OpCode::Maximum, {x, scalar_of(x, 0.0)}) +
             op<B>(OpCode::Minimum, {neg, scalar_of(x, 0.0)}));
}

template <Backend B>
std::vector<RValue<B>> selu(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const double alpha = c.attr_f("alpha", 1.67326319217681884765625);
  const double gamma = c.attr_f("gamma", 1.05070102214813232421875);
  return one(detail::where(x.gt(0.0), x * gamma, (x.exp() * alpha - alpha) * gamma));
}

template <Backend B>
std::vector<RValue<B>> leaky_relu(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  return one(detail::where(x.lt(scalar_of(x, 0.0)), x * c.attr_f("alpha", 0.01), x));
}

template <Backend B>
std::vector<RValue<B>> prelu(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  return one(detail::where(x.lt(scalar_of(x, 0.0)), x * c.in(1), x));
}

template <Backend B>
std::vector<RValue<B>> thresholded_relu(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  return one(detail::where(x.gt(c.attr_f("alpha", 1.0)), x, x.zeros_like()));
}

template <Backend B>
std::vector<RValue<B>> hard_sigmoid(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  Tn<B> y = x * c.attr_f("alpha", 0.2) + c.attr_f("beta", 0.5);
  y = op<B>(OpCode::Maximum, {y, scalar_of(x, 0.0)});
  return one(op<B>(OpCode::Minimum, {y, scalar_of(x, 1.0)}));
}

template <Backend B>
std::vector<RValue<B>> hard_swish(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  Tn<B> y = x / 6.0 + 0.5;
  y = op<B>(OpCode::Minimum, {op<B>(OpCode::Maximum, {y, scalar_of(x, 0.0)}), scalar_of(x, 1.0)});
  return one(x * y);
}

template <Backend B>
std::vector<RValue<B>> softsign(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  return one(x / (x.unary(OpCode::Abs) + 1.0));
}

template <Backend B>
std::vector<RValue<B>> softplus(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|).
  Tn<B> m = op<B>(OpCode::Maximum, {x, scalar_of(x, 0.0)});
  return one(m + (-x.unary(OpCode::Abs)).exp().unary(OpCode::Log1p));
}

template <Backend B>
std::vector<RValue<B>> shrink(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const double lambd = c.attr_f("lambd", 0.5), bias = c.attr_f("bias", 0.0);
  Tn<B> lo = x.lt(scalar_of(x, -lambd)), hi = x.gt(lambd);
  return one(detail::where(lo, x + bias, detail::where(hi, x - bias, x.zeros_like())));
}

template <Backend B>
std::vector<RValue<B>> gelu(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  if (c.attr_s("approximate", "none") == "tanh") {
    Tn<B> inner = (x + x * x * x * 0.044715) * 0.7978845608028654;
    return one(x * 0.5 * (inner.unary(OpCode::Tanh) + 1.0));
  }
  return one(x.unary(OpCode::Gelu));
}

template <Backend B>
std::vector<RValue<B>> mish(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  Tn<B> m = op<B>(OpCode::Maximum, {x, scalar_of(x, 0.0)});
  Tn<B> sp = m + (-x.unary(OpCode::Abs)).exp().unary(OpCode::Log1p);
  return one(x * sp.unary(OpCode::Tanh));
}

}  // namespace

template <Backend B>
void register_elementwise_ops(OpRegistry<B>& r) {
  r["Abs"] = unary<B, OpCode::Abs>;
  r["Acos"] = unary<B, OpCode::Acos>;
  r["Acosh"] = unary<B, OpCode::Acosh>;
  r["Asin"] = unary<B, OpCode::Asin>;
  r["Asinh"] = unary<B, OpCode::Asinh>;
  r["Atan"] = unary<B, OpCode::Atan>;
  r["Atanh"] = unary<B, OpCode::Atanh>;
  r["Ceil"] = unary<B, OpCode::Ceil>;
  r["Cos"] = unary<B, OpCode::Cos>;
  r["Cosh"] = unary<B, OpCode::Cosh>;
  r["Erf"] = unary<B, OpCode::Erf>;
  r["Exp"] = unary<B, OpCode::Exp>;
  r["Floor"] = unary<B, OpCode::Floor>;
  r["IsNaN"] = unary<B, OpCode::IsNan>;
  r["IsInf"] = is_inf<B>;
  r["Log"] = unary<B, OpCode::Log>;
  r["Neg"] = unary<B, OpCode::Neg>;
  r["Not"] = unary<B, OpCode::LogicalNot>;
  r["BitwiseNot"] = unary<B, OpCode::BitwiseNot>;
  r["Reciprocal"] = reciprocal<B>;
  r["Round"] = unary<B, OpCode::Round>;
  r["Sigmoid"] = unary<B, OpCode::Sigmoid>;
  r["Sign"] = unary<B, OpCode::Sign>;
  r["Sin"] = unary<B, OpCode::Sin>;
  r["Sinh"] = unary<B, OpCode::Sinh>;
  r["Sqrt"] = unary<B, OpCode::Sqrt>;
  r["Tan"] = unary<B, OpCode::Tan>;
  r["Tanh"] = unary<B, OpCode::Tanh>;
  r["Relu"] = unary<B, OpCode::Relu>;
  r["Identity"] = identity<B>;

  r["Add"] = binary<B, OpCode::Add>;
  r["Sub"] = binary<B, OpCode::Sub>;
  r["Mul"] = binary<B, OpCode::Mul>;
  r["Div"] = binary<B, OpCode::Div>;
  r["Pow"] = pow<B>;
  r["Mod"] = mod<B>;
  r["And"] = binary<B, OpCode::LogicalAnd>;
  r["Or"] = binary<B, OpCode::LogicalOr>;
  r["Xor"] = binary<B, OpCode::LogicalXor>;
  r["BitwiseAnd"] = binary<B, OpCode::BitwiseAnd>;
  r["BitwiseOr"] = binary<B, OpCode::BitwiseOr>;
  r["BitwiseXor"] = binary<B, OpCode::BitwiseXor>;
  r["BitShift"] = bit_shift<B>;
  r["Equal"] = binary<B, OpCode::Equal>;
  r["Greater"] = binary<B, OpCode::Greater>;
  r["GreaterOrEqual"] = binary<B, OpCode::GreaterEqual>;
  r["Less"] = binary<B, OpCode::Less>;
  r["LessOrEqual"] = binary<B, OpCode::LessEqual>;

  r["Max"] = variadic<B, OpCode::Maximum>;
  r["Min"] = variadic<B, OpCode::Minimum>;
  r["Sum"] = variadic<B, OpCode::Add>;
  r["Mean"] = mean<B>;
  r["Where"] = where<B>;
  r["Clip"] = clip<B>;
  r["Cast"] = cast_op<B>;
  r["CastLike"] = cast_like<B>;

  r["Elu"] = elu<B>;
  r["Celu"] = celu<B>;
  r["Selu"] = selu<B>;
  r["LeakyRelu"] = leaky_relu<B>;
  r["PRelu"] = prelu<B>;
  r["ThresholdedRelu"] = thresholded_relu<B>;
  r["HardSigmoid"] = hard_sigmoid<B>;
  r["HardSwish"] = hard_swish<B>;
  r["Softsign"] = softsign<B>;
  r["Softplus"] = softplus<B>;
  r["Shrink"] = shrink<B>;
  r["Gelu"] = gelu<B>;
  r["Mish"] = mish<B>;
}

template void register_elementwise_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_elementwise_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
