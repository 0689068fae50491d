// Internal: 3x3 convolutions with stride 1 by Winograd's minimal filtering F(MxM, 3x3): each
// MxM block of outputs from an (M+2)x(M+2) block of inputs with (M+2)^2 multiplies per (input,
// output) channel pair instead of 9 M^2: the GEMMs do 2.25x (M = 2) or 4x (M = 4) less work
// than im2col's. M as winograd_tile picks it; M = 4's transforms (points 0, +-1, +-2) round a
// little more than M = 2's (the tests bound both against a direct convolution).
//
// The weight goes to U = G w G^T ((M+2)^2 matrices of c_out x c_in) once a call, each packed
// once for the GEMM's micro-kernel (gemm.h's PanelGemmF32). The outputs are cut in MxM tiles
// and the tiles in chunks of whole tile rows; per chunk, on one thread: the inputs of its tiles
// (from a zero-padded copy of the rows they read, split by column phase) go to V = B^T d B
// ((M+2)^2 matrices of c_in x tiles, where the micro-kernel reads them: nothing is packed per
// chunk), one product each gives M = U V, and A^T M A gives the outputs. A chunk's matrices
// stay in the core's L2 between the three steps; the transforms run 8 tiles at a time on
// vectors, across tile rows where the rows are narrower than that (the chunk's tiles end to end,
// each window column of them in its own array).
//
//   cpu::Geom g;  // 2D: in {1, 8, 8}, out {1, 8, 8}, a 3x3 window, padding 1
//   g.in[1] = g.in[2] = g.out[1] = g.out[2] = 8;
//   g.k[1] = g.k[2] = 3;
//   g.p[1] = g.p[2] = 1;
//   std::vector<float> x(16 * 64, 1.0f), w(16 * 16 * 9, 0.5f), y(16 * 64);
//   if (cpu::winograd_fits(g, 1, 16, 16))   // one image, 16 -> 16 channels
//     cpu::winograd_conv_f32(x.data(), w.data(), y.data(), 1, 16, 16, g);
#pragma once
#include <cstdint>
#include <vector>

#include "ember/backends/cpu/spatial.h"

