// The direct convolution with the output channels across a vector's lanes, for 16 output
// channels or more (direct_conv.cpp's row kernel takes fewer). A kernel call holds up to 28
// output positions of one row for 16 channels, one register each, and accumulates over every
// input channel and tap. Windows 3 wide broadcast each input into a register once for the three
// taps that read it; other windows take one FMA per position and tap with the input broadcast
// from memory, the pattern of oneDNN's direct kernels. The inputs are read from a zero-padded
// copy of a band of rows, made per task in the core's cache, or in place from the image (windows
// 3 wide, a column padding of 0 or 1, every run of a row a kernel's length): the runs at a row's
// edges leave out the padding column, and the rows near the top and bottom the window rows over
// the padding, with weights packed for each set of window rows. The copy took a fifth of a 32 ->
// 32 conv on 32x32 on AVX2 (8.3 -> 6.5-7.7 ms on one thread without it), and of 16 -> 16 on 28x28
// on AVX-512 (a Zen 4, one thread: 2.73 -> 2.23 ms; its rows of 28 copied by memcpy calls). The
// sums leave through 16 x 16 transposes into the NCHW output. The driver below runs AVX2's kernels
// the same way, 8 channels a vector (direct_conv_avx2.cpp).
#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ember/backends/cpu/direct_conv.h"
#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/strided.h"
#include "ember/backends/cpu/transpose16.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

