// Convolution through ember's GEMM: im2col turns each (image, group) into a column matrix
// [C_in/groups * prod(kernel), L] and one GEMM with the weight gives the output (a 1x1 conv
// with stride 1 and no padding multiplies the input directly). conv_transpose and the input
// gradient run the same GEMM the other way and add the columns back (col2im); the weight
// gradient multiplies the output's gradient by the transposed columns. unfold and fold are
// im2col and col2im as ops.
#include <type_traits>
#include <vector>

#include "ember/backends/cpu/direct_conv.h"
#include "ember/backends/cpu/gemm.h"
#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/simd.h"
#include "ember/backends/cpu/spatial.h"
#include "ember/backends/cpu/wide.h"
#include "ember/backends/cpu/winograd.h"

namespace ember::cpu {

namespace {

// Rows of the column matrix per kernel tap: row = c * K + tap, tap = (kd, kh, kw) row-major.
struct Tap {
  int64_t c, kd, kh, kw;
};
inline Tap tap_of(const Geom& g, int64_t row) {
  int64_t K = g.k_numel(), t = row % K;
  return {row / K, t / (g.k[1] * g.k[2]), t / g.k[2] % g.k[1], t % g.k[2]};
}

// Visits the rows of output positions (od, oh) for one tap: f(out_row_offset, in_row_offset)
// where the input row is inside the input, z(out_row_offset) where it is padding.
template <class F, class Z>
void for_tap_rows(const Geom& g, const Tap& t, F&& f, Z&& z) {
  for (int64_t od = 0; od < g.out[0]; ++od) {
    int64_t id = od * g.s[0] - g.p[0] + t.kd * g.d[0];
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      int64_t ih = oh * g.s[1] - g.p[1] + t.kh * g.d[1];
      int64_t orow = (od * g.out[1] + oh) * g.out[2];
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1])
        z(orow);
      else
        f(orow, (id * g.in[1] + ih) * g.in[2]);
    }
  }
}

int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kGrain / std::max<int64_t>(work_per_item, 1));
}

}  // namespace

template <class T>
void im2col(const T* x, int64_t channels, const Geom& g, T* col, int64_t ld, bool parallel) {
  const int64_t L = g.out_numel(), Lin = g.in_numel(), o2 = g.out[2], sw = g.s[2];
  auto rows = [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      Tap t = tap_of(g, row);
      const T* src = x + t.c * Lin;
      T* dst = col + row * ld;
      // Not a structured binding: clang before 16 cannot capture one in the lambda below.
      const auto range = valid_outputs(g, 2, t.kw);
      const int64_t lo = range.first, hi = range.second;
      int64_t woff = t.kw * g.d[2] - g.p[2];
      for_tap_rows(
          g, t,
          [&](int64_t orow, int64_t irow) {
            T* d = dst + orow;
            std::fill(d, d + lo, T(0));
            // input w = ow * sw + woff, inside the input for ow in [lo, hi)
            if (sw == 1) {
              if (hi > lo) copy_short(src + irow + lo + woff, d + lo, hi - lo);
            } else {
              for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[irow + ow * sw + woff];
            }
            std::fill(d + hi, d + o2, T(0));
          },
          [&](int64_t orow) { std::fill(dst + orow, dst + orow + o2, T(0)); });
    }
  };
  int64_t n = channels * g.k_numel();
  if (parallel)
    parallel_for(n, grain_for(L), rows);
  else
    rows(0, n);
}

template <class T>
void col2im(const T* col, int64_t channels, const Geom& g, T* x, int64_t ld, bool parallel) {
  const int64_t K = g.k_numel(), L = g.out_numel(), Lin = g.in_numel(), sw = g.s[2];
  // one channel's rows all land in that channel's plane: channels run in parallel
  auto chans = [&](int64_t c0, int64_t c1) {
    for (int64_t row = c0 * K; row < c1 * K; ++row) {
      Tap t = tap_of(g, row);
      T* dst = x + t.c * Lin;
      const T* src = col + row * ld;
      // Not a structured binding: clang before 16 cannot capture one in the lambda below.
      const auto range = valid_outputs(g, 2, t.kw);
      const int64_t lo = range.first, hi = range.second;
      int64_t woff = t.kw * g.d[2] - g.p[2];
      for_tap_rows(
          g, t,
          [&](int64_t orow, int64_t irow) {
            const T* s = src + orow;
            if (sw == 1) {
              T* d = dst + irow;
              for (int64_t ow = lo; ow < hi; ++ow) d[ow + woff] += s[ow];
            } else {
              for (int64_t ow = lo; ow < hi; ++ow) dst[irow + ow * sw + woff] += s[ow];
            }
          },
          [](int64_t) {});
    }
  };
  if (parallel)
    parallel_for(channels, grain_for(K * L), chans);
  else
    chans(0, channels);
}

