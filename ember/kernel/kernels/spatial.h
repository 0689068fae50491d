// Spatial kernels written against the kernel IR, on [N, C, *spatial] tensors with 1 to 3
// spatial dims, with the CPU backend's semantics: max, average and adaptive average pooling
// and their backward ops, unfold (im2col) and fold (col2im). Interpolation is interpolate.h.
//
//   kernel::PoolSpec p{OpCode::MaxPool, DType::F32};
//   p.rank = 2;                                 // spatial dims
//   kernel::Kernel k = kernel::pool_kernel(p);
//   kernel::UnfoldSpec u{DType::F32};
//   u.fold = true;                              // col2im
//   kernel::Kernel f = kernel::unfold_kernel(u);
//
// Index parameters are i32, or i64 with `wide_index`; strides are in elements. Every kernel
// loops over its elements: launch any number of workgroups. f16/bf16 compute in f32 and
// round once, as the CPU backend. A window's geometry, r = rank spatial dims, is always
// passed the same way, the names being the forward op's (`in`: the image the window slides
// over, `out`: the window positions per dim, what infer gives):
//
// window   in0..in{r-1}, out0..out{r-1}, kernel0.., stride0.., padding0.., dilation0..
//         (the Window with infer's defaults filled in; ceil mode only changes `out`).
// adaptive in0..in{r-1}, out0..out{r-1}.
//
// Parameters, in order (x_stride0..x_stride{r+1}: strides of N, C and each spatial dim):
//
// MaxPool, AvgPool, AdaptiveAvgPool  x, out, n: ix (= N * C * prod(out)), channels (C), the
//         geometry, x_stride0... out is dense [N, C, *out].
// MaxPoolBackward  x, g, out, n (= N * C * prod(in)), channels, window, x_stride0..,
//         g_stride0... out (dense [N, C, *in]) gets, at each input, the sum of g over the
//         windows whose maximum it is, in output order (no atomics: bit-identical to the CPU).
//         A window's maximum is its first tap in window order that is above every earlier one
//         or NaN (so NaN wins, the last NaN of a window; padding never wins).
// AvgPoolBackward, AdaptiveAvgPoolBackward  g, out, n (= N * C * prod(in)), channels,
//         geometry, g_stride0..: out (dense [N, C, *in]) = the sum of g / divisor over the
//         windows holding each input, in output order.
//
// AvgPool's divisor: with count_include_pad, the window clipped to the padded input; without,
// the taps inside the input. Adaptive: output o of n covers [floor(o * in / n),
// ceil((o + 1) * in / n)).
//
// Unfold  x, out, n (= N * C * K * L), channels, window, x_stride0.., out_stride0..2 (of the
//         column tensor's dims [N, C * K, L]): out[n, c * K + tap, l] = x at window l's tap
//         (taps in row-major kernel order), 0 in the padding. K = prod(kernel), L = prod(out).
// Fold    x (columns [N, C * K, L]), out, n (= N * C * prod(in)), channels, window,
//         x_stride0..2: out dense [N, C, *in] = the sum over taps (in tap order) of the
//         columns landing on each position (the adjoint of Unfold, no atomics).
//
// Conv, ConvTranspose and ConvWeightGrad as Unfold/Fold plus a GEMM (cuBLASLt), G groups,
// cg = C_in / G, cog = C_out / G, K = prod(kernel), per image n and group grp (rows of the
// columns are c * K + tap, so a group's rows are a contiguous block of cg * K):
//  Conv(x, w [C_out, cg, *k])  cols = Unfold(x) [N, C_in * K, L];
//         y[n, grp] [cog, L] = w[grp] [cog, cg * K] x cols[n, grp] [cg * K, L] (a strided
//         batched GEMM over n and grp; a 1x1 stride-1 unpadded conv needs no Unfold).
//  ConvTranspose(x [N, C_in, *lx], w [C_in, cog, *k])  the window slides over y (in = y's
//         spatial size, out = x's): cols[n, grp] [cog * K, Lx] = w[grp]^T x x[n, grp]
//         [cg, Lx]; y = Fold(cols). Conv's input gradient is this with gy for x.
//  ConvWeightGrad(x, gy [N, C_out, *lo])  dw[grp] [cog, cg * K] = sum over n of gy[n, grp]
//         [cog, L] x cols[n, grp]^T. With Unfold's out strides set to lay the columns out as
//         [C_in * K, N, L] (out_stride = {L, N * L, 1}) and gy copied to [C_out, N, L] (a
//         permute: copy.h), this is one GEMM per group with inner size N * L.
//
// conv_direct_kernel, for small channel counts (depthwise, C_in / G of a few) where a GEMM
// does not pay: x, w, out, n (= N * C_out * prod(out)), in_channels, out_channels, groups,
// window, x_stride0..x_stride{r+1}, w_stride0..w_stride{r+1}. out (dense [N, C_out, *out])
// sums w * x over the group's input channels and the taps inside the input, in f32 for
// halves; no bias.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct PoolSpec {
  // MaxPool, MaxPoolBackward, AvgPool, AvgPoolBackward, AdaptiveAvgPool or
  // AdaptiveAvgPoolBackward
  OpCode op = OpCode::MaxPool;
  DType dtype = DType::F32;       // f64, f32, f16, bf16
  int rank = 2;                   // spatial dims, 1 to 3
  bool count_include_pad = true;  // AvgPool*: the Window's
  bool wide_index = false;
  int workgroup = 256;
};

struct UnfoldSpec {
  DType dtype = DType::F32;
  int rank = 2;       // spatial dims, 1 to 3
  bool fold = false;  // Fold (col2im) instead of Unfold (im2col)
  bool wide_index = false;
  int workgroup = 256;
};

struct ConvSpec {
  DType dtype = DType::F32;
  int rank = 2;  // spatial dims, 1 to 3
  bool wide_index = false;
  int workgroup = 256;
};

/// The kernel (ValueError for an op that is not a pool, a dtype that is not a float, or a rank
/// out of range).
EMBER_API Kernel pool_kernel(const PoolSpec& spec);
EMBER_API Kernel unfold_kernel(const UnfoldSpec& spec);
EMBER_API Kernel conv_direct_kernel(const ConvSpec& spec);

}  // namespace ember::kernel