#if defined(__x86_64__)
namespace {

constexpr int64_t kLanes = 16;    // output channels per vector
constexpr int64_t kMaxRun = 28;   // positions a kernel call holds (28 sums + the weights)
constexpr int64_t kBandRows = 8;  // output rows a task computes
constexpr int64_t kRunStep = 2;   // kernels exist for runs of 2, 4, ..., 28 positions

// sums[p][16] = sum over ic < c_in, kh < KH, kw < KW of in[ic][kh][p + kw] * w[ic][kh][kw][16],
// for p < R; `in` rows are `row_stride` apart and its channels `plane` apart.
template <int R>
__attribute__((target("avx512f"))) void run_kernel(const float* in, int64_t plane,
                                                   int64_t row_stride, int64_t c_in, int64_t KH,
                                                   int64_t KW, const float* w, float* sums) {
  __m512 acc[R];
#pragma GCC unroll 32
  for (int p = 0; p < R; ++p) acc[p] = _mm512_setzero_ps();
  for (int64_t ic = 0; ic < c_in; ++ic, in += plane)
    for (int64_t kh = 0; kh < KH; ++kh) {
      const float* row = in + kh * row_stride;
      for (int64_t kw = 0; kw < KW; ++kw, w += kLanes) {
        const __m512 wv = _mm512_loadu_ps(w);
        const float* x = row + kw;
        // The broadcast stays a memory operand of the FMA. Written with intrinsics, GCC keeps
        // the broadcasts in registers to reuse them at the next tap (x + 1) and spills the
        // sums instead, at about half the speed. (Unrolling the 3x3 window was slower too.)
#pragma GCC unroll 32
        for (int p = 0; p < R; ++p)
          asm("vfmadd231ps %[x]%{1to16%}, %[w], %[acc]"
              : [acc] "+v"(acc[p])
              : [w] "v"(wv), [x] "m"(x[p]));
      }
    }
#pragma GCC unroll 32
  for (int p = 0; p < R; ++p) _mm512_storeu_ps(sums + p * kLanes, acc[p]);
}

// The same sums for windows 3 wide, each input broadcast into a register once for the three
// taps of its row that read it: x[j] feeds position j with tap 0, j - 1 with tap 1 and j - 2
// with tap 2. Per row of the window: 3 weight loads, R + 2 broadcasts and 3R FMAs on registers.
// L and Rt: the run starts or ends at a row's edge under a padding of 1, read in place from the
// image. x[0] (L) or x[R + 1] (Rt) is then a padding zero, not read: with L, `in` points at x[1].
template <int R, bool L, bool Rt>
__attribute__((target("avx512f"))) void run_kernel3(const float* in, int64_t plane,
                                                    int64_t row_stride, int64_t c_in, int64_t KH,
                                                    int64_t /*KW: 3*/, const float* w,
                                                    float* sums) {
  __m512 acc[R];
#pragma GCC unroll 32
  for (int p = 0; p < R; ++p) acc[p] = _mm512_setzero_ps();
  for (int64_t ic = 0; ic < c_in; ++ic, in += plane)
    for (int64_t kh = 0; kh < KH; ++kh, w += 3 * kLanes) {
      const float* x = in + kh * row_stride;
      const __m512 w0 = _mm512_loadu_ps(w), w1 = _mm512_loadu_ps(w + kLanes),
                   w2 = _mm512_loadu_ps(w + 2 * kLanes);
#pragma GCC unroll 32
      for (int j = L ? 1 : 0; j < (Rt ? R + 1 : R + 2); ++j) {
        __m512 b;
        asm("vbroadcastss %[x], %[b]" : [b] "=v"(b) : [x] "m"(x[j - (L ? 1 : 0)]));
        if (j < R) acc[j] = _mm512_fmadd_ps(b, w0, acc[j]);
        if (j >= 1 && j <= R) acc[j - 1] = _mm512_fmadd_ps(b, w1, acc[j - 1]);
        if (j >= 2) acc[j - 2] = _mm512_fmadd_ps(b, w2, acc[j - 2]);
      }
    }
#pragma GCC unroll 32
  for (int p = 0; p < R; ++p) _mm512_storeu_ps(sums + p * kLanes, acc[p]);
}

template <int... I>
constexpr auto kernel_table(std::integer_sequence<int, I...>) {
  return std::array<LanesRun, sizeof...(I)>{&run_kernel<(I + 1) * kRunStep>...};
}
template <bool L, bool Rt, int... I>
constexpr auto kernel3_table(std::integer_sequence<int, I...>) {
  return std::array<LanesRun, sizeof...(I)>{&run_kernel3<(I + 1) * kRunStep, L, Rt>...};
}
// kKernels[i] holds (i + 1) * 2 positions; kKernels3[left edge][right edge][i] likewise, for
// windows 3 wide, up to 26 positions (the sums, 3 weight vectors and a broadcast take 30 of the
// 32 registers).
constexpr auto kKernels = kernel_table(std::make_integer_sequence<int, kMaxRun / kRunStep>{});
constexpr int64_t kMaxRun3 = 26;
using Runs3 = std::make_integer_sequence<int, kMaxRun3 / kRunStep>;
constexpr std::array<LanesRun, kMaxRun3 / kRunStep> kKernels3[2][2] = {
    {kernel3_table<false, false>(Runs3{}), kernel3_table<false, true>(Runs3{})},
    {kernel3_table<true, false>(Runs3{}), kernel3_table<true, true>(Runs3{})}};

// y[j * channel_stride + p] = sums[p][j] for p < positions, j < channels.
__attribute__((target("avx512f"))) void store_transposed(const float* sums, int64_t positions,
                                                         int64_t channels, float* y,
                                                         int64_t channel_stride) {
  for (int64_t p0 = 0; p0 < positions; p0 += kLanes) {
    const int64_t n = std::min(kLanes, positions - p0);
    __m512 r[16];
    for (int64_t i = 0; i < 16; ++i)
      r[i] = i < n ? _mm512_loadu_ps(sums + (p0 + i) * kLanes) : _mm512_setzero_ps();
    transpose16(r);
    const __mmask16 m = n >= kLanes ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
    for (int64_t j = 0; j < channels; ++j)
      _mm512_mask_storeu_ps(y + j * channel_stride + p0, m, r[j]);
  }
}

}  // namespace

const LanesKernels& lanes_kernels_avx512() {
  static const LanesKernels k{kLanes,
                              kMaxRun,
                              kMaxRun3,
                              kRunStep,
                              [](bool three, int64_t run) {
                                // indexed per table: GCC 12 with -fsanitize=address,undefined
                                // compiled the one expression over either table's data() to a fixed
                                // index -1 for kKernels
                                const size_t i = size_t(run / kRunStep - 1);
                                return three ? kKernels3[0][0][i] : kKernels[i];
                              },
                              store_transposed,
                              [](int64_t run, bool left, bool right) {
                                return kKernels3[left][right][size_t(run / kRunStep - 1)];
                              }};
  return k;
}