namespace {

// What packing a row of the column matrix needs: the row's channel plane, its tap's offsets
// along each dim, and the outputs [lo, hi) along w whose tap lands inside the input.
struct ColRow {
  int64_t plane, doff, hoff, woff, lo, hi;
};

// Packs panels of columns(x) straight from the image (implicit im2col): the GEMM reads each
// input row once per tap from cache instead of a column matrix written out and read back.
template <class T>
class ColumnPacker {
 public:
  ColumnPacker(const T* x, const Geom& g, int64_t rows) : x_(x), g_(g), rows_(rows) {
    for (int64_t r = 0; r < rows; ++r) {
      Tap t = tap_of(g, r);
      auto [lo, hi] = valid_outputs(g, 2, t.kw);
      rows_[r] = {t.c * g.in_numel(),
                  t.kd * g.d[0] - g.p[0],
                  t.kh * g.d[1] - g.p[1],
                  t.kw * g.d[2] - g.p[2],
                  lo,
                  hi};
    }
  }
  void operator()(int64_t p0, int64_t j0, int64_t kc, int64_t cols, int64_t width, T* dst) const {
    const int64_t NR = width;
    const Geom& g = g_;
    const int64_t o1 = g.out[1], o2 = g.out[2];
    const int64_t ow0 = j0 % o2, oh0 = j0 / o2 % o1, od0 = j0 / (o2 * o1);
    // the common case: a full panel inside one output row, stride 1 along w
    const bool one_run = cols == NR && ow0 + NR <= o2 && g.s[2] == 1;
    for (int64_t p = 0; p < kc; ++p, dst += NR) {
      const ColRow& r = rows_[p0 + p];
      if (one_run) {
        int64_t id = od0 * g.s[0] + r.doff, ih = oh0 * g.s[1] + r.hoff;
        if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && r.lo <= ow0 && ow0 + NR <= r.hi) {
          copy_panel_row(dst, x_ + r.plane + (id * g.in[1] + ih) * g.in[2] + r.woff + ow0, NR);
          continue;
        }
      }
      pack_row(r, od0, oh0, ow0, cols, width, dst);
    }
  }

 private:
  // One row of a panel: `cols` outputs from (od, oh, ow) on, in runs along output rows.
  void pack_row(const ColRow& r, int64_t od, int64_t oh, int64_t ow, int64_t cols, int64_t width,
                T* dst) const {
    const Geom& g = g_;
    const int64_t o1 = g.out[1], o2 = g.out[2], sw = g.s[2];
    int64_t q = 0;
    while (q < cols) {
      int64_t run = std::min(cols - q, o2 - ow), end = ow + run;
      int64_t id = od * g.s[0] + r.doff, ih = oh * g.s[1] + r.hoff;
      T* d = dst + q;  // d[o - ow] is output o of this run
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
        std::fill(d, d + run, T(0));
      } else {
        // input w = o * sw + woff, inside the input for o in [lo, hi)
        const T* src = x_ + r.plane + (id * g.in[1] + ih) * g.in[2];
        int64_t a = std::clamp(r.lo, ow, end), b = std::clamp(r.hi, a, end);
        std::fill(d, d + (a - ow), T(0));
        if (sw == 1)  // a contiguous run of the input row (the common case)
          std::memcpy(d + (a - ow), src + a + r.woff, size_t(b - a) * sizeof(T));
        else
          for (int64_t o = a; o < b; ++o) d[o - ow] = src[o * sw + r.woff];
        std::fill(d + (b - ow), d + run, T(0));
      }
      q += run;
      ow = 0;
      if (++oh == o1) {
        oh = 0;
        ++od;
      }
    }
    std::fill(dst + cols, dst + width, T(0));
  }

  const T* x_;
  Geom g_;
  std::vector<ColRow> rows_;
};

