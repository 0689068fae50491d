// Internal: 32-byte vectors of float or double for kernels written once over both, with the
// compiler's portable vector types (AVX2/AVX-512 on x86, NEON on ARM, SIMD128 on WebAssembly).
//
//   using V = Vec<T>;                     // 8 floats or 4 doubles
//   V a = loadv(p), b = loadv(p + kLanes<T>);
//   storev(q, a > b ? a : b);             // comparisons give a Mask<T>, usable in ?:
#pragma once
#include <cstdint>
#include <cstring>

namespace ember::cpu {

template <class T>
struct VecOf;
template <>
struct VecOf<float> {
  typedef float type __attribute__((vector_size(32)));
  typedef int32_t mask __attribute__((vector_size(32)));
};
template <>
struct VecOf<double> {
  typedef double type __attribute__((vector_size(32)));
  typedef int64_t mask __attribute__((vector_size(32)));
};

template <class T>
using Vec = typename VecOf<T>::type;
/// What comparing two Vec<T> gives: all ones in a lane where true.
template <class T>
using Mask = typename VecOf<T>::mask;
template <class T>
inline constexpr int64_t kLanes = 32 / sizeof(T);

template <class T>
inline Vec<T> loadv(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
inline void storev(T* p, Vec<T> v) {
  std::memcpy(p, &v, sizeof v);
}

/// Copies n values from s to d with inline moves: a short run (a row of a small image) is
/// cheaper this way than through a call to memcpy, which is what a plain loop becomes.
template <class T>
inline void copy_short(const T* s, T* d, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes<T> <= n; i += kLanes<T>) std::memcpy(d + i, s + i, 32);
  for (int64_t w = kLanes<T> / 2; w >= 1; w /= 2)
    if (n - i >= w) {
      std::memcpy(d + i, s + i, w * sizeof(T));
      i += w;
    }
}

/// The mask of kLanes<T> bools at p (all ones where true).
template <class T>
inline Mask<T> load_mask(const bool* p) {
  typedef uint8_t bytes __attribute__((vector_size(kLanes<T>)));
  bytes b;
  std::memcpy(&b, p, sizeof b);
  return __builtin_convertvector(b, Mask<T>) != 0;
}

/// The even and the odd lanes of the 2 * kLanes values a then b.
template <class T>
inline Vec<T> even_lanes(Vec<T> a, Vec<T> b) {
  if constexpr (kLanes<T> == 8)
    return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
  else
    return __builtin_shufflevector(a, b, 0, 2, 4, 6);
}
template <class T>
inline Vec<T> odd_lanes(Vec<T> a, Vec<T> b) {
  if constexpr (kLanes<T> == 8)
    return __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
  else
    return __builtin_shufflevector(a, b, 1, 3, 5, 7);
}
/// The inverse: stores e[0], o[0], e[1], o[1], ... (2 * kLanes values) at p.
template <class T>
inline void store_interleaved(T* p, Vec<T> e, Vec<T> o) {
  if constexpr (kLanes<T> == 8) {
    storev(p, __builtin_shufflevector(e, o, 0, 8, 1, 9, 2, 10, 3, 11));
    storev(p + 8, __builtin_shufflevector(e, o, 4, 12, 5, 13, 6, 14, 7, 15));
  } else {
    storev(p, __builtin_shufflevector(e, o, 0, 4, 1, 5));
    storev(p + 4, __builtin_shufflevector(e, o, 2, 6, 3, 7));
  }
}

}  // namespace ember::cpu
