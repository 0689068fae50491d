// Internal: direct 2-d convolutions for few channels on AVX-512 and AVX2. im2col's column matrix
// and a GEMM whose small dimension is the channel count leave the micro-kernel's tile mostly idle
// when there are few channels, and Winograd's products are tiny there too. Here each task holds
// 8 output channels x 32 positions of one output row in registers and accumulates over every
// input channel and tap, reading the input rows themselves (a zero-padded copy of the batch)
// as vectors and the weights as broadcasts; nothing is packed but the weights, once a call.
// With 16 output channels or more a second kernel lays the channels across the lanes instead
// (direct_conv_lanes.cpp); on AVX2 that kernel, 8 channels a vector, takes the convolutions
// (direct_conv_avx2.cpp). Those of at most 27 input taps (a first layer's 3 x 3 x 3) put the
// positions across the lanes instead, on AVX2 and, for rows of 16 or more, on AVX-512
// (direct_conv_positions.cpp).
//
//   cpu::Geom g;  // 2D: in {1, 28, 28}, out {1, 28, 28}, a 3x3 window, padding 1
//   g.in[1] = g.in[2] = g.out[1] = g.out[2] = 28;
//   g.k[1] = g.k[2] = 3;
//   g.p[1] = g.p[2] = 1;
//   std::vector<float> x(2 * 16 * 784, 1.0f), w(16 * 16 * 9, 0.5f), y(2 * 16 * 784);
//   if (cpu::direct_conv_fits(g, 1, 16, 16))   // two images, 16 -> 16 channels
//     cpu::direct_conv_f32(x.data(), w.data(), y.data(), 2, 16, 16, g);
#pragma once
#include <cstdint>

#include "ember/backends/cpu/spatial.h"

