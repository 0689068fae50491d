// ONNX quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the integer
// and quantized-linear matmul and conv. MatMulInteger and QLinearMatMul run as int_matmul,
// ConvInteger and QLinearConv as int_conv (i32 sums of the 8-bit operands), the zero points
// through the operands' sums; the quantized-linear outputs are rounded half to even, as ONNX says.
#include <algorithm>
#include <limits>
#include <optional>

#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

namespace {

/// A per-tensor scalar or a per-axis 1-d vector shaped to broadcast against rank-r data.
template <Backend B>
Tn<B> along(const Ctx<B>& c, const Tn<B>& v, int64_t rank) {
  if (v.rank() == 0 || v.shape().numel() == 1) return reshape(v, {});
  const int64_t axis = norm_axis(c, c.attr_i("axis", 1), rank);
  Dims d(static_cast<size_t>(rank), 1);
  d[static_cast<size_t>(axis)] = v.shape().numel();
  return reshape(v, d);
}

template <Backend B>
Tn<B> saturate(const Tn<B>& v, DType t) {
  double lo = 0, hi = 255;
  if (t == DType::I8)
    lo = -128, hi = 127;
  else if (t == DType::I32)
    lo = -2147483648.0, hi = 2147483647.0;
  else if (t == DType::I16)
    lo = -32768, hi = 32767;
  return op<B>(OpCode::Minimum, {op<B>(OpCode::Maximum, {v, scalar_of(v, lo)}), scalar_of(v, hi)})
      .cast(t);
}

/// round(x / scale) + zero_point, saturated to the zero point's type.
template <Backend B>
Tn<B> quantize(const Tn<B>& x64, const Tn<B>& scale64, const std::optional<Tn<B>>& zp, DType t) {
  Tn<B> q = (x64 / scale64).unary(OpCode::Round);
  if (zp) q = q + zp->cast(DType::F64);
  return saturate(q, t);
}

template <Backend B>
std::vector<RValue<B>> quantize_linear(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  Tn<B> scale = along(c, c.in(1), x.rank()).cast(DType::F64);
  std::optional<Tn<B>> zp;
  if (c.has(2)) zp = along(c, c.in(2), x.rank());
  const DType t = zp ? zp->dtype() : DType::U8;
  return one(quantize(x.cast(DType::F64), scale, zp, t));
}

template <Backend B>
std::vector<RValue<B>> dequantize_linear(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  Tn<B> scale = along(c, c.in(1), x.rank());
  Tn<B> v = x.cast(DType::F64);
  if (c.has(2)) v = v - along(c, c.in(2), x.rank()).cast(DType::F64);
  return one((v * scale.cast(DType::F64)).cast(scale.dtype()));
}

template <Backend B>
std::vector<RValue<B>> dynamic_quantize_linear(Ctx<B>& c) {
  // In f32 throughout, as ONNX computes it (x / scale rounded half to even).
  const Tn<B> x = c.in(0).cast(DType::F32);
  Tn<B> lo = op<B>(OpCode::Minimum, {reduce(OpCode::Min, x, {}, false), scalar_of(x, 0.0)});
  Tn<B> hi = op<B>(OpCode::Maximum, {reduce(OpCode::Max, x, {}, false), scalar_of(x, 0.0)});
  Tn<B> scale = (hi - lo) / 255.0;
  Tn<B> zp = saturate((scalar_of(x, 0.0) - lo / scale).unary(OpCode::Round), DType::U8);
  Tn<B> y = saturate((x / scale).unary(OpCode::Round) + zp.cast(DType::F32), DType::U8);
  return {RValue<B>::of(y), RValue<B>::of(scale.cast(c.in(0).dtype())), RValue<B>::of(zp)};
}

// Input k as type t, shaped to broadcast against a rank-r operand or result: a scalar (one
// value, or axis < 0), else its values laid along `axis` (a zero point or scale per row or column).
template <Backend B>
Tn<B> along_axis(const Ctx<B>& c, size_t k, DType t, int64_t rank, int64_t axis) {
  Tn<B> v = c.in(k).cast(t);
  if (v.shape().numel() == 1 || axis < 0) return reshape(v, {});
  Dims d(static_cast<size_t>(rank), 1);
  d[static_cast<size_t>(axis)] = v.shape().numel();
  return reshape(v, d);
}

// sum_k (a - za)(b - zb) = a b - za sum_k b - zb sum_k a + k za zb, all in i32 (wrapping as ONNX's
// int32 sums do), for the 8-bit inputs at ia and ib and their zero points at za and zb (per row
// of a and column of b when 1-d, per tensor when one value; none where not given): the products
// run as int_matmul on the 8-bit operands themselves (AVX-512 VNNI's byte dot products on a CPU
// that has them), the zero points only through the operands' row and column sums. 1-d operands
// as matmul takes them.
template <Backend B>
Tn<B> integer_matmul(const Ctx<B>& c, size_t ia, size_t ib, size_t za, size_t zb,
                     std::optional<size_t> b_sums = std::nullopt) {
  Tn<B> a = c.in(ia), b = c.in(ib);
  const bool va = a.rank() == 1, vb = b.rank() == 1;
  if (va) a = reshape(a, {1, a.shape()[0]});
  if (vb) b = reshape(b, {b.shape()[0], 1});
  const int64_t ra = a.rank(), rb = b.rank(), k = a.shape()[static_cast<size_t>(ra - 1)];
  Tn<B> y = op<B>(OpCode::IntMatmul, {a, b});
  const bool has_za = c.has(za), has_zb = c.has(zb);
  std::optional<Tn<B>> zav;
  if (has_za) {
    const Tn<B>& z = zav.emplace(along_axis(c, za, DType::I32, ra, ra - 2));
    // b's column sums, given (a constant weight's, made once: passes.h) or taken here
    const Tn<B> sums = b_sums && c.has(*b_sums)
                           ? reshape(c.in(*b_sums), {1, c.in(*b_sums).shape()[0]})
                           : reduce(OpCode::Sum, b.cast(DType::I32), {rb - 2}, true);
    y = y - z * sums;
  }
  if (has_zb) {
    const Tn<B> z = along_axis(c, zb, DType::I32, rb, rb - 1);
    y = y - reduce(OpCode::Sum, a.cast(DType::I32), {ra - 1}, true) * z;
    if (zav) y = y + *zav * z * scalar_of(z, double(k));
  }
  Dims d = dims_of(y);
  if (va) d.erase(d.size() - 2);
  if (vb) d.erase(d.size() - 1);
  return reshape(y, d);
}

template <Backend B>
std::vector<RValue<B>> matmul_integer(Ctx<B>& c) {
  return one(integer_matmul(c, 0, 1, 2, 3));
}

// ember.MatMulInteger (passes.h): MatMulInteger with b's column sums as input 4.
template <Backend B>
std::vector<RValue<B>> matmul_integer_with_sums(Ctx<B>& c) {
  return one(integer_matmul(c, 0, 1, 2, 3, size_t{4}));
}

// The sums over each window of (x - zx)(w - zw), in i32 (wrapping as ONNX's int32 sums do), for
// the 8-bit x and w at ix and iw and their zero points at izx (one value) and izw (one value, or
// one per output channel; none where not given). ONNX pads the centred input with zeros, so x is
// padded with its zero point; the products run as int_conv on the 8-bit operands themselves
// (AVX-512 VNNI's byte dot products on a CPU that has them), the zero points through sums: for
// output channel o over K taps, sum x w - zw_o sum x - zx sum w_o + K zx zw_o.
template <Backend B>
Tn<B> integer_conv(const Ctx<B>& c, size_t ix, size_t iw, size_t izx, size_t izw) {
  const Tn<B>& w = c.in(iw);
  int64_t zx = 0;
  if (c.has(izx)) {
    const std::vector<int64_t> v = host_ints(c.in(izx));
    if (v.size() != 1) c.fail("the input's zero point must be one value");
    zx = v[0];
  }
  auto [x, a] = conv_window(c, c.in(ix), w, double(zx));
  Tn<B> y = op<B>(OpCode::IntConv, a, {x, w});
  const int64_t co = w.shape()[0], taps = w.shape().numel() / std::max<int64_t>(co, 1);
  Dims per(static_cast<size_t>(y.rank()), 1);  // [1, C_out, 1, ...]
  per[1] = co;
  if (zx != 0) {
    Dims axes;
    for (int64_t i = 1; i < w.rank(); ++i) axes.push_back(i);
    y = y - reshape(reduce(OpCode::Sum, w.cast(DType::I32), axes, false), per) *
                scalar_of(y, double(zx));
  }
  if (!c.has(izw)) return y;
  const std::vector<int64_t> zw = host_ints(c.in(izw));
  if (zw.size() != 1 && static_cast<int64_t>(zw.size()) != co)
    c.fail("the weight's zero point has " + std::to_string(zw.size()) + " values for " +
           std::to_string(co) + " output channels");
  if (std::all_of(zw.begin(), zw.end(), [](int64_t v) { return v == 0; })) return y;
  // each group's window sums of x (a weight of ones, one output channel a group), for each
  // output channel of the group
  const int64_t groups = a.window.groups;
  Dims ones = dims_of(w);
  ones[0] = groups;
  Tn<B> sums = op<B>(OpCode::IntConv, a, {x, full<B>(ones, 1.0, DType::U8, x.device())});
  Dims g = dims_of(sums), e = g;
  g.insert(2, 1);
  e.insert(2, co / groups);
  sums = reshape(expand(reshape(sums, g), e), dims_of(y));
  const Tn<B> z = reshape(c.in(izw).cast(DType::I32), zw.size() == 1 ? Dims{} : per);
  y = y - z * sums;
  if (zx != 0) y = y + z * scalar_of(y, double(taps * zx));
  return y;
}

template <Backend B>
std::vector<RValue<B>> conv_integer(Ctx<B>& c) {
  return one(integer_conv(c, 0, 1, 2, 3));
}

// As ONNX's reference computes it: the i32 sums of (a - za)(b - zb) (integer_matmul), times
// a_scale * b_scale / y_scale (in f32, per row of a and column of b), rounded half to even in
// f64, plus y's zero point, saturated.
template <Backend B>
std::vector<RValue<B>> qlinear_matmul(Ctx<B>& c) {
  const Tn<B> acc = integer_matmul(c, 0, 3, 2, 5);
  const int64_t r = acc.rank();
  const Tn<B> s = along_axis(c, 1, DType::F32, r, r - 2) * along_axis(c, 4, DType::F32, r, r - 1) /
                  reshape(c.in(6).cast(DType::F32), {});
  Tn<B> y = (acc.cast(DType::F64) * s.cast(DType::F64)).unary(OpCode::Round);
  const DType t = c.has(7) ? c.in(7).dtype() : DType::U8;
  if (c.has(7)) y = y + reshape(c.in(7), {}).cast(DType::F64);
  return one(saturate(y, t));
}

// As ONNX's reference computes it: the i32 sums of (x - zx)(w - zw) (integer_conv) plus the i32
// bias, times x_scale * w_scale / y_scale (in f32, per output channel where w_scale is), rounded
// half to even in f64, plus y's zero point, saturated to its type (x's without one).
template <Backend B>
std::vector<RValue<B>> qlinear_conv(Ctx<B>& c) {
  Tn<B> acc = integer_conv(c, 0, 3, 2, 5);
  const int64_t r = acc.rank();
  if (c.has(8)) acc = acc + along_axis(c, 8, DType::I32, r, 1);
  const Tn<B> s = along_axis(c, 1, DType::F32, r, -1) * along_axis(c, 4, DType::F32, r, 1) /
                  reshape(c.in(6).cast(DType::F32), {});
  Tn<B> y = (acc.cast(DType::F64) * s.cast(DType::F64)).unary(OpCode::Round);
  const DType t = c.has(7) ? c.in(7).dtype() : c.in(0).dtype();
  if (c.has(7)) y = y + reshape(c.in(7), {}).cast(DType::F64);
  return one(saturate(y, t));
}

}  // namespace

template <Backend B>
void register_quant_ops(OpRegistry<B>& r) {
  r["QuantizeLinear"] = quantize_linear<B>;
  r["DequantizeLinear"] = dequantize_linear<B>;
  r["DynamicQuantizeLinear"] = dynamic_quantize_linear<B>;
  r["MatMulInteger"] = matmul_integer<B>;
  r["ember.MatMulInteger"] = matmul_integer_with_sums<B>;
  r["ConvInteger"] = conv_integer<B>;
  r["QLinearMatMul"] = qlinear_matmul<B>;
  r["QLinearConv"] = qlinear_conv<B>;
}

template void register_quant_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_quant_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
