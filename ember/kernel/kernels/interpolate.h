// Interpolation kernels written against the kernel IR: interpolate (nearest, linear over 1 to
// 3 dims, cubic) of [N, C, *spatial] tensors to an output size, and its backward op, with the
// CPU backend's (PyTorch's) coordinate rules: nearest reads floor(o * in / out) with the scale
// in f32; linear and cubic map output o to in / out * (o + 0.5) - 0.5 (linear clamps it at 0),
// or with align_corners to o * (in - 1) / (out - 1); linear with in == out copies; cubic is
// Keys' kernel with A = -0.75 and clamps its 4 taps to the input.
//
//   kernel::InterpolateSpec s{DType::F32, InterpMode::Linear};
//   s.rank = 2;                   // bilinear
//   s.align_corners = true;
//   kernel::Kernel k = kernel::interpolate_kernel(s);
//
// Parameters, in order (ix: i32, or i64 with `wide_index`; strides in elements):
//
// forward   x, out, n: ix (= N * C * prod(out)), channels (C), in0..in{r-1} (x's spatial
//          size), out0..out{r-1}, x_stride0..x_stride{r+1} (N, C, then the spatial dims).
//          out is dense [N, C, *out]; each output sums its taps' weighted inputs, the last
//          dim's taps outermost, as the CPU does.
// backward  g, out, n (= N * C * prod(out), g's elements), channels, in0.., out0..,
//          g_stride0... out: dense [N, C, *in] of interpolate_accumulator(dtype), zeroed by
//          the caller; every gradient element adds weight * g to its taps by atomics (cast
//          back for f16/bf16 with copy.h). The order of the adds varies from run to run.
//
// f16/bf16 compute in f32 (the CPU computes in f32 and rounds once). Launch any number of
// workgroups: the kernels loop over their elements.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct InterpolateSpec {
  DType dtype = DType::F32;  // f64, f32, f16, bf16
  InterpMode mode = InterpMode::Nearest;
  int rank = 2;                // spatial dims, 1 to 3 (the op takes cubic in 2)
  bool align_corners = false;  // linear and cubic
  bool backward = false;       // InterpolateBackward
  bool wide_index = false;
  int workgroup = 256;
};

/// The element type the backward kernel adds into: f32 for f16/bf16, the dtype otherwise.
EMBER_API DType interpolate_accumulator(DType dtype);

/// The kernel (ValueError for a dtype that is not a float or a rank out of range).
EMBER_API Kernel interpolate_kernel(const InterpolateSpec& spec);

}  // namespace ember::kernel
