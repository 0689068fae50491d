// Internal: shared pieces of the spatial kernels (conv.cpp, pool.cpp, interpolate.cpp). Every
// spatial op sees its tensors as [N, C, D, H, W]: 1-d and 2-d ops get leading spatial dims
// of size 1 (kernel 1, stride 1, no padding), so one 3-d loop serves every rank.
#pragma once
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "ember/backends/cpu/allocator.h"
#include "ember/backends/cpu/kernels.h"

namespace ember::cpu {

/// A window sliding over `in` (3 spatial dims) to give `out` positions.
struct Geom {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
  int64_t in_numel() const { return in[0] * in[1] * in[2]; }
  int64_t out_numel() const { return out[0] * out[1] * out[2]; }
  /// Taps of the window; saturates at INT64_MAX (a pool's kernel is not bounded by a tensor).
  int64_t k_numel() const {
    int64_t n;
    if (__builtin_mul_overflow(k[0], k[1], &n) || __builtin_mul_overflow(n, k[2], &n))
      return INT64_MAX;
    return n;
  }
};

/// A transposed convolution's geometry `g` (from y's positions, g.in, to x's, g.out, as the
/// convolution it transposes) turned into the convolution of x it equals where the stride and
/// dilation are 1: from x's positions to y's, padding k - 1 - p, with the window flipped (the
/// caller flips the weights). Anything else is left with a geometry the direct and Winograd
/// paths refuse.
///
///   Geom f = flipped_geom(g);  // 3x3, padding 1: f.p stays 1, f.in = g.out, f.out = g.in
inline Geom flipped_geom(const Geom& g) {
  Geom f = g;
  for (int i = 0; i < 3; ++i) {
    f.in[i] = g.out[i], f.out[i] = g.in[i];
    f.p[i] = g.k[i] - 1 - g.p[i];
  }
  return f;
}

/// The weights of the convolution that flipped_geom's transposed conv equals: dst [c_out, c_in,
/// K] (K taps) from the transposed conv's w [c_in, c_out, K], each window turned around.
///
///   turned_weights(w, c_in, c_out, 9, dst);  // dst[(o * c_in + c) * 9 + t] = w[c][o][8 - t]
template <class T>
void turned_weights(const T* w, int64_t c_in, int64_t c_out, int64_t K, T* dst) {
  for (int64_t c = 0; c < c_in; ++c)
    for (int64_t o = 0; o < c_out; ++o)
      for (int64_t t = 0; t < K; ++t)
        dst[(o * c_in + c) * K + t] = w[(c * c_out + o) * K + K - 1 - t];
}

/// A 1x1 window with stride 1 and no padding whose output is the input's size: a
/// convolution's columns are its input itself.
inline bool pointwise(const Geom& g) {
  for (int i = 0; i < 3; ++i)
    if (g.k[i] != 1 || g.s[i] != 1 || g.p[i] != 0 || g.in[i] != g.out[i]) return false;
  return true;
}

/// The spatial dims of an [N, C, *spatial] shape.
inline Dims spatial_of(const Shape& s) {
  return Dims(std::span<const int64_t>(s.dims().data() + 2, s.rank() - 2));
}

/// The geometry of window `w` (infer has filled every list) from `in` to `out`.
inline Geom make_geom(const Window& w, const Dims& in, const Dims& out) {
  Geom g;
  size_t r = in.size(), off = 3 - r;
  for (size_t i = 0; i < r; ++i) {
    g.in[off + i] = in[i];
    g.out[off + i] = out[i];
    if (!w.kernel.empty()) {
      g.k[off + i] = w.kernel[i];
      g.s[off + i] = w.stride[i];
      g.p[off + i] = w.padding[i];
      g.d[off + i] = w.dilation[i];
    }
  }
  return g;
}

inline int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

/// Output positions [lo, hi) along dim i whose tap `kk` lands inside the input.
inline std::pair<int64_t, int64_t> valid_outputs(const Geom& g, int i, int64_t kk) {
  int64_t off = kk * g.d[i] - g.p[i];  // input = o * s + off
  int64_t lo = std::max<int64_t>(0, floor_div(-off + g.s[i] - 1, g.s[i]));
  int64_t hi = std::min<int64_t>(g.out[i], floor_div(g.in[i] - 1 - off, g.s[i]) + 1);
  return {std::min(lo, g.out[i]), std::max(hi, std::min(lo, g.out[i]))};
}

/// a * b for work estimates (grain sizes), saturating instead of overflowing.
inline int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/// The taps [lo, hi) along dim i that land inside the input for at least one output.
inline std::pair<int64_t, int64_t> live_taps(const Geom& g, int i) {
  // input = o * s + kk * d - p for o in [0, out): kk * d in [p - (out - 1) * s, in - 1 + p]
  const int64_t lo_num = g.p[i] - (g.out[i] - 1) * g.s[i];
  const int64_t lo = std::max<int64_t>(0, -floor_div(-lo_num, g.d[i]));
  const int64_t hi = std::min<int64_t>(g.k[i], floor_div(g.in[i] - 1 + g.p[i], g.d[i]) + 1);
  return {std::min(lo, hi), hi};
}

/// For each output position along each dim: where its window starts in the input and the
/// kernel taps [lo, hi) that land inside the input. Computed once per op, so the inner loops
/// do no division.
struct WindowTable {
  struct Dim {
    std::vector<int64_t> start, lo, hi;
  };
  Dim dim[3];
  explicit WindowTable(const Geom& g) {
    for (int i = 0; i < 3; ++i) {
      Dim& t = dim[i];
      for (int64_t o = 0; o < g.out[i]; ++o) {
        int64_t start = o * g.s[i] - g.p[i];  // input = start + kk * d
        int64_t lo = start >= 0 ? 0 : (-start + g.d[i] - 1) / g.d[i];
        int64_t hi = start >= g.in[i] ? 0 : std::min(g.k[i], (g.in[i] - 1 - start) / g.d[i] + 1);
        t.start.push_back(start);
        t.lo.push_back(lo);
        t.hi.push_back(std::max(lo, hi));
      }
    }
  }
};

/// A scratch buffer of n elements from the CPU allocator (large sizes are cached, so a
/// repeated op does not fault in fresh pages every call).
template <class T>
struct Scratch {
  explicit Scratch(int64_t n)
      : buf(allocate(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(T))) {}
  T* get() const { return reinterpret_cast<T*>(buf.get()); }
  std::shared_ptr<std::byte[]> buf;
};

/// Runs f(item, parallel) for items [0, n): spread over the pool with serial insides when
/// there are enough items to keep every thread busy, otherwise one after another with
/// parallel insides (the pool takes one job at a time, so the two never nest).
template <class F>
void for_items(int64_t n, F&& f) {
  int threads = num_threads();
  if (threads > 1 && n >= 2 * threads) {
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) f(i, false);
    });
  } else {
    for (int64_t i = 0; i < n; ++i) f(i, true);
  }
}

