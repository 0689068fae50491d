// Internal: the strided loop every CPU kernel is built on. Dims are collapsed where all
// operands are contiguous across them, then [0, numel) is cut into chunks for the worker
// pool; the body gets each operand's element offset and a run length along the inner dim.
#pragma once
#include <array>

#include "ember/backends/cpu/cpu.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

inline constexpr int64_t kGrain = 1 << 15;

template <size_t N>
struct Loop {
  Dims shape;
  std::array<Dims, N> strides;
  std::array<int64_t, N> base{};
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  /// Element stride of operand k along the inner dim.
  int64_t inner(size_t k) const { return shape.empty() ? 1 : strides[k].back(); }
};

template <size_t N>
Loop<N> make_loop(const Shape& shape, const std::array<const Dims*, N>& strides,
                  const std::array<int64_t, N>& base) {
  Loop<N> L;
  L.base = base;
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    if (!L.shape.empty()) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k)
        merge = merge && L.strides[k].back() == (*strides[k])[d] * shape[d];
      if (merge) {
        L.shape.back() *= shape[d];
        for (size_t k = 0; k < N; ++k) L.strides[k].back() = (*strides[k])[d];
        continue;
      }
    }
    L.shape.push_back(shape[d]);
    for (size_t k = 0; k < N; ++k) L.strides[k].push_back((*strides[k])[d]);
  }
  if (shape.numel() == 0) L.shape = {0};
  if (shape.numel() == 0)
    for (size_t k = 0; k < N; ++k) L.strides[k] = {1};
  return L;
}

/// Calls body(offs, n) for runs of n elements along the inner dim; operand k's elements
/// are at offs[k] + i * L.inner(k).
template <size_t N, class F>
void run_loop(const Loop<N>& L, F&& body, int64_t grain = kGrain) {
  int64_t total = L.numel();
  if (total == 0) return;
  if (L.shape.empty()) {
    body(L.base, int64_t{1});
    return;
  }
  const size_t r = L.shape.size();
  const int64_t inner_n = L.shape[r - 1];
  parallel_for(total, grain, [&](int64_t begin, int64_t end) {
    Dims idx(r);
    int64_t rem = begin;
    for (size_t d = r; d-- > 0;) {
      idx[d] = rem % L.shape[d];
      rem /= L.shape[d];
    }
    std::array<int64_t, N> offs = L.base;
    for (size_t k = 0; k < N; ++k)
      for (size_t d = 0; d < r; ++d) offs[k] += idx[d] * L.strides[k][d];
    int64_t pos = begin;
    while (pos < end) {
      int64_t n = std::min(inner_n - idx[r - 1], end - pos);
      body(offs, n);
      pos += n;
      idx[r - 1] += n;
      for (size_t k = 0; k < N; ++k) offs[k] += n * L.strides[k][r - 1];
      // carry into the outer dims
      for (size_t d = r - 1; d > 0 && idx[d] == L.shape[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (size_t k = 0; k < N; ++k)
          offs[k] += L.strides[k][d - 1] - L.shape[d] * L.strides[k][d];
      }
    }
  });
}

/// A shape seen as [outer, n, inner] around one dim, the view every per-dim kernel uses.
struct Split {
  int64_t outer = 1, n = 1, inner = 1;
};
inline Split split_at(const Shape& s, int64_t dim) {
  Split p;
  for (size_t d = 0; d < s.rank(); ++d) {
    if (static_cast<int64_t>(d) < dim)
      p.outer *= s[d];
    else if (static_cast<int64_t>(d) == dim)
      p.n = s[d];
    else
      p.inner *= s[d];
  }
  return p;
}

/// Strides of `t` seen as broadcast to `shape` (0 along broadcast dims).
Dims broadcast_strides(const CpuTensor& t, const Shape& shape);
/// A fresh contiguous tensor of this meta (uninitialized).
CpuTensor empty(const TensorMeta& meta);
/// `t` itself when contiguous, otherwise a contiguous copy.
CpuTensor contiguous(const CpuTensor& t);
/// Whether the output may be written into `t`'s buffer: sole owner, contiguous, same meta.
bool reusable(const CpuTensor& t, const TensorMeta& out);

}  // namespace ember::cpu