// ---- small images: one GEMM over a batch of images --------------------------------------
// With few output positions per image (L) a GEMM per image is too thin to run at speed, and
// its packing works on short rows. Images then go side by side in one column matrix
// [C_in/groups * prod(kernel), nb * L] (image i in columns [i * L, (i + 1) * L)), so one
// GEMM covers nb of them.

// Images per batched GEMM, or 0 where a GEMM per image is wide enough. Batches run in
// parallel, each on one thread: at least two per thread where there are enough images. Not one
// image of a pointwise conv (`direct`: its columns are its input): a batch of one copied its
// input and output for nothing, where the GEMM per image reads and writes them in place. On an
// AMD EPYC (Zen 4), 2 threads, 8 x 256 x 14 x 14 -> 1024 in one process with the two
// alternating: forward 4.30 -> 4.08 ms, forward and both gradients 17.3 -> 15.1; 1024 -> 256
// 5.41 -> 5.27 and 16.7 -> 15.7.
int64_t batch_images(int64_t N, int64_t L, int64_t rows, bool direct) {
  if (L > 256 || N < 2) return 0;
  // about a thousand columns per GEMM, and a column matrix that stays in the L2 cache
  const int64_t threads = num_threads();
  int64_t nb = std::max<int64_t>(1, 1024 / L);
  nb = std::min(nb, std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(rows * L, 1)));
  nb = std::min(nb, std::max<int64_t>(1, N / (2 * threads)));
  // About 512 columns a GEMM (at most a thread's share of the images, in batches the threads
  // share evenly), even where the column matrix then leaves L2, up to 8 MiB of it: deep channels
  // on small images (L of 49 or 196) had run a thin GEMM per image, which packed all of the
  // weights again for each. 2 threads of a Zen 4, 8 images: the 1x1 2048 -> 512 on 7x7 5.3 ->
  // 4.3-4.7 ms, its weight gradient 8.0 -> 5.0; 1024 -> 256 on 14x14 4.8-5.4 -> 4.3-4.7; the
  // weight gradient of 512 -> 512 3x3 on 7x7 21.1 -> 14.8.
  const int64_t most = std::min(
      N / threads, std::max<int64_t>(1, (int64_t{2} << 20) / std::max<int64_t>(rows * L, 1)));
  if (most >= 2) {
    const int64_t want = std::min((512 + L - 1) / L, most);
    const auto even = [&](int64_t w) { return (N + w - 1) / w % threads == 0; };
    int64_t wide = want;
    while (wide <= most && !even(wide)) ++wide;  // up to the caps
    if (wide > most) {                           // else down
      wide = want;
      while (wide >= 2 && !even(wide)) --wide;
    }
    if (wide >= 2) nb = std::max(nb, wide);
  }
  return nb == 1 && direct ? 0 : nb;
}

int64_t batch_count(int64_t N, int64_t nb) { return (N + nb - 1) / nb; }

// Calls f(first image, images) for each batch of nb images, in parallel over batches.
template <class F>
void for_batches(int64_t N, int64_t nb, F&& f) {
  parallel_for(batch_count(N, nb), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i * nb, std::min(nb, N - i * nb));
  });
}

// How a batch lays out each image's columns: im2col's, L per image, or with stride 1 the
// wide layout (wide.h), where each row of the column matrix is one contiguous run of the
// (padded) input and the outputs are at the padded input's pitch.
template <class T>
class ImageColumns {
 public:
  explicit ImageColumns(const Geom& g) : g_(g), wide_(g) {
    is_wide_ = Wide::fits(g);
    width = is_wide_ ? wide_.wide : g.out_numel();
  }
  int64_t width;  // columns per image

  // Scratch the calls below need (a padded plane).
  int64_t scratch() const { return is_wide_ && wide_.padded ? wide_.plane() : 0; }

