#include "ember/kernel/kernels/elementwise.h"

#include <cmath>
#include <limits>
#include <vector>

#include "ember/core/error.h"

namespace ember::kernel {

namespace {

// Unary ops, and the composites that are one expression of one input (Gelu, Silu).
bool unary_op(OpCode op) {
  return info(op).family == OpFamily::Unary || op == OpCode::Gelu || op == OpCode::Silu;
}

bool supported_unary(OpCode op, DType t) {
  switch (op) {
    case OpCode::Neg:
    case OpCode::Abs:
    case OpCode::Sign:
      return is_float(t) || is_int(t);
    case OpCode::Exp:
    case OpCode::Expm1:
    case OpCode::Log:
    case OpCode::Log1p:
    case OpCode::Log2:
    case OpCode::Sqrt:
    case OpCode::Rsqrt:
    case OpCode::Recip:
    case OpCode::Sin:
    case OpCode::Cos:
    case OpCode::Tan:
    case OpCode::Asin:
    case OpCode::Acos:
    case OpCode::Atan:
    case OpCode::Sinh:
    case OpCode::Cosh:
    case OpCode::Tanh:
    case OpCode::Asinh:
    case OpCode::Acosh:
    case OpCode::Atanh:
    case OpCode::Erf:
    case OpCode::Sigmoid:
    case OpCode::Floor:
    case OpCode::Ceil:
    case OpCode::Round:
    case OpCode::Trunc:
    case OpCode::IsNan:
    case OpCode::IsInf:
    case OpCode::Gelu:
    case OpCode::Silu:
      return is_float(t);
    case OpCode::LogicalNot:
      return is_bool(t);
    case OpCode::BitwiseNot:
      return is_int(t);
    default:
      return false;
  }
}

bool supported_binary(OpCode op, DType t) {
  switch (op) {
    case OpCode::Add:
    case OpCode::Sub:
    case OpCode::Mul:
    case OpCode::Div:
    case OpCode::Remainder:
    case OpCode::Maximum:
    case OpCode::Minimum:
    case OpCode::Less:
    case OpCode::LessEqual:
    case OpCode::Greater:
    case OpCode::GreaterEqual:
      return is_float(t) || is_int(t);
    case OpCode::Equal:
    case OpCode::NotEqual:
      return true;
    case OpCode::Pow:
      return is_float(t) || is_int(t);
    case OpCode::Atan2:
      return is_float(t);
    case OpCode::BitwiseAnd:
    case OpCode::BitwiseOr:
    case OpCode::BitwiseXor:
    case OpCode::ShiftLeft:
    case OpCode::ShiftRight:
      return is_int(t);
    case OpCode::LogicalAnd:
    case OpCode::LogicalOr:
    case OpCode::LogicalXor:
      return is_bool(t);
    default:
      return false;
  }
}

// Remainder with the sign of the divisor (torch.remainder) from the truncated one.
Val remainder(KernelBuilder& kb, const Val& a, const Val& b) {
  Val r = a % b;
  Val zero = kb.lit(r.type(), 0);
  Val fix = (r != zero) && ((r < zero) != (b < zero));
  return kb.select(fix, r + b, r);
}

// Integer pow as the CPU backend: square and multiply over the exponent's bits (unrolled, so
// vectors work), products wrapping; a negative exponent gives 1 for base 1, +-1 for base -1
// and 0 otherwise.
Val int_pow(KernelBuilder& kb, const Val& base, const Val& e) {
  Type t = base.type();
  Val zero = kb.lit(t, 0), one = kb.lit(t, 1);
  Val r = one, b = base, rest = e;
  int bits = byte_size(t.scalar) * 8 - (is_signed(t.scalar) ? 1 : 0);
  for (int i = 0; i < bits; ++i) {
    r = kb.select((rest & one) != zero, r * b, r);
    if (i + 1 < bits) {
      b = b * b;
      rest = rest >> one;
    }
  }
  if (!is_signed(t.scalar)) return r;
  Val odd = (e & one) != zero;
  Val minus = kb.select(odd, kb.lit(t, -1), one);
  Val neg = kb.select(base == one, one, kb.select(base == kb.lit(t, -1), minus, zero));
  return kb.select(e < zero, neg, r);
}

}  // namespace

bool elementwise_supported(OpCode op, DType t) {
  return unary_op(op) ? supported_unary(op, t) : supported_binary(op, t);
}

DType elementwise_out_dtype(OpCode op, DType t) {
  return info(op).result == ResultType::ToBool ? DType::Bool : t;
}

int vector_width(DType t) { return std::min(8, 16 / size_of(t)); }

Val apply_elementwise(KernelBuilder& kb, OpCode op, std::span<const Val> in) {
  Type t = in[0].type();
  bool half = is_half(t.scalar);
  Type ct = half ? Type::vec(ScalarType::F32, t.width) : t;  // compute type
  auto up = [&](const Val& v) { return half ? kb.cast(v, ScalarType::F32) : v; };
  auto down = [&](const Val& v) {
    return half && v.type().scalar == ScalarType::F32 ? kb.cast(v, t.scalar) : v;
  };
  Val x = up(in[0]);
  Val y = in.size() > 1 ? up(in[1]) : Val();
  auto c = [&](double v) { return kb.lit(ct, v); };
  switch (op) {
    case OpCode::Neg:
      return down(-x);
    case OpCode::Abs:
      return down(kb.abs(x));
    case OpCode::Sign:
      if (!is_signed(ct.scalar)) return kb.select(x > c(0), c(1), c(0));
      return down(kb.select(x > c(0), c(1), kb.select(x < c(0), c(-1), x)));
    case OpCode::Exp:
      return down(kb.exp(x));
    case OpCode::Expm1:
      return down(kb.expm1(x));
    case OpCode::Log1p:
      return down(kb.log1p(x));
    case OpCode::Asin:
      return down(kb.asin(x));
    case OpCode::Acos:
      return down(kb.acos(x));
    case OpCode::Atan:
      return down(kb.atan(x));
    case OpCode::Sinh:
      return down(kb.sinh(x));
    case OpCode::Cosh:
      return down(kb.cosh(x));
    case OpCode::Asinh:
      return down(kb.asinh(x));
    case OpCode::Acosh:
      return down(kb.acosh(x));
    case OpCode::Atanh:
      return down(kb.atanh(x));
    case OpCode::Log:
      return down(kb.log(x));
    case OpCode::Log2:
      return down(kb.log2(x));
    case OpCode::Sqrt:
      return down(kb.sqrt(x));
    case OpCode::Rsqrt:
      return down(kb.rsqrt(x));
    case OpCode::Recip:
      return down(c(1) / x);
    case OpCode::Sin:
      return down(kb.sin(x));
    case OpCode::Cos:
      return down(kb.cos(x));
    case OpCode::Tan:
      return down(kb.tan(x));
    case OpCode::Tanh:
      return down(kb.tanh(x));
    case OpCode::Erf:
      return down(kb.erf(x));
    case OpCode::Sigmoid:
      return down(c(1) / (c(1) + kb.exp(-x)));
    case OpCode::Gelu:  // the decomposition's expression (ops/decompose.h), in one pass
      return down(x * c(0.5) * (kb.erf(x * c(M_SQRT1_2)) + c(1)));
    case OpCode::Silu:
      return down(x * (c(1) / (c(1) + kb.exp(-x))));
    case OpCode::Floor:
      return down(kb.floor(x));
    case OpCode::Ceil:
      return down(kb.ceil(x));
    case OpCode::Round:
      return down(kb.round(x));
    case OpCode::Trunc:
      return down(kb.trunc(x));
    case OpCode::IsNan:
      return kb.is_nan(x);
    case OpCode::IsInf:
      return kb.is_inf(x);
    case OpCode::LogicalNot:
    case OpCode::BitwiseNot:
      return !x;
    case OpCode::Add:
      return down(x + y);
    case OpCode::Sub:
      return down(x - y);
    case OpCode::Mul:
      return down(x * y);
    case OpCode::Div:
      return down(x / y);
    case OpCode::Remainder:
      return down(remainder(kb, x, y));
    case OpCode::Maximum:
      return down(kb.max(x, y));
    case OpCode::Minimum:
      return down(kb.min(x, y));
    case OpCode::Pow:
      if (is_int(t)) return int_pow(kb, x, y);
      return down(kb.pow(x, y));
    case OpCode::Atan2:
      return down(kb.atan2(x, y));
    case OpCode::BitwiseAnd:
    case OpCode::LogicalAnd:
      return x & y;
    case OpCode::BitwiseOr:
    case OpCode::LogicalOr:
      return x | y;
    case OpCode::BitwiseXor:
    case OpCode::LogicalXor:
      return x ^ y;
    case OpCode::ShiftLeft:
      return x << y;
    case OpCode::ShiftRight:
      return x >> y;
    case OpCode::Equal:
      return x == y;
    case OpCode::NotEqual:
      return x != y;
    case OpCode::Less:
      return x < y;
    case OpCode::LessEqual:
      return x <= y;
    case OpCode::Greater:
      return x > y;
    case OpCode::GreaterEqual:
      return x >= y;
    default:
      throw ValueError("[" + std::string(name(op)) + "] no elementwise kernel expression");
  }
}

Kernel elementwise_kernel(const ElementwiseSpec& s) {
  if (!elementwise_supported(s.op, s.dtype))
    throw ValueError("[" + std::string(name(s.op)) + "] no elementwise kernel for " +
                     std::string(name(s.dtype)));
  if (s.rank < 1 || s.rank > 8)
    throw ValueError("[" + std::string(name(s.op)) + "] rank must be 1 to 8");
  bool unary = unary_op(s.op);
  int arity = unary ? 1 : 2;
  ScalarType in_t = scalar_of(s.dtype), out_t = scalar_of(elementwise_out_dtype(s.op, s.dtype));
  ScalarType ix = s.wide_index ? ScalarType::I64 : ScalarType::I32;
  int w = s.contiguous ? vector_width(s.dtype) : 1;
  std::string kname =
      std::string(name(s.op)) + "_" + std::string(name(s.dtype)) +
      (s.contiguous ? "_dense" : "_r" + std::to_string(s.rank)) +
      (s.contiguous && s.scalar_inputs ? "_s" + std::to_string(s.scalar_inputs) : "") +
      (s.wide_index ? "_i64" : "");
  KernelBuilder kb(kname, {s.workgroup, 1, 1});
  const char* in_names[2] = {unary ? "x" : "a", "b"};
  std::vector<Mem> in;
  auto one_element = [&](int j) { return s.contiguous && (s.scalar_inputs >> j & 1); };
  for (int j = 0; j < arity; ++j)
    in.push_back(kb.buffer(in_names[j], in_t, Access::Read, one_element(j) ? 1 : w));
  Mem out = kb.buffer("out", out_t, Access::Write, w);
  Val n = kb.scalar("n", ix);
  Val first = kb.cast(kb.global_id(0), ix);
  Val stride = kb.cast(kb.num_groups(0), ix) * kb.cast(kb.local_size(0), ix);

  if (s.contiguous) {
    // One-element inputs are read once and repeated across the lanes.
    std::vector<Val> single(arity), lanes(arity);
    for (int j = 0; j < arity; ++j)
      if (one_element(j)) {
        single[j] = kb.load(in[j], kb.lit(ix, 0));
        std::vector<Val> copies(w, single[j]);
        lanes[j] = w > 1 ? kb.vec(copies) : single[j];
      }
    Val chunks = (n + (w - 1)) / w;
    kb.for_(first, chunks, stride, [&](Val chunk) {
      Val base = chunk * w;
      kb.if_else(
          base + w <= n,
          [&] {
            std::vector<Val> v;
            for (int j = 0; j < arity; ++j)
              v.push_back(one_element(j) ? lanes[j] : kb.load(in[j], base, w));
            kb.store(out, base, apply_elementwise(kb, s.op, v));
          },
          [&] {
            kb.for_(base, n, kb.lit(ix, 1), [&](Val i) {
              std::vector<Val> v;
              for (int j = 0; j < arity; ++j)
                v.push_back(one_element(j) ? single[j] : kb.load(in[j], i));
              kb.store(out, i, apply_elementwise(kb, s.op, v));
            });
          });
    });
    return kb.finish();
  }

  std::vector<Val> shape, strides[2];
  for (int d = 0; d < s.rank; ++d) shape.push_back(kb.scalar("shape" + std::to_string(d), ix));
  for (int j = 0; j < arity; ++j)
    for (int d = 0; d < s.rank; ++d)
      strides[j].push_back(kb.scalar(std::string(in_names[j]) + "_stride" + std::to_string(d), ix));
  kb.for_(first, n, stride, [&](Val i) {
    // Row-major coordinates of output element i, then each input's offset.
    Val rest = i;
    std::vector<Val> off(arity);
    for (int d = s.rank - 1; d >= 0; --d) {
      Val coord = d == 0 ? rest : rest % shape[d];
      if (d > 0) rest = rest / shape[d];
      for (int j = 0; j < arity; ++j) {
        Val term = coord * strides[j][d];
        off[j] = off[j].valid() ? off[j] + term : term;
      }
    }
    std::vector<Val> v;
    for (int j = 0; j < arity; ++j) v.push_back(kb.load(in[j], off[j]));
    kb.store(out, i, apply_elementwise(kb, s.op, v));
  });
  return kb.finish();
}

}  // namespace ember::kernel