/// Runs f(plane, od, oh) over every output row of `planes` planes, in parallel.
template <class F>
void for_out_rows(int64_t planes, const Geom& g, int64_t work_per_row, F&& f) {
  int64_t rows = planes * g.out[0] * g.out[1];
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(work_per_row, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t r = b; r < e; ++r)
                   f(r / (g.out[0] * g.out[1]), r / g.out[1] % g.out[0], r % g.out[1]);
               });
}

/// Runs f(plane) for every plane, in parallel.
template <class F>
void for_planes(int64_t planes, int64_t work_per_plane, F&& f) {
  parallel_for(planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(work_per_plane, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t p = b; p < e; ++p) f(p);
               });
}

/// Column matrix [C * k, L] (row stride ld) of `channels` planes of x (x contiguous, [C, *in]).
template <class T>
void im2col(const T* x, int64_t channels, const Geom& g, T* col, int64_t ld, bool parallel);
/// The adjoint: adds the columns back into x ([C, *in], which the caller has zeroed).
template <class T>
void col2im(const T* col, int64_t channels, const Geom& g, T* x, int64_t ld, bool parallel);

/// out[0, size) = the sum over items [0, n) of what add(begin, end, part) adds into `part`
/// (zeroed) for the items [begin, end). The items are cut into a fixed number of chunks,
/// summed apart in parallel and then in order, so the result does not depend on the thread
/// count or on timing.
template <class T, class F>
void sum_in_chunks(int64_t n, int64_t size, T* out, F&& add) {
  const int64_t chunks = std::min<int64_t>(n, 16);
  if (chunks == 0) {
    std::fill(out, out + size, T(0));
    return;
  }
  Scratch<T> parts(chunks * size);
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      T* part = parts.get() + c * size;
      std::fill(part, part + size, T(0));
      add(c * n / chunks, (c + 1) * n / chunks, part);
    }
  });
  std::copy(parts.get(), parts.get() + size, out);
  for (int64_t c = 1; c < chunks; ++c)
    for (int64_t i = 0; i < size; ++i) out[i] += parts.get()[c * size + i];
}

