// Internal: elementwise loops over strided operands (output contiguous), with contiguous
// fast paths the compiler vectorizes, and integer arithmetic that wraps like PyTorch's
// instead of overflowing (which C++ leaves undefined).
#pragma once
#include <algorithm>
#include <type_traits>

#include "ember/backends/cpu/strided.h"
#include "ember/core/cast.h"
#include "ember/core/half.h"

#if EMBER_HALF_F16C
#include <immintrin.h>
#endif

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

/// d[i] = float(s[i]) for n values: 8 at a time by F16C's VCVTPH2PS for f16 where the build has
/// it; otherwise (bf16: a shift) as the compiler vectorizes the scalar conversion.
template <class T>
inline void widen_run(const T* s, float* d, int64_t n) {
  int64_t i = 0;
#if EMBER_HALF_F16C
  if constexpr (std::is_same_v<T, f16>)
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(d + i,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
#endif
  for (; i < n; ++i) d[i] = static_cast<float>(s[i]);
}
/// d[i] = T(s[i]) for n values, rounded as T(float) rounds (F16C's VCVTPS2PH for f16, in the
/// current rounding mode as the scalar conversion).
template <class T>
inline void narrow_run(const float* s, T* d, int64_t n) {
  int64_t i = 0;
#if EMBER_HALF_F16C
  if constexpr (std::is_same_v<T, f16>)
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_CUR_DIRECTION));
#endif
  for (; i < n; ++i) d[i] = T(s[i]);
}

/// Values a chunk of the half-type paths below converts at a time (stays in L1).
inline constexpr int64_t kHalfChunk = 512;

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
    if constexpr (is_half_v<In>) {
      // contiguous halves: a chunk widened at once, f's results narrowed at once (f16 one
      // conversion at a time had run at a quarter of f32's speed: `docs/cpu.md`)
      if (sd == 1 && ss == 1) {
        alignas(64) float x[kHalfChunk];
        for (int64_t i0 = 0; i0 < n; i0 += kHalfChunk) {
          const int64_t m = std::min(kHalfChunk, n - i0);
          widen_run(sp + i0, x, m);
          if constexpr (std::is_same_v<Out, In> && std::is_same_v<decltype(f(x[0])), float>) {
            for (int64_t i = 0; i < m; ++i) x[i] = f(x[i]);
            narrow_run(x, dp + i0, m);
          } else {
            for (int64_t i = 0; i < m; ++i) dp[i0 + i] = static_cast<Out>(f(x[i]));
          }
        }
        return;
      }
    }
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
    if constexpr (is_half_v<In>) {
      // contiguous halves (or one operand a single value): converted a chunk at a time, as map1
      if (s0 == 1 && (s1 == 1 || s1 == 0) && (s2 == 1 || s2 == 0) && (s1 | s2) != 0) {
        alignas(64) float x[kHalfChunk], y[kHalfChunk];
        const float xv = static_cast<float>(ap[0]), yv = static_cast<float>(bp[0]);
        for (int64_t i0 = 0; i0 < n; i0 += kHalfChunk) {
          const int64_t m = std::min(kHalfChunk, n - i0);
          if (s1) widen_run(ap + i0, x, m);
          if (s2) widen_run(bp + i0, y, m);
          // each case its own loop, so that each vectorizes
          const auto each = [&](auto&& put) {
            if (s1 && s2)
              for (int64_t i = 0; i < m; ++i) put(i, f(x[i], y[i]));
            else if (s1)
              for (int64_t i = 0; i < m; ++i) put(i, f(x[i], yv));
            else
              for (int64_t i = 0; i < m; ++i) put(i, f(xv, y[i]));
          };
          if constexpr (std::is_same_v<Out, In> && std::is_same_v<decltype(f(x[0], y[0])), float>) {
            each([&](int64_t i, float v) { x[i] = v; });
            narrow_run(x, dp + i0, m);
          } else {
            each([&](int64_t i, auto v) { dp[i0 + i] = static_cast<Out>(v); });
          }
        }
        return;
      }
    }
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