  // The columns of `channels` planes of x into col (row stride ld).
  void columns(const T* x, int64_t channels, T* col, int64_t ld, T* pad) const {
    if (!is_wide_) return im2col(x, channels, g_, col, ld, false);
    const int64_t K = g_.k_numel(), Lin = g_.in_numel();
    for (int64_t c = 0; c < channels; ++c) {
      const T* xp = padded_plane(wide_, g_, x + c * Lin, pad);
      for (int64_t t = 0; t < K; ++t) copy_short(xp + wide_.off[t], col + (c * K + t) * ld, width);
    }
  }
  // The adjoint: adds the columns back into x (`channels` planes, zeroed by the caller).
  void add_back(const T* col, int64_t channels, T* x, int64_t ld, T* pad) const {
    if (!is_wide_) return col2im(col, channels, g_, x, ld, false);
    const int64_t K = g_.k_numel(), Lin = g_.in_numel();
    for (int64_t c = 0; c < channels; ++c) {
      T* xp = wide_.padded ? pad : x + c * Lin;
      if (wide_.padded) std::fill(pad, pad + wide_.plane(), T(0));
      for (int64_t t = 0; t < K; ++t) {
        const T* src = col + (c * K + t) * ld;
        T* dst = xp + wide_.off[t];
        for (int64_t i = 0; i < width; ++i) dst[i] += src[i];
      }
      if (wide_.padded) wide_.unpad_plane(g_, pad, x + c * Lin);
    }
  }
  // `rows` output planes into their columns of dst (row stride ld), zeros where none lands.
  void outputs_in(const T* y, int64_t rows, T* dst, int64_t ld) const {
    const int64_t L = g_.out_numel();
    for (int64_t r = 0; r < rows; ++r) {
      if (is_wide_)
        wide_.widen(g_, y + r * L, dst + r * ld);
      else
        copy_short(y + r * L, dst + r * ld, L);
    }
  }
  // The inverse: `rows` output planes out of their columns of src (row stride ld).
  void outputs_out(const T* src, int64_t ld, int64_t rows, T* y) const {
    const int64_t L = g_.out_numel();
    for (int64_t r = 0; r < rows; ++r) {
      if (is_wide_)
        wide_.narrow(g_, src + r * ld, y + r * L);
      else
        copy_short(src + r * ld, y + r * L, L);
    }
  }

 private:
  const Geom& g_;
  Wide wide_;
  bool is_wide_;
};

// y[n, grp] = w[grp] * columns(x[n, grp])
template <class T>
void conv_forward(const CpuTensor& x, const CpuTensor& w, const CpuTensor& y, const Window& win) {
  const Shape &xs = x.meta.shape, &ys = y.meta.shape;
  int64_t N = xs[0], c_in = xs[1], c_out = ys[1], G = win.groups;
  int64_t cg = c_in / G, cog = c_out / G;
  Geom g = make_geom(win, spatial_of(xs), spatial_of(ys));
  int64_t L = g.out_numel(), Lin = g.in_numel(), ck = cg * g.k_numel();
  bool direct = pointwise(g);
  const T *X = x.data<T>(), *W = w.data<T>();
  T* Y = y.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (direct_conv_fits(g, G, c_in, c_out, N)) return direct_conv_f32(X, W, Y, N, c_in, c_out, g);
    if (winograd_fits(g, G, c_in, c_out) && winograd_pays(g, N, c_in, c_out))
      return winograd_conv_f32(X, W, Y, N, c_in, c_out, g);
  }
  if (ImageColumns<T> cc(g); int64_t nb = batch_images(N, cc.width, ck, direct)) {
    for_batches(N, nb, [&](int64_t n0, int64_t m) {
      const int64_t ld = m * cc.width;
      Scratch<T> cols(ck * ld), out(cog * ld), pad(cc.scratch());
      for (int64_t grp = 0; grp < G; ++grp) {
        for (int64_t i = 0; i < m; ++i)
          cc.columns(X + ((n0 + i) * c_in + grp * cg) * Lin, cg, cols.get() + i * cc.width, ld,
                     pad.get());
        gemm_t(cog, ld, ck, {W + grp * cog * ck, ck, 1}, {cols.get(), ld, 1}, out.get(), ld, false,
               false);
        for (int64_t i = 0; i < m; ++i)
          cc.outputs_out(out.get() + i * cc.width, ld, cog, Y + ((n0 + i) * c_out + grp * cog) * L);
      }
    });
    return;
  }
  for_items(N * G, [&](int64_t it, bool par) {
    int64_t n = it / G, grp = it % G;
    const T* xg = X + (n * c_in + grp * cg) * Lin;
    T* yg = Y + (n * c_out + grp * cog) * L;
    MatRef<T> wg{W + grp * cog * ck, ck, 1};
    if (direct) {
      gemm_t(cog, L, ck, wg, {xg, L, 1}, yg, L, false, par);
      return;
    }
    ColumnPacker<T> cols(xg, g, ck);
    gemm_t(cog, L, ck, wg, PackB<T>(std::cref(cols)), yg, L, false, par);
  });
}