namespace ember::cpu {

/// F(4x4, 3x3)'s weight transform G (interpolation points 0, 1, -1, 2, -2 and infinity): U =
/// G w G^T; both F(4x4) paths and the fused weight gradient's G^T (.) G use it.
inline constexpr float kWinograd4G[6][3] = {{1.0f / 4, 0, 0},
                                            {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                                            {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                                            {1.0f / 24, 1.0f / 12, 1.0f / 6},
                                            {1.0f / 24, -1.0f / 12, 1.0f / 6},
                                            {0, 0, 1}};

/// Whether a conv of geometry `g` (2D, 3x3, stride 1, dilation 1), `groups` 1, and at least 16
/// input and output channels takes this path (EMBER_CPU_WINOGRAD=0 turns it off).
bool winograd_fits(const Geom& g, int64_t groups, int64_t c_in, int64_t c_out);

/// The tile side M for `g`: 4 wherever winograd_fused_fits (AVX-512); elsewhere 4 where the
/// output is at least 8 high and either 29 wide or more (8 tiles a row, the transforms'
/// vectors) with both channel counts at least 32, or narrower
/// (tile rows laid end to end) with 16 tiles an image or more and neither channel count above
/// three times the tiles; else 2. Measured on two threads of an AVX2 machine
/// (docs/cpu-measurements.md):
/// 16 -> 16 on 28x28, batch 64, 1.20 ms with F(4x4) against 1.29 with F(2x2) and 1.43 direct;
/// 64 -> 64 on 14x14 (16 tiles an image), 0.73 against 0.61. EMBER_CPU_WINOGRAD=2 or 4 forces
/// one.
int winograd_tile(const Geom& g, int64_t c_in, int64_t c_out);

/// Whether Winograd pays against im2col and the GEMM for n images where winograd_fits: the
/// products of each of its 16 or 36 positions have the images' tiles as their columns, so with
/// few outputs they are thin and read all of the transformed weights (1.8 or 4 times the
/// weights) for little work, and the unfused forms run each image's tiles apart. On 2 threads of
/// a Zen 4 (docs/cpu-measurements.md), 512 -> 512 on one 7x7 image took 4.3-5.0 ms by F(2x2)
/// and 2.0 by the GEMM. Unfused, from 196 outputs (the images' positions together) and 16 tiles
/// an image; fused (AVX-512's F(4x4), tiles of all images end to end), from 128 outputs.
/// EMBER_CPU_WINOGRAD=2 or 4 takes Winograd wherever it fits.
bool winograd_pays(const Geom& g, int64_t n, int64_t c_in, int64_t c_out);

/// Whether g's output rows hold fewer than 8 tiles of 4 (28 wide or less), which F(4x4, 3x3)
/// lays end to end.
bool winograd_rows_end_to_end(const Geom& g);

/// y [n, c_out, H', W'] = conv2d(x [n, c_in, H, W], w [c_out, c_in, 3, 3]) with g's padding; all
/// dense. `tile`: M (2 or 4), 0 for winograd_tile. `transposed`: w is a transposed conv's weight
/// [c_in, c_out, 3, 3], used turned around (the stride-1 transposed conv, g its flipped_geom),
/// read in place by the weight transform. Multithreaded over chunks of tiles.
void winograd_conv_f32(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                       int64_t c_out, const Geom& g, int tile = 0, bool transposed = false);

/// Whether winograd_fused_f32 (winograd_avx512.cpp) runs F(4x4) for these channel counts: the
/// CPU has AVX-512 (under the cap, cpu/isa.h), c_out is a multiple of 16, c_in + c_out <= 384.
bool winograd_fused_fits(int64_t c_in, int64_t c_out);

/// winograd_conv_f32 with F(4x4) where winograd_fused_fits: 16 tiles a vector, the tiles of all
/// images end to end, each block of tiles through all the steps on one thread.
void winograd_fused_f32(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                        int64_t c_out, const Geom& g);

/// Whether winograd_fused_weight_grad_f32 runs for a conv of geometry g (winograd_fits) and these
/// channel counts: winograd_fused_fits, c_in a multiple of 16, and past 64 channels each an
/// output of 49 tiles (28x28) or more.
bool winograd_fused_weight_grad_fits(const Geom& g, int64_t c_in, int64_t c_out);

/// dw [c_out, c_in, 3, 3] = the weight gradient of conv2d(x [n, c_in, H, W]) given gy [n, c_out,
/// H', W'] (g's padding, all dense) through F(4x4, 3x3) fused as winograd_fused_f32 runs it: per
/// block of tiles the input and the output gradient transformed (Z = A gy A^T), their products
/// summed over the tiles for each of the 36 points, and G^T (.) G back to 3x3. The blocks add in
/// a fixed number of chunks, in order, whatever the thread count.
void winograd_fused_weight_grad_f32(const float* x, const float* gy, float* dw, int64_t n,
                                    int64_t c_in, int64_t c_out, const Geom& g);

/// Whether conv_weight_grad of geometry `g` takes winograd_weight_grad_f32 (winograd_wgrad.cpp):
/// winograd_fits (EMBER_CPU_WINOGRAD=0 turns this off too), both channel counts at least 32 and
/// output rows of 8 or more. conv_weight_grad takes it there but where the fused F(4x4) fits
/// (winograd_fused_weight_grad_fits) or AVX-512's direct kernels apply (up to 64 channels), both
/// faster on an AVX-512 CPU.
bool winograd_weight_grad_fits(const Geom& g, int64_t groups, int64_t c_in, int64_t c_out);

/// dw [c_out, c_in, 3, 3] = the weight gradient of conv2d(x [n, c_in, H, W]) given its output
/// gradient gy [n, c_out, H', W'], with g's padding, by F(3x3, 2x2); all dense. The images add
/// in order, whatever the thread count.
void winograd_weight_grad_f32(const float* x, const float* gy, float* dw, int64_t n, int64_t c_in,
                              int64_t c_out, const Geom& g);

}  // namespace ember::cpu
