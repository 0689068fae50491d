// Internal: elementwise loops over strided operands (output contiguous), with contiguous
// fast paths the compiler vectorizes, and integer arithmetic that wraps like PyTorch's
// instead of overflowing (which C++ leaves undefined).
#pragma once
#include <type_traits>

#include "ember/backends/cpu/strided.h"
#include "ember/core/cast.h"

namespace ember::cpu {

template <class T>
using wide_t = std::make_unsigned_t<std::conditional_t<sizeof(T) < 4, int32_t, T>>;

template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(static_cast<wide_t<T>>(a) + static_cast<wide_t<T>>(b));
  else
    return a + b;
}
template <class T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(static_cast<wide_t<T>>(a) - static_cast<wide_t<T>>(b));
  else
    return a - b;
}
template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(static_cast<wide_t<T>>(a) * static_cast<wide_t<T>>(b));
  else
    return a * b;
}

/// out[i] = f(x[i]) with x of type In, out of type Out; f works on compute_t<In>.
template <class In, class Out, class F>
void map1(const CpuTensor& x, const CpuTensor& out, F f) {
  auto L = make_loop<2>(out.meta.shape, {&out.strides, &x.strides}, {out.offset, x.offset});
  Out* d = reinterpret_cast<Out*>(out.storage.get());
  const In* s = reinterpret_cast<const In*>(x.storage.get());
  int64_t sd = L.inner(0), ss = L.inner(1);
  run_loop(L, [&](const std::array<int64_t, 2>& o, int64_t n) {
    Out* dp = d + o[0];
    const In* sp = s + o[1];
    if (sd == 1 && ss == 1) {
      for (int64_t i = 0; i < n; ++i)
        dp[i] = static_cast<Out>(f(static_cast<compute_t<In>>(sp[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        dp[i * sd] = static_cast<Out>(f(static_cast<compute_t<In>>(sp[i * ss])));
    }
  });
}

/// out[i] = f(a[i], b[i]) with broadcasting; a and b of type In.
template <class In, class Out, class F>
void map2(const CpuTensor& a, const CpuTensor& b, const CpuTensor& out, F f) {
  const Shape& s = out.meta.shape;
  Dims sa = broadcast_strides(a, s), sb = broadcast_strides(b, s);
  auto L = make_loop<3>(s, {&out.strides, &sa, &sb}, {out.offset, a.offset, b.offset});
  Out* d = reinterpret_cast<Out*>(out.storage.get());
  const In* pa = reinterpret_cast<const In*>(a.storage.get());
  const In* pb = reinterpret_cast<const In*>(b.storage.get());
  int64_t s0 = L.inner(0), s1 = L.inner(1), s2 = L.inner(2);
  using C = compute_t<In>;
  run_loop(L, [&](const std::array<int64_t, 3>& o, int64_t n) {
    Out* dp = d + o[0];
    const In* ap = pa + o[1];
    const In* bp = pb + o[2];
    if (s0 == 1 && s1 == 1 && s2 == 1) {
      for (int64_t i = 0; i < n; ++i)
        dp[i] = static_cast<Out>(f(static_cast<C>(ap[i]), static_cast<C>(bp[i])));
    } else if (s0 == 1 && s1 == 1 && s2 == 0) {
      C bv = static_cast<C>(bp[0]);
      for (int64_t i = 0; i < n; ++i) dp[i] = static_cast<Out>(f(static_cast<C>(ap[i]), bv));
    } else if (s0 == 1 && s1 == 0 && s2 == 1) {
      C av = static_cast<C>(ap[0]);
      for (int64_t i = 0; i < n; ++i) dp[i] = static_cast<Out>(f(av, static_cast<C>(bp[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        dp[i * s0] = static_cast<Out>(f(static_cast<C>(ap[i * s1]), static_cast<C>(bp[i * s2])));
    }
  });
}

/// The output tensor: the input's buffer when it may be reused, else a new one.
inline CpuTensor output_for(CpuTensor& x, const TensorMeta& out) {
  return reusable(x, out) ? x : empty(out);
}

}  // namespace ember::cpu