// conv_transpose: columns[n, grp] = w[grp]^T * x[n, grp], added back into y by col2im. The
// window runs over y (the conv's input) and lands on x's positions (the conv's output).
template <class T>
void conv_transpose_forward(const CpuTensor& x, const CpuTensor& w, const CpuTensor& y,
                            const Window& win) {
  const Shape &xs = x.meta.shape, &ys = y.meta.shape;
  int64_t N = xs[0], c_in = xs[1], c_out = ys[1], G = win.groups;
  int64_t cg = c_in / G, cog = c_out / G;
  Geom g = make_geom(win, spatial_of(ys), spatial_of(xs));
  int64_t Lx = g.out_numel(), Ly = g.in_numel(), ok = cog * g.k_numel();
  bool direct = pointwise(g);
  const T *X = x.data<T>(), *W = w.data<T>();
  T* Y = y.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    // With stride 1 this is a convolution of x (padded by 2 - p) with the window flipped and
    // its channel axes swapped: Winograd's where that fits.
    Geom f = flipped_geom(g);
    if (G == 1 && direct_conv_fits(f, 1, c_in, c_out, N)) {
      const int64_t K = g.k_numel();
      Scratch<float> wf(c_out * c_in * K);
      turned_weights(W, c_in, c_out, K, wf.get());
      return direct_conv_f32(X, wf.get(), Y, N, c_in, c_out, f);
    }
    if (G == 1 && winograd_fits(f, 1, c_in, c_out) && winograd_pays(f, N, c_in, c_out))
      return winograd_conv_f32(X, W, Y, N, c_in, c_out, f, 0, /*transposed=*/true);
  }
  if (ImageColumns<T> cc(g); int64_t nb = batch_images(N, cc.width, ok, direct)) {
    for_batches(N, nb, [&](int64_t n0, int64_t m) {
      const int64_t ld = m * cc.width;
      Scratch<T> xb(cg * ld), col(ok * ld), pad(cc.scratch());
      for (int64_t grp = 0; grp < G; ++grp) {
        for (int64_t i = 0; i < m; ++i)
          cc.outputs_in(X + ((n0 + i) * c_in + grp * cg) * Lx, cg, xb.get() + i * cc.width, ld);
        gemm_t(ok, ld, cg, {W + grp * cg * ok, 1, ok}, {xb.get(), ld, 1}, col.get(), ld, false,
               false);
        for (int64_t i = 0; i < m; ++i) {
          T* yg = Y + ((n0 + i) * c_out + grp * cog) * Ly;
          std::fill(yg, yg + cog * Ly, T(0));
          cc.add_back(col.get() + i * cc.width, cog, yg, ld, pad.get());
        }
      }
    });
    return;
  }
  for_items(N * G, [&](int64_t it, bool par) {
    int64_t n = it / G, grp = it % G;
    MatRef<T> xg{X + (n * c_in + grp * cg) * Lx, Lx, 1};
    MatRef<T> wt{W + grp * cg * ok, 1, ok};  // w[grp] is [cg, ok]; this is its transpose
    T* yg = Y + (n * c_out + grp * cog) * Ly;
    if (direct) {
      gemm_t(ok, Lx, cg, wt, xg, yg, Lx, false, par);
      return;
    }
    Scratch<T> col(ok * Lx);
    gemm_t(ok, Lx, cg, wt, xg, col.get(), Lx, false, par);
    std::fill(yg, yg + cog * Ly, T(0));
    col2im(col.get(), cog, g, yg, Lx, par);
  });
}