namespace ember::cpu {

/// Whether a conv of geometry `g` with `groups`, `c_in` and `c_out` channels takes the direct
/// path: 2D, stride and dilation 1, one group, at most 32 x 9 input taps per output and 64
/// output channels, output rows of at least 8, on a CPU with AVX2 or AVX-512 (cpu_isa()), and
/// not where Winograd's F(4x4) runs ahead of it for n images (winograd.h);
/// EMBER_CPU_DIRECT_CONV=0 turns it off.
bool direct_conv_fits(const Geom& g, int64_t groups, int64_t c_in, int64_t c_out, int64_t n);

/// y [n, c_out, H', W'] = conv2d(x [n, c_in, H, W], w [c_out, c_in, kh, kw]) with g's padding;
/// all dense. Multithreaded over images, channel blocks and output rows.
void direct_conv_f32(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                     int64_t c_out, const Geom& g);

/// direct_conv_f32's kernel for 16 output channels or more (direct_conv_lanes.cpp): the
/// channels across a vector's lanes, up to 28 positions of a row per kernel call. Any c_out
/// works.
void direct_conv_lanes_f32(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                           int64_t c_out, const Geom& g);

/// Whether direct_conv_f32 takes direct_conv_positions_f32 for `g`: at most 27 input taps per
/// output (c_in x kh x kw: a first layer's 3 x 3 x 3), rows of 8 or more on AVX2, 16 or more
/// on AVX-512.
bool direct_conv_positions_fits(const Geom& g, int64_t groups, int64_t c_in);

/// direct_conv_f32's kernel for few input taps (direct_conv_positions.cpp): the output positions
/// across a vector's lanes, 3 output channels x 4 vectors of 8 a kernel call (AVX2), or 4 x 4
/// vectors of 16 (AVX-512, rows of 16 or more). Any c_out works; rows of 8 or more.
void direct_conv_positions_f32(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                               int64_t c_out, const Geom& g);

/// Whether conv_weight_grad of geometry `g` (the conv's input to its output) takes the direct
/// path (direct_weight_grad.cpp): 2D, a 3x3 window (or 5x5 with AVX-512), stride and dilation 1,
/// one group, at most 64 channels each side, AVX2 or AVX-512; EMBER_CPU_DIRECT_CONV=0 turns it
/// off too.
bool direct_weight_grad_fits(const Geom& g, int64_t groups, int64_t c_in, int64_t c_out);

/// dw [c_out, c_in, kh, kw] = the weight gradient of conv2d(x [n, c_in, H, W]) given its output
/// gradient gy [n, c_out, H', W'], with g's padding; all dense. Multithreaded over chunks of
/// images (sum_in_chunks: summed in a fixed order, whatever the thread count).
void direct_weight_grad_f32(const float* x, const float* gy, float* dw, int64_t n, int64_t c_in,
                            int64_t c_out, const Geom& g);

/// EMBER_CPU_DIRECT_CONV=0: the direct paths are off.
bool direct_conv_disabled();
/// What both direct paths need: AVX2 or AVX-512, not switched off, one group, 2D, stride and
/// dilation 1, 0 <= padding < window.
bool direct_geometry_fits(const Geom& g, int64_t groups);
/// The weights w [c_out][taps] in blocks of `width` output channels, as the direct kernels read
/// them: dst [ceil(c_out / width)][taps][width], zeros past c_out. Returns the packed buffer.
Scratch<float> pack_channel_blocks(const float* w, int64_t c_out, int64_t taps, int64_t width);
/// A band of `rows` padded rows of an image's c_in planes (H x W, at x), as the direct kernels
/// read it: row r of channel ic at dst[ic * plane + r * Wp] holds the image's row ih0 + r at
/// column pw with zeros around it, or zeros where that row is outside the image (the padding).
void copy_band(const float* x, int64_t c_in, int64_t H, int64_t W, int64_t ih0, int64_t rows,
               int64_t pw, int64_t Wp, int64_t plane, float* dst);
/// Copies `planes` planes of H x W floats into Hp x Wp ones at row ph and column pw, zeros
/// around them (what fits: rows or columns past Hp or Wp are dropped). Multithreaded.
void pad_planes(const float* x, int64_t planes, int64_t H, int64_t W, int64_t Hp, int64_t Wp,
                int64_t ph, int64_t pw, float* dst);

/// One instruction set's kernels for direct_conv_lanes_f32: sums[p][lanes] = sum over ic < c_in,
/// kh < KH, kw < KW of in[ic][kh][p + kw] * w[ic][kh][kw][lanes] for the call's `run` positions;
/// `in` rows are `row_stride` apart and its channels `plane` apart.
using LanesRun = void (*)(const float* in, int64_t plane, int64_t row_stride, int64_t c_in,
                          int64_t KH, int64_t KW, const float* w, float* sums);
struct LanesKernels {
  int64_t lanes;     // output channels a vector holds
  int64_t max_run;   // the most positions a call holds, any window
  int64_t max_run3;  // the same, windows 3 wide
  int64_t run_step;  // kernels exist for runs of run_step, 2 run_step, ... up to those
  LanesRun (*kernel)(bool three_wide, int64_t run);
  // y[j * channel_stride + p] = sums[p][j] for p < positions, j < channels
  void (*store)(const float* sums, int64_t positions, int64_t channels, float* y,
                int64_t channel_stride);
  // Windows 3 wide read in place from the image under a column padding of 0 or 1, for runs of
  // run_step multiples: a run at the row's left (right) edge skips the padding column, and with
  // `left` its `in` points at column 0, not at the padding column before it.
  LanesRun (*kernel3_in_place)(int64_t run, bool left, bool right);
};
const LanesKernels& lanes_kernels_avx512();  // direct_conv_lanes.cpp
const LanesKernels& lanes_kernels_avx2();    // direct_conv_avx2.cpp
/// The positions a lanes kernel call holds for output rows OW wide and windows KW wide, at the
/// CPU's instruction set: rows are cut in equal runs of at most max_run (max_run3).
int64_t lanes_run_length(int64_t OW, int64_t KW);

/// The 3x3 window's taps as (row, column, index) for X, which the weight-gradient kernels of
/// both instruction sets expand into one named accumulator per tap (an array of them GCC kept
/// in memory, storing each back after every FMA).
#define EMBER_DIRECT_TAPS3(X) \
  X(0, 0, 0) X(0, 1, 1) X(0, 2, 2) X(1, 0, 3) X(1, 1, 4) X(1, 2, 5) X(2, 0, 6) X(2, 1, 7) X(2, 2, 8)

/// One instruction set's weight-gradient kernel for 3x3 windows with the output channels across
/// the lanes (direct_weight_grad.cpp): out[(c * 9 + t) * lanes + lane] = sum over `imgs` images
/// and output positions of gt[img][pos][lane] * x[c][pos + tap t's shift], for the `ci` (up to
/// max_ci) input channels at x, `plane` apart; images x_img apart, rows Wp apart.
using WgradLanesRun = void (*)(const float* x, int64_t x_img, int64_t plane, int64_t Wp,
                               const float* gt, int64_t imgs, int64_t OH, int64_t OW, float* out);
struct WgradLanesKernels {
  int64_t lanes, max_ci;
  WgradLanesRun (*kernel)(int64_t ci);
};
const WgradLanesKernels& wgrad_lanes_avx512();  // direct_weight_grad.cpp
const WgradLanesKernels& wgrad_lanes_avx2();    // direct_conv_avx2.cpp

}  // namespace ember::cpu