namespace {
const LanesKernels& lanes_kernels() {
  return cpu_isa() >= CpuIsa::Avx512 ? lanes_kernels_avx512() : lanes_kernels_avx2();
}
// The shortest run at least `len` positions long that has a kernel.
int64_t run_with_kernel(const LanesKernels& ks, int64_t len) {
  return (len + ks.run_step - 1) / ks.run_step * ks.run_step;
}
// Each output row is `runs` runs of `run` positions (the last may be shorter).
struct Runs {
  int64_t runs, run;
};
Runs split_row(const LanesKernels& ks, int64_t OW, int64_t KW) {
  const int64_t most = KW == 3 ? ks.max_run3 : ks.max_run, runs = (OW + most - 1) / most;
  return {runs, run_with_kernel(ks, (OW + runs - 1) / runs)};
}
}  // namespace

int64_t lanes_run_length(int64_t OW, int64_t KW) { return split_row(lanes_kernels(), OW, KW).run; }

namespace {
// The weights an output row's window rows use, packed for the kernels: rows whose window
// reaches over the top or bottom padding skip those window rows, in place (no zero rows to read).
struct WindowRows {
  int64_t first, count;
  bool operator==(const WindowRows&) const = default;
};
WindowRows window_rows(int64_t oh, int64_t H, int64_t KH, int64_t ph) {
  const int64_t first = std::max<int64_t>(0, ph - oh);
  return {first, std::max<int64_t>(0, std::min(KH, H + ph - oh) - first)};
}
// w [c_out][c_in][KH][KW] restricted to window rows `r`, packed in blocks of `lanes` channels.
Scratch<float> pack_window_rows(const float* w, int64_t c_out, int64_t c_in, int64_t KH, int64_t KW,
                                WindowRows r, int64_t lanes) {
  std::vector<float> sub(size_t(c_out * c_in * r.count * KW));
  float* d = sub.data();
  for (int64_t oc = 0; oc < c_out; ++oc)
    for (int64_t ic = 0; ic < c_in; ++ic, d += r.count * KW)
      std::copy_n(w + ((oc * c_in + ic) * KH + r.first) * KW, r.count * KW, d);
  return pack_channel_blocks(sub.data(), c_out, c_in * r.count * KW, lanes);
}
}  // namespace