// dw[grp] = sum over n of gy[n, grp] * columns(x[n, grp])^T
template <class T>
void conv_weight_grad(const CpuTensor& x, const CpuTensor& gy, const CpuTensor& dw,
                      const Window& win) {
  const Shape &xs = x.meta.shape, &gs = gy.meta.shape;
  int64_t N = xs[0], c_in = xs[1], c_out = gs[1], G = win.groups;
  int64_t cg = c_in / G, cog = c_out / G;
  Geom g = make_geom(win, spatial_of(xs), spatial_of(gs));
  int64_t L = g.out_numel(), Lin = g.in_numel(), ck = cg * g.k_numel();
  bool direct = pointwise(g);
  const T *X = x.data<T>(), *GY = gy.data<T>();
  T* DW = dw.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    // F(3x3, 2x2) from 32 channels, but where AVX-512's direct kernels apply: on a Xeon, 2 threads,
    // those took 32 -> 32 on 32x32 3.3-3.7 ms against 5.5, and tied at 64 -> 64 on 56x56 (past
    // 64 channels, which they do not take, F(3x3, 2x2) 8.4 against 12.5 for im2col's GEMM).
    // On AVX-512, F(4x4) fused where it fits (docs/cpu-measurements.md: ahead of both below).
    // Both only where Winograd pays for the forward (winograd_pays, one rule for the three): at
    // its edge, 256 -> 256 on one 14x14 image, 2 threads of a Zen 4, F(3x3, 2x2) took 1.48 ms
    // against 1.40 by the GEMM.
    const bool pays = winograd_fits(g, G, c_in, c_out) && winograd_pays(g, N, c_in, c_out);
    if (pays && winograd_fused_weight_grad_fits(g, c_in, c_out))
      return winograd_fused_weight_grad_f32(X, GY, DW, N, c_in, c_out, g);
    const bool kernels = direct_weight_grad_fits(g, G, c_in, c_out);
    if (pays && winograd_weight_grad_fits(g, G, c_in, c_out) &&
        !(kernels && cpu_isa() >= CpuIsa::Avx512))
      return winograd_weight_grad_f32(X, GY, DW, N, c_in, c_out, g);
    if (kernels) return direct_weight_grad_f32(X, GY, DW, N, c_in, c_out, g);
  }
  std::fill(DW, DW + c_out * ck, T(0));
  if (ImageColumns<T> cc(g); int64_t nb = batch_images(N, cc.width, ck, direct)) {
    // batches summed apart and then in order (sum_in_chunks)
    sum_in_chunks<T>(batch_count(N, nb), c_out * ck, DW, [&](int64_t b, int64_t e, T* part) {
      Scratch<T> cols(ck * nb * cc.width), gyb(cog * nb * cc.width), pad(cc.scratch());
      for (int64_t batch = b; batch < e; ++batch) {
        const int64_t n0 = batch * nb, m = std::min(nb, N - n0), ld = m * cc.width;
        for (int64_t grp = 0; grp < G; ++grp) {
          for (int64_t i = 0; i < m; ++i) {
            cc.columns(X + ((n0 + i) * c_in + grp * cg) * Lin, cg, cols.get() + i * cc.width, ld,
                       pad.get());
            cc.outputs_in(GY + ((n0 + i) * c_out + grp * cog) * L, cog, gyb.get() + i * cc.width,
                          ld);
          }
          gemm_t(cog, ck, ld, {gyb.get(), ld, 1}, {cols.get(), 1, ld}, part + grp * cog * ck, ck,
                 true, false);
        }
      }
    });
    return;
  }
  // adds image n, group grp into out (the group's [cog, ck] block)
  auto add_item = [&](int64_t n, int64_t grp, T* out, T* col, bool par) {
    const T* xg = X + (n * c_in + grp * cg) * Lin;
    MatRef<T> gg{GY + (n * c_out + grp * cog) * L, L, 1};
    if (!direct) im2col(xg, cg, g, col, L, par);
    gemm_t(cog, ck, L, gg, {direct ? xg : col, 1, L}, out, ck, true, par);
  };
  int threads = num_threads();
  int64_t col_n = direct ? 0 : ck * L;
  if (threads > 1 && G >= 2 * threads) {  // groups write disjoint blocks
    parallel_for(G, 1, [&](int64_t b, int64_t e) {
      Scratch<T> col(col_n);
      for (int64_t grp = b; grp < e; ++grp)
        for (int64_t n = 0; n < N; ++n) add_item(n, grp, DW + grp * cog * ck, col.get(), false);
    });
  } else if (threads > 1 && N >= 2 * threads) {  // images in chunks summed apart, then in order
    sum_in_chunks<T>(N, c_out * ck, DW, [&](int64_t b, int64_t e, T* part) {
      Scratch<T> col(col_n);
      for (int64_t n = b; n < e; ++n)
        for (int64_t grp = 0; grp < G; ++grp)
          add_item(n, grp, part + grp * cog * ck, col.get(), false);
    });
  } else {
    Scratch<T> col(col_n);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t grp = 0; grp < G; ++grp) add_item(n, grp, DW + grp * cog * ck, col.get(), true);
  }
}

