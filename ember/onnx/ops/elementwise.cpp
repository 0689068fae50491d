// ONNX elementwise operators: unary math, activations, binary arithmetic and comparisons
// (numpy broadcasting, as the op table's binary ops), variadic Max/Min/Sum/Mean, Where,
// Clip and the casts.
#include <cmath>

#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

namespace {

std::vector<RValue> one(Tn t) { return {RValue::of(std::move(t))}; }

template <OpCode C>
std::vector<RValue> unary(Ctx& c) {
  return one(c.in(0).unary(C));
}

template <OpCode C>
std::vector<RValue> binary(Ctx& c) {
  const Tn& a = c.in(0);
  const Tn& b = c.in(1);
  if (a.dtype() != b.dtype())
    c.fail("inputs differ in element type: " + std::string(name(a.dtype())) + " and " +
           std::string(name(b.dtype())));
  return one(op(C, {a, b}));
}

std::vector<RValue> identity(Ctx& c) { return {c.value(0)}; }

std::vector<RValue> reciprocal(Ctx& c) {
  const Tn& x = c.in(0);
  return one(1.0 / x);
}

std::vector<RValue> pow(Ctx& c) {
  const Tn& a = c.in(0);
  Tn b = c.in(1);
  if (b.dtype() != a.dtype()) b = b.cast(a.dtype());
  return one(op(OpCode::Pow, {a, b}));
}

std::vector<RValue> mod(Ctx& c) {
  const Tn& a = c.in(0);
  const Tn& b = c.in(1);
  if (c.attr_i("fmod", 0) == 0) {
    if (is_float(a.dtype())) c.fail("fmod=0 is only defined for integer inputs");
    return one(op(OpCode::Remainder, {a, b}));
  }
  // C's fmod: the sign of the dividend.
  if (is_float(a.dtype())) return one(a - (a / b).unary(OpCode::Trunc) * b);
  return one(a - (a / b) * b);  // integer division truncates toward zero
}

std::vector<RValue> bit_shift(Ctx& c) {
  const std::string dir = c.attr_s("direction");
  if (dir == "LEFT") return one(op(OpCode::ShiftLeft, {c.in(0), c.in(1)}));
  if (dir == "RIGHT") return one(op(OpCode::ShiftRight, {c.in(0), c.in(1)}));
  c.fail("direction must be LEFT or RIGHT, not \"" + dir + "\"");
}

std::vector<RValue> is_inf(Ctx& c) {
  const Tn& x = c.in(0);
  const bool pos = c.attr_i("detect_positive", 1) != 0, neg = c.attr_i("detect_negative", 1) != 0;
  Tn inf = x.isinf();
  if (pos && neg) return one(inf);
  if (!pos && !neg) return one(op(OpCode::LogicalAnd, {inf, inf.unary(OpCode::LogicalNot)}));
  Tn side = pos ? x.gt(0.0) : x.lt(scalar_of(x, 0.0));
  return one(op(OpCode::LogicalAnd, {inf, side}));
}

template <OpCode C>
std::vector<RValue> variadic(Ctx& c) {
  Tn acc = c.in(0);
  for (size_t k = 1; k < c.num_inputs(); ++k) acc = op(C, {acc, c.in(k)});
  return one(acc);
}

std::vector<RValue> mean(Ctx& c) {
  Tn acc = c.in(0);
  for (size_t k = 1; k < c.num_inputs(); ++k) acc = acc + c.in(k);
  return one(acc / static_cast<double>(c.num_inputs()));
}

std::vector<RValue> where(Ctx& c) { return one(detail::where(c.in(0), c.in(1), c.in(2))); }

std::vector<RValue> clip(Ctx& c) {
  Tn x = c.in(0);
  std::optional<Tn> lo, hi;
  if (c.opset() < 11) {
    if (c.has_attr("min")) lo = scalar_of(x, c.attr_f("min", 0));
    if (c.has_attr("max")) hi = scalar_of(x, c.attr_f("max", 0));
  } else {
    lo = c.opt(1);
    hi = c.opt(2);
  }
  if (lo) x = op(OpCode::Maximum, {x, lo->cast(x.dtype())});
  if (hi) x = op(OpCode::Minimum, {x, hi->cast(x.dtype())});
  return one(x);
}

DType onnx_dtype(const Ctx& c, int64_t t) {
  switch (t) {
    case 1:
      return DType::F32;
    case 2:
      return DType::U8;
    case 3:
      return DType::I8;
    case 5:
      return DType::I16;
    case 6:
      return DType::I32;
    case 7:
      return DType::I64;
    case 9:
      return DType::Bool;
    case 10:
      return DType::F16;
    case 11:
      return DType::F64;
    case 16:
      return DType::BF16;
    default:
      break;
  }
  c.fail("element type " + std::string(onnx_type_name(static_cast<int32_t>(t))) +
         " has no ember dtype");
}

std::vector<RValue> cast_op(Ctx& c) { return one(c.in(0).cast(onnx_dtype(c, c.attr_i("to", 1)))); }

std::vector<RValue> cast_like(Ctx& c) { return one(c.in(0).cast(c.in(1).dtype())); }

// ---- activations ---------------------------------------------------------------------

std::vector<RValue> elu(Ctx& c) {
  const Tn& x = c.in(0);
  const double alpha = c.attr_f("alpha", 1.0);
  return one(detail::where(x.gt(0.0), x, (x.unary(OpCode::Expm1)) * alpha));
}

std::vector<RValue> celu(Ctx& c) {
  const Tn& x = c.in(0);
  const double alpha = c.attr_f("alpha", 1.0);
  Tn neg = (x / alpha).unary(OpCode::Expm1) * alpha;
  return one(op(OpCode::Maximum, {x, scalar_of(x, 0.0)}) +
             op(OpCode::Minimum, {neg, scalar_of(x, 0.0)}));
}

std::vector<RValue> selu(Ctx& c) {
  const Tn& x = c.in(0);
  const double alpha = c.attr_f("alpha", 1.67326319217681884765625);
  const double gamma = c.attr_f("gamma", 1.05070102214813232421875);
  return one(detail::where(x.gt(0.0), x * gamma, (x.exp() * alpha - alpha) * gamma));
}

std::vector<RValue> leaky_relu(Ctx& c) {
  const Tn& x = c.in(0);
  return one(detail::where(x.lt(scalar_of(x, 0.0)), x * c.attr_f("alpha", 0.01), x));
}

std::vector<RValue> prelu(Ctx& c) {
  const Tn& x = c.in(0);
  return one(detail::where(x.lt(scalar_of(x, 0.0)), x * c.in(1), x));
}

std::vector<RValue> thresholded_relu(Ctx& c) {
  const Tn& x = c.in(0);
  return one(detail::where(x.gt(c.attr_f("alpha", 1.0)), x, x.zeros_like()));
}

std::vector<RValue> hard_sigmoid(Ctx& c) {
  const Tn& x = c.in(0);
  Tn y = x * c.attr_f("alpha", 0.2) + c.attr_f("beta", 0.5);
  y = op(OpCode::Maximum, {y, scalar_of(x, 0.0)});
  return one(op(OpCode::Minimum, {y, scalar_of(x, 1.0)}));
}

std::vector<RValue> hard_swish(Ctx& c) {
  const Tn& x = c.in(0);
  Tn y = x / 6.0 + 0.5;
  y = op(OpCode::Minimum, {op(OpCode::Maximum, {y, scalar_of(x, 0.0)}), scalar_of(x, 1.0)});
  return one(x * y);
}

std::vector<RValue> softsign(Ctx& c) {
  const Tn& x = c.in(0);
  return one(x / (x.unary(OpCode::Abs) + 1.0));
}

std::vector<RValue> softplus(Ctx& c) {
  const Tn& x = c.in(0);
  // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|).
  Tn m = op(OpCode::Maximum, {x, scalar_of(x, 0.0)});
  return one(m + (-x.unary(OpCode::Abs)).exp().unary(OpCode::Log1p));
}

std::vector<RValue> shrink(Ctx& c) {
  const Tn& x = c.in(0);
  const double lambd = c.attr_f("lambd", 0.5), bias = c.attr_f("bias", 0.0);
  Tn lo = x.lt(scalar_of(x, -lambd)), hi = x.gt(lambd);
  return one(detail::where(lo, x + bias, detail::where(hi, x - bias, x.zeros_like())));
}

std::vector<RValue> gelu(Ctx& c) {
  const Tn& x = c.in(0);
  if (c.attr_s("approximate", "none") == "tanh") {
    Tn inner = (x + x * x * x * 0.044715) * 0.7978845608028654;
    return one(x * 0.5 * (inner.unary(OpCode::Tanh) + 1.0));
  }
  return one(x.unary(OpCode::Gelu));
}

std::vector<RValue> mish(Ctx& c) {
  const Tn& x = c.in(0);
  Tn m = op(OpCode::Maximum, {x, scalar_of(x, 0.0)});
  Tn sp = m + (-x.unary(OpCode::Abs)).exp().unary(OpCode::Log1p);
  return one(x * sp.unary(OpCode::Tanh));
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  r["Abs"] = unary<OpCode::Abs>;
  r["Acos"] = unary<OpCode::Acos>;
  r["Acosh"] = unary<OpCode::Acosh>;
  r["Asin"] = unary<OpCode::Asin>;
  r["Asinh"] = unary<OpCode::Asinh>;
  r["Atan"] = unary<OpCode::Atan>;
  r["Atanh"] = unary<OpCode::Atanh>;
  r["Ceil"] = unary<OpCode::Ceil>;
  r["Cos"] = unary<OpCode::Cos>;
  r["Cosh"] = unary<OpCode::Cosh>;
  r["Erf"] = unary<OpCode::Erf>;
  r["Exp"] = unary<OpCode::Exp>;
  r["Floor"] = unary<OpCode::Floor>;
  r["IsNaN"] = unary<OpCode::IsNan>;
  r["IsInf"] = is_inf;
  r["Log"] = unary<OpCode::Log>;
  r["Neg"] = unary<OpCode::Neg>;
  r["Not"] = unary<OpCode::LogicalNot>;
  r["BitwiseNot"] = unary<OpCode::BitwiseNot>;
  r["Reciprocal"] = reciprocal;
  r["Round"] = unary<OpCode::Round>;
  r["Sigmoid"] = unary<OpCode::Sigmoid>;
  r["Sign"] = unary<OpCode::Sign>;
  r["Sin"] = unary<OpCode::Sin>;
  r["Sinh"] = unary<OpCode::Sinh>;
  r["Sqrt"] = unary<OpCode::Sqrt>;
  r["Tan"] = unary<OpCode::Tan>;
  r["Tanh"] = unary<OpCode::Tanh>;
  r["Relu"] = unary<OpCode::Relu>;
  r["Identity"] = identity;

  r["Add"] = binary<OpCode::Add>;
  r["Sub"] = binary<OpCode::Sub>;
  r["Mul"] = binary<OpCode::Mul>;
  r["Div"] = binary<OpCode::Div>;
  r["Pow"] = pow;
  r["Mod"] = mod;
  r["And"] = binary<OpCode::LogicalAnd>;
  r["Or"] = binary<OpCode::LogicalOr>;
  r["Xor"] = binary<OpCode::LogicalXor>;
  r["BitwiseAnd"] = binary<OpCode::BitwiseAnd>;
  r["BitwiseOr"] = binary<OpCode::BitwiseOr>;
  r["BitwiseXor"] = binary<OpCode::BitwiseXor>;
  r["BitShift"] = bit_shift;
  r["Equal"] = binary<OpCode::Equal>;
  r["Greater"] = binary<OpCode::Greater>;
  r["GreaterOrEqual"] = binary<OpCode::GreaterEqual>;
  r["Less"] = binary<OpCode::Less>;
  r["LessOrEqual"] = binary<OpCode::LessEqual>;

  r["Max"] = variadic<OpCode::Maximum>;
  r["Min"] = variadic<OpCode::Minimum>;
  r["Sum"] = variadic<OpCode::Add>;
  r["Mean"] = mean;
  r["Where"] = where;
  r["Clip"] = clip;
  r["Cast"] = cast_op;
  r["CastLike"] = cast_like;

  r["Elu"] = elu;
  r["Celu"] = celu;
  r["Selu"] = selu;
  r["LeakyRelu"] = leaky_relu;
  r["PRelu"] = prelu;
  r["ThresholdedRelu"] = thresholded_relu;
  r["HardSigmoid"] = hard_sigmoid;
  r["HardSwish"] = hard_swish;
  r["Softsign"] = softsign;
  r["Softplus"] = softplus;
  r["Shrink"] = shrink;
  r["Gelu"] = gelu;
  r["Mish"] = mish;
}

}  // namespace ember::onnx::detail