void direct_conv_lanes_f32(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                           int64_t c_out, const Geom& g) {
  const LanesKernels& ks = lanes_kernels();
  const int64_t lanes = ks.lanes;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t KH = g.k[1], KW = g.k[2], ph = g.p[1], pw = g.p[2];
  const bool three = KW == 3;
  // (not a structured binding: the lambda below captures them, which clang before 16 refuses)
  const Runs split = split_row(ks, OW, KW);
  const int64_t runs = split.runs, run = split.run;
  // Windows 3 wide with a column padding of at most 1 read the image in place where every run
  // has a kernel of its own length (a longer one would read past the row's end); the rest read
  // a zero-padded copy of each band.
  const bool runs_exact = run % ks.run_step == 0 && (OW - (runs - 1) * run) % ks.run_step == 0;
  const bool in_place = three && pw <= 1 && runs_exact;
  // A band's padded copy: per input channel, the band's rows and the window's extra rows, each
  // row the image's at column pw with zeros around it and past the last run's reads.
  const int64_t band = std::min(OH, kBandRows), bands = (OH + band - 1) / band;
  const int64_t Wp = runs * run + KW - 1, band_in = band + KH - 1;
  const int64_t plane = in_place ? H * W : band_in * Wp, row_stride = in_place ? W : Wp;
  // Weights per block of `lanes` output channels: [block][c_in][window rows][KW][lanes], one
  // packing per distinct set of window rows the output rows use (the band's copy has every
  // window row; read in place, rows near the top and bottom use fewer).
  const int64_t blocks = (c_out + lanes - 1) / lanes;
  std::vector<WindowRows> row_sets;
  std::vector<Scratch<float>> packs;
  std::vector<int64_t> pack_of_row(size_t(OH), 0);
  for (int64_t oh = 0; oh < OH; ++oh) {
    const WindowRows r = in_place ? window_rows(oh, H, KH, ph) : WindowRows{0, KH};
    const auto it = std::find(row_sets.begin(), row_sets.end(), r);
    pack_of_row[size_t(oh)] = it - row_sets.begin();
    if (it == row_sets.end()) {
      row_sets.push_back(r);
      packs.push_back(pack_window_rows(w, c_out, c_in, KH, KW, r, lanes));
    }
  }
  // Each run's kernel (a row's last, shorter run takes the kernel of its own length; read in
  // place, the runs at the edges leave out the padding) and where it reads from the row's
  // start: its first position, less the padding, where the copy has it.
  std::vector<LanesRun> run_kernels;
  std::vector<int64_t> run_reads;
  for (int64_t ow = 0; ow < OW; ow += run) {
    const int64_t len = std::min(run, OW - ow), klen = run_with_kernel(ks, len);
    if (in_place) {
      const bool left = pw == 1 && ow == 0, right = pw == 1 && ow + len == OW;
      run_kernels.push_back(ks.kernel3_in_place(klen, left, right));
      run_reads.push_back(ow - pw + (left ? 1 : 0));
    } else {
      run_kernels.push_back(ks.kernel(three, klen));
      run_reads.push_back(ow);
    }
  }
  const int64_t taps = c_in * KH * KW;
  const int64_t work = blocks * taps * band * runs * run * lanes / kLanes;  // in 16-lane FMAs
  parallel_for(
      n * bands, std::max<int64_t>(1, kGrain * 4 / std::max<int64_t>(work, 1)),
      [&](int64_t t0, int64_t t1) {
        Scratch<float> in(in_place ? 0 : c_in * plane);
        // One output row's sums, [position][lanes], stored once the row's runs are done: the
        // row's groups of `lanes` positions leave by whole transposes, not the runs' groups.
        Scratch<float> sums(runs * run * lanes);
        for (int64_t task = t0; task < t1; ++task) {
          const int64_t img = task / bands, oh0 = task % bands * band;
          const int64_t rows = std::min(band, OH - oh0);
          float* buf = in.get();
          if (!in_place)
            copy_band(x + img * c_in * H * W, c_in, H, W, oh0 - ph, rows + KH - 1, pw, Wp, plane,
                      buf);
          for (int64_t b = 0; b < blocks; ++b) {
            const int64_t channels = std::min(lanes, c_out - b * lanes);
            float* yb = y + (img * c_out + b * lanes) * OH * OW;
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t oh = oh0 + r, pack = pack_of_row[size_t(oh)];
              const WindowRows window = row_sets[size_t(pack)];
              const float* wb = packs[size_t(pack)].get() + b * c_in * window.count * KW * lanes;
              // The row's first window row: in the band's copy, or in the image itself.
              const float* src =
                  in_place ? x + (img * c_in * H + oh - ph + window.first) * W : buf + r * Wp;
              // Read in place, the input rows come from memory as the first block reaches
              // them: its rows fetch, for every channel, the last window row of the output row
              // 3 ahead (into the next band at a band's end). 16 -> 16 on 28x28: 3.8 -> 3.4 ms
              // on one thread, 1.91 -> 1.77 on two.
              const int64_t ahead = oh - ph + KH + 2;
              if (in_place && b == 0 && ahead < H)
                for (int64_t ic = 0; ic < c_in; ++ic)
                  for (int64_t j = 0; j < W; j += 16)
                    __builtin_prefetch(x + ((img * c_in + ic) * H + ahead) * W + j);
              for (size_t i = 0; i < run_kernels.size(); ++i)
                run_kernels[i](src + run_reads[i], plane, row_stride, c_in, window.count, KW, wb,
                               sums.get() + int64_t(i) * run * lanes);
              ks.store(sums.get(), OW, channels, yb + oh * OW, OH * OW);
            }
          }
        }
      });
}
#else
void direct_conv_lanes_f32(const float*, const float*, float*, int64_t, int64_t, int64_t,
                           const Geom&) {}
#endif

}  // namespace ember::cpu