// The blocks of unfold/fold: the window over an image of spatial size `in`.
Geom block_geom(const Window& w, const Dims& in) {
  Dims out(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = (in[i] + 2 * w.padding[i] - w.dilation[i] * (w.kernel[i] - 1) - 1) / w.stride[i] + 1;
  return make_geom(w, in, out);
}

template <class T>
void unfold_forward(const CpuTensor& x, const CpuTensor& y, const Window& win) {
  const Shape& xs = x.meta.shape;
  int64_t N = xs[0], C = xs[1];
  Geom g = block_geom(win, spatial_of(xs));
  int64_t Lin = g.in_numel(), rows = C * g.k_numel() * g.out_numel();
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  for_items(N, [&](int64_t n, bool par) {
    im2col(X + n * C * Lin, C, g, Y + n * rows, g.out_numel(), par);
  });
}

template <class T>
void fold_forward(const CpuTensor& x, const CpuTensor& y, const Window& win) {
  const Shape& ys = y.meta.shape;
  int64_t N = ys[0], C = ys[1];
  Geom g = block_geom(win, spatial_of(ys));
  int64_t Lin = g.in_numel(), rows = C * g.k_numel() * g.out_numel();
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  for_items(N, [&](int64_t n, bool par) {
    std::fill(Y + n * C * Lin, Y + (n + 1) * C * Lin, T(0));
    col2im(X + n * rows, C, g, Y + n * C * Lin, g.out_numel(), par);
  });
}

}  // namespace

CpuTensor conv_family(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor o = empty(out);
  const Window& w = op.attrs.window;
  // conv ops with one input channel per group run direct loops (not for unfold/fold)
  const int64_t G = w.groups;
  const Shape& xs = in[0].meta.shape;
  const bool tr = op.code == OpCode::ConvTranspose;
  const int64_t c_out = op.code == OpCode::ConvWeightGrad ? in[1].meta.shape[1] : out.shape[1];
  const bool conv_op = op.code == OpCode::Conv || tr || op.code == OpCode::ConvWeightGrad;
  const bool one_input_channel = conv_op && xs[1] == G;
  auto conv_geom = [&] {  // from the conv's input to its output
    const Shape& big = tr ? out.shape : xs;
    const Shape& small = tr ? xs : op.code == OpCode::Conv ? out.shape : in[1].meta.shape;
    return make_geom(w, spatial_of(big), spatial_of(small));
  };
  // The few-channel direct kernels (direct_conv.h) take one input channel into several (the
  // main job's first layer) too: they hold 8 output channels' rows, or a channel pair's
  // window, where the depthwise loops ran a channel at a time (its forward 0.18 -> 0.14 ms,
  // its weight gradient 0.145 -> 0.087 ms, inside a training epoch).
  const bool direct =
      out.dtype == DType::F32 &&
      ((op.code == OpCode::Conv && direct_conv_fits(conv_geom(), G, xs[1], c_out, xs[0])) ||
       (op.code == OpCode::ConvWeightGrad &&
        direct_weight_grad_fits(conv_geom(), G, xs[1], c_out)));
  if (one_input_channel && !direct) {
    depthwise_conv(op.code, in, o, conv_geom(), c_out / G);
    return o;
  }
  auto run = [&]<class T>() {
    switch (op.code) {
      case OpCode::Conv:
        return conv_forward<T>(in[0], in[1], o, w);
      case OpCode::ConvTranspose:
        return conv_transpose_forward<T>(in[0], in[1], o, w);
      case OpCode::ConvWeightGrad:
        return conv_weight_grad<T>(in[0], in[1], o, w);
      case OpCode::Unfold:
        return unfold_forward<T>(in[0], o, w);
      case OpCode::Fold:
        return fold_forward<T>(in[0], o, w);
      default:
        throw Error("[" + std::string(name(op.code)) + "] is not a conv op");
    }
  };
  if (out.dtype == DType::F64)
    run.template operator()<double>();
  else
    run.template operator()<float>();
  return o;
}

template void im2col<float>(const float*, int64_t, const Geom&, float*, int64_t, bool);
template void im2col<double>(const double*, int64_t, const Geom&, double*, int64_t, bool);
template void im2col<uint8_t>(const uint8_t*, int64_t, const Geom&, uint8_t*, int64_t, bool);
template void col2im<float>(const float*, int64_t, const Geom&, float*, int64_t, bool);
template void col2im<double>(const double*, int64_t, const Geom&, double*, int64_t, bool);

}  // namespace ember::cpu
