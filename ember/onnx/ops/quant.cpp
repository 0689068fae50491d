// ONNX quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the integer
// and quantized-linear matmul and conv. Integer products are computed exactly in f64 (every
// i8/u8 product sum of a model fits its 53 bits) and rounded half to even, as ONNX says.
#include <limits>

#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

std::vector<RValue> conv_op(Ctx c);  // nn.cpp

namespace {

std::vector<RValue> one(Tn t) { return {RValue::of(std::move(t))}; }

/// A per-tensor scalar or a per-axis 1-d vector shaped to broadcast against rank-r data.
Tn along(const Ctx& c, const Tn& v, int64_t rank) {
  if (v.rank() == 0 || v.shape().numel() == 1) return reshape(v, {});
  const int64_t axis = norm_axis(c, c.attr_i("axis", 1), rank);
  Dims d(static_cast<size_t>(rank), 1);
  d[static_cast<size_t>(axis)] = v.shape().numel();
  return reshape(v, d);
}

Tn saturate(const Tn& v, DType t) {
  double lo = 0, hi = 255;
  if (t == DType::I8)
    lo = -128, hi = 127;
  else if (t == DType::I32)
    lo = -2147483648.0, hi = 2147483647.0;
  else if (t == DType::I16)
    lo = -32768, hi = 32767;
  return op(OpCode::Minimum, {op(OpCode::Maximum, {v, scalar_of(v, lo)}), scalar_of(v, hi)})
      .cast(t);
}

/// round(x / scale) + zero_point, saturated to the zero point's type.
Tn quantize(const Tn& x64, const Tn& scale64, const std::optional<Tn>& zp, DType t) {
  Tn q = (x64 / scale64).unary(OpCode::Round);
  if (zp) q = q + zp->cast(DType::F64);
  return saturate(q, t);
}

std::vector<RValue> quantize_linear(Ctx& c) {
  const Tn& x = c.in(0);
  Tn scale = along(c, c.in(1), x.rank()).cast(DType::F64);
  std::optional<Tn> zp;
  if (c.has(2)) zp = along(c, c.in(2), x.rank());
  const DType t = zp ? zp->dtype() : DType::U8;
  return one(quantize(x.cast(DType::F64), scale, zp, t));
}

std::vector<RValue> dequantize_linear(Ctx& c) {
  const Tn& x = c.in(0);
  Tn scale = along(c, c.in(1), x.rank());
  Tn v = x.cast(DType::F64);
  if (c.has(2)) v = v - along(c, c.in(2), x.rank()).cast(DType::F64);
  return one((v * scale.cast(DType::F64)).cast(scale.dtype()));
}

std::vector<RValue> dynamic_quantize_linear(Ctx& c) {
  // In f32 throughout, as ONNX computes it (x / scale rounded half to even).
  const Tn x = c.in(0).cast(DType::F32);
  Tn lo = op(OpCode::Minimum, {reduce(OpCode::Min, x, {}, false), scalar_of(x, 0.0)});
  Tn hi = op(OpCode::Maximum, {reduce(OpCode::Max, x, {}, false), scalar_of(x, 0.0)});
  Tn scale = (hi - lo) / 255.0;
  Tn zp = saturate((scalar_of(x, 0.0) - lo / scale).unary(OpCode::Round), DType::U8);
  Tn y = saturate((x / scale).unary(OpCode::Round) + zp.cast(DType::F32), DType::U8);
  return {RValue::of(y), RValue::of(scale.cast(c.in(0).dtype())), RValue::of(zp)};
}

Tn centered(const Ctx& c, size_t k, size_t zp_k, int64_t axis_rank_hint = -1) {
  Tn v = c.in(k).cast(DType::F64);
  if (c.has(zp_k)) {
    Tn z = c.in(zp_k).cast(DType::F64);
    if (z.shape().numel() > 1 && axis_rank_hint >= 0) {
      Dims d(static_cast<size_t>(v.rank()), 1);
      d[static_cast<size_t>(axis_rank_hint)] = z.shape().numel();
      z = reshape(z, d);
    } else if (z.shape().numel() == 1) {
      z = reshape(z, {});
    }
    v = v - z;
  }
  return v;
}

Tn matmul_nd(const Tn& a, const Tn& b) {
  Tn x = a, y = b;
  const bool va = x.rank() == 1, vb = y.rank() == 1;
  if (va) x = reshape(x, {1, x.shape()[0]});
  if (vb) y = reshape(y, {y.shape()[0], 1});
  Tn r = x.matmul(y);
  Dims d = dims_of(r);
  if (va) d.erase(d.size() - 2);
  if (vb) d.erase(d.size() - 1);
  return reshape(r, d);
}

std::vector<RValue> matmul_integer(Ctx& c) {
  // a's zero point is per row (axis rank-2) when 1-d; b's per column (last axis).
  Tn a = centered(c, 0, 2, c.in(0).rank() - 2);
  Tn b = centered(c, 1, 3, c.in(1).rank() - 1);
  return one(matmul_nd(a, b).cast(DType::I32));
}

std::vector<RValue> conv_integer(Ctx& c) {
  Tn x = centered(c, 0, 2);
  Tn w = centered(c, 1, 3, 0);
  auto out = conv_op(c.with_inputs({RValue::of(x), RValue::of(w)}));
  out[0].t = out[0].t.unary(OpCode::Round).cast(DType::I32);
  return out;
}

/// Dequantized input k (scale at k + 1, zero point at k + 2), per-axis along `axis`.
Tn dequant(const Ctx& c, size_t k, int64_t axis) {
  Tn v = c.in(k).cast(DType::F64);
  auto fit = [&](Tn s) {
    if (s.shape().numel() == 1) return reshape(s, {});
    Dims d(static_cast<size_t>(v.rank()), 1);
    d[static_cast<size_t>(axis)] = s.shape().numel();
    return reshape(s, d);
  };
  if (c.has(k + 2)) v = v - fit(c.in(k + 2).cast(DType::F64));
  return v * fit(c.in(k + 1).cast(DType::F64));
}

std::vector<RValue> qlinear_matmul(Ctx& c) {
  Tn a = dequant(c, 0, c.in(0).rank() - 2);
  Tn b = dequant(c, 3, c.in(3).rank() - 1);
  Tn y = matmul_nd(a, b);
  std::optional<Tn> zp;
  if (c.has(7)) zp = reshape(c.in(7), {});
  const DType t = zp ? zp->dtype() : DType::U8;
  return one(quantize(y, reshape(c.in(6).cast(DType::F64), {}), zp, t));
}

std::vector<RValue> qlinear_conv(Ctx& c) {
  Tn x = dequant(c, 0, 1);
  Tn w = dequant(c, 3, 0);
  std::vector<RValue> args{RValue::of(x), RValue::of(w)};
  if (c.has(8)) {
    Tn s = reshape(c.in(1).cast(DType::F64), {}) * c.in(4).cast(DType::F64);
    args.push_back(RValue::of(c.in(8).cast(DType::F64) * reshape(s, {s.shape().numel()})));
  }
  Tn y = conv_op(c.with_inputs(std::move(args)))[0].t;
  std::optional<Tn> zp;
  if (c.has(7)) zp = reshape(c.in(7), {});
  const DType t = zp ? zp->dtype() : DType::U8;
  return one(quantize(y, reshape(c.in(6).cast(DType::F64), {}), zp, t));
}

}  // namespace

void register_quant_ops(OpRegistry& r) {
  r["QuantizeLinear"] = quantize_linear;
  r["DequantizeLinear"] = dequantize_linear;
  r["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  r["MatMulInteger"] = matmul_integer;
  r["ConvInteger"] = conv_integer;
  r["QLinearMatMul"] = qlinear_matmul;
  r["QLinearConv"] = qlinear_conv;
}

}  // namespace ember::onnx::detail