/// conv, conv_transpose or conv_weight_grad (`code`) with one input channel per group
/// (depthwise, or C_in = 1) into `out`: direct loops instead of a GEMM (depthwise.cpp). `g`
/// runs from the conv's input to its output; `per_group` is C_out / groups.
void depthwise_conv(OpCode code, Inputs in, const CpuTensor& out, const Geom& g, int64_t per_group);
/// Whether depthwise_conv in f32 takes the AVX2 kernels (depthwise_avx2.cpp): 2D, 3x3,
/// stride and dilation 1, padding 0 or 1, output rows of 8 or more, a CPU with AVX2.
bool depthwise3x3_avx2_fits(const Geom& g);
/// y [n, c_in * per_group, H', W'] = the depthwise conv of x [n, c_in, H, W] with w [c_out, 1, 3,
/// 3] (output channel co reads input channel co / per_group), read in place; multithreaded.
void depthwise3x3_avx2(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                       int64_t per_group, const Geom& g);
/// dw [c_in * per_group, 1, 3, 3] = the weight gradient of that conv, from x and the output's
/// gradient gy [n, c_out, H', W'], where depthwise3x3_avx2_fits(g); a task per output channel.
void depthwise3x3_weight_grad_avx2(const float* x, const float* gy, float* dw, int64_t n,
                                   int64_t c_in, int64_t per_group, const Geom& g);

/// Whether depthwise_lanes takes a conv of geometry g (depthwise_lanes.cpp): 2-d, one output
/// channel per input channel, paddings up to the window's size, small planes (output rows under
/// 16, the padded input 64 x 64 or less), a CPU with AVX2.
bool depthwise_lanes_fits(const Geom& g, int64_t per_group);
/// y [n, c, H', W'] = the depthwise conv of x [n, c, H, W] with w [c, 1, kh, kw], 8 channels at a
/// time in the lanes of a vector; multithreaded over images and blocks of channels.
void depthwise_lanes(const float* x, const float* w, float* y, int64_t n, int64_t c, const Geom& g);
/// y [n, c, H, W] = the transposed conv (the input gradient) of that conv, of x [n, c, H', W'].
void depthwise_lanes_transpose(const float* x, const float* w, float* y, int64_t n, int64_t c,
                               const Geom& g);
/// dw [c, 1, kh, kw] = the weight gradient of that conv, from x and the output's gradient gy
/// [n, c, H', W']; multithreaded over blocks of channels.
void depthwise_lanes_weight_grad(const float* x, const float* gy, float* dw, int64_t n, int64_t c,
                                 const Geom& g);

CpuTensor conv_family(const Op& op, Inputs in, const TensorMeta& out);
CpuTensor pool_family(const Op& op, Inputs in, const TensorMeta& out);
CpuTensor interpolate_family(const Op& op, Inputs in, const TensorMeta& out);

}  // namespace ember::cpu
