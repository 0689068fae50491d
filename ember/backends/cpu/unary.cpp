// Unary elementwise ops.
#include <algorithm>
#include <cmath>

#include "ember/backends/cpu/elementwise.h"
#include "ember/backends/cpu/kernels.h"
#include "ember/backends/cpu/vmath.h"

namespace ember::cpu {

namespace {

template <class T>
void float_unary(OpCode c, const CpuTensor& x, const CpuTensor& o) {
  using C = OpCode;
  using F = compute_t<T>;
  auto m = [&](auto f) { map1<T, T>(x, o, f); };
  switch (c) {
    case C::Neg:
      return m([](F v) { return -v; });
    case C::Abs:
      return m([](F v) { return std::abs(v); });
    case C::Sign:
      return m([](F v) { return std::isnan(v) ? v : F((v > 0) - (v < 0)); });
    case C::Exp:
      return m([](F v) { return std::exp(v); });
    case C::Expm1:
      return m([](F v) { return std::expm1(v); });
    case C::Log:
      return m([](F v) { return std::log(v); });
    case C::Log1p:
      return m([](F v) { return std::log1p(v); });
    case C::Log2:
      return m([](F v) { return std::log2(v); });
    case C::Sqrt:
      return m([](F v) { return std::sqrt(v); });
    case C::Rsqrt:
      return m([](F v) { return F(1) / std::sqrt(v); });
    case C::Recip:
      return m([](F v) { return F(1) / v; });
    case C::Sin:
      return m([](F v) { return std::sin(v); });
    case C::Cos:
      return m([](F v) { return std::cos(v); });
    case C::Tan:
      return m([](F v) { return std::tan(v); });
    case C::Asin:
      return m([](F v) { return std::asin(v); });
    case C::Acos:
      return m([](F v) { return std::acos(v); });
    case C::Atan:
      return m([](F v) { return std::atan(v); });
    case C::Sinh:
      return m([](F v) { return std::sinh(v); });
    case C::Cosh:
      return m([](F v) { return std::cosh(v); });
    case C::Tanh:
      return m([](F v) { return std::tanh(v); });
    case C::Asinh:
      return m([](F v) { return std::asinh(v); });
    case C::Acosh:
      return m([](F v) { return std::acosh(v); });
    case C::Atanh:
      return m([](F v) { return std::atanh(v); });
    case C::Erf:
      return m([](F v) { return std::erf(v); });
    case C::Sigmoid:
      return m([](F v) { return F(1) / (F(1) + std::exp(-v)); });
    case C::Floor:
      return m([](F v) { return std::floor(v); });
    case C::Ceil:
      return m([](F v) { return std::ceil(v); });
    case C::Round:
      return m([](F v) { return std::nearbyint(v); });
    case C::Trunc:
      return m([](F v) { return std::trunc(v); });
    case C::IsNan:
      return map1<T, bool>(x, o, [](F v) { return std::isnan(v); });
    case C::IsInf:
      return map1<T, bool>(x, o, [](F v) { return std::isinf(v); });
    default:
      throw Error("[" + std::string(name(c)) + "] not a float unary op");
  }
}

template <class T>
void int_unary(OpCode c, const CpuTensor& x, const CpuTensor& o) {
  auto m = [&](auto f) { map1<T, T>(x, o, f); };
  switch (c) {
    case OpCode::Neg:
      return m([](T v) { return wrap_sub(T(0), v); });
    case OpCode::Abs:
      return m([](T v) { return v < T(0) ? wrap_sub(T(0), v) : v; });
    case OpCode::Sign:
      return m([](T v) { return T((v > T(0)) - (v < T(0))); });
    case OpCode::BitwiseNot:
      return m([](T v) { return T(~v); });
    default:
      throw Error("[" + std::string(name(c)) + "] not an integer unary op");
  }
}

// Vectorized f32 kernels for the hot transcendental ops (vmath.h), or null.
using VectorFn = void (*)(const float*, float*, int64_t);
VectorFn vector_fn(OpCode c) {
  switch (c) {
    case OpCode::Exp:
      return vmath::exp_f32;
    case OpCode::Sigmoid:
      return vmath::sigmoid_f32;
    case OpCode::Tanh:
      return vmath::tanh_f32;
    case OpCode::Log:
      return vmath::log_f32;
    case OpCode::Log1p:
      return vmath::log1p_f32;
    case OpCode::Erf:
      return vmath::erf_f32;
    case OpCode::Sin:
      return vmath::sin_f32;
    case OpCode::Cos:
      return vmath::cos_f32;
    default:
      return nullptr;
  }
}

// Those ops on contiguous f32, or on contiguous f16 and bf16 a chunk at a time through float
// buffers (computed in f32 and rounded once, as the scalar path does; an f16 exp of 16M values
// had taken 26.7 ms on a Zen 4, libm's expf one value at a time).
template <class T>
bool unary_fast(OpCode c, const CpuTensor& x, const CpuTensor& o) {
  const VectorFn f = vector_fn(c);
  if (!f || !x.is_contiguous() || !o.is_contiguous()) return false;
  const T* xp = x.data<T>();
  T* yp = o.data<T>();
  parallel_for(x.meta.shape.numel(), kGrain, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>) {
      f(xp + b, yp + b, e - b);
    } else {
      alignas(64) float in[kHalfChunk], out[kHalfChunk];
      for (int64_t i0 = b; i0 < e; i0 += kHalfChunk) {
        const int64_t m = std::min(kHalfChunk, e - i0);
        widen_run(xp + i0, in, m);
        f(in, out, m);
        narrow_run(out, yp + i0, m);
      }
    }
  });
  return true;
}

}  // namespace

template <class T>
CpuTensor unary(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor o = output_for(in[0], out);
  if constexpr (std::is_same_v<T, float> || is_half_v<T>)
    if (unary_fast<T>(op.code, in[0], o)) return o;
  if constexpr (std::is_same_v<T, bool>)
    map1<bool, bool>(in[0], o, [](bool v) { return !v; });
  else if constexpr (is_half_v<T> || std::is_floating_point_v<T>)
    float_unary<T>(op.code, in[0], o);
  else
    int_unary<T>(op.code, in[0], o);
  return o;
}

EMBER_CPU_DEFINE_KERNELS(Unary, unary)

}  // namespace ember::cpu
