// One kernel for a fused program (ember/fusion/program.h): every input read once, the steps
// computed in registers, only the program's outputs written.
//
//   fusion::Program p;                       // exp(x) * 0.5 on 1024 floats
//   p.shape = Shape{1024};
//   p.inputs = {{p.shape, DType::F32}};
//   auto e = p.step(OpCode::Exp, DType::F32, {fusion::Program::input(0)});
//   p.outputs = {p.step(OpCode::Mul, DType::F32, {e, p.constant(0.5, DType::F32)})};
//   kernel::FusedLayout L;
//   L.dense = true;                          // every input dense or one element: 16-byte vectors
//   L.width = 4;
//   kernel::Kernel k = kernel::fused_kernel(p, L);
//
// Parameters, in order: the inputs in0.. (read), the outputs out0.. (write, dense), n
// (elements), then for the strided layout shape0..shape{rank-1} and each input's strides
// (in elements, 0 where it is broadcast), then the constants c0.. (the Full steps' values:
// f64 for f64 steps, i64 for integer steps, f32 for the rest). Index parameters are i32, or
// i64 with `wide_index`. Launch any number of workgroups: the kernel loops over the elements.
//
// A program with a reduction (p.reduction: sum, max or min) sees its elements as
// [outputs, size]: the kept dims (merged to rank `kept`, 0 for a reduction to one value) and
// the reduced dims (rank `reduced`). Each element's steps run once, as the reduction reads it;
// outputs are written too. Parameters: in0.., out0.. (dense, the program's shape), red (the
// result, dense), outputs, size, kept0.., reduced0.., each input's strides over the kept then
// the reduced dims (in0_k0.., in0_r0..), the outputs' strides the same way (o_k0.., o_r0..;
// only when there are outputs), then the constants. `per_workgroup`: a workgroup per result,
// its threads striding over the reduced elements (reduced dims innermost); otherwise a thread
// per result looping over them (loads coalesced across neighbouring results). Sums accumulate
// in f32 (f64 for f64); max and min propagate NaN.
#pragma once
#include <cstdint>
#include <string>

#include "ember/core/export.h"
#include "ember/fusion/program.h"
#include "ember/kernel/ir.h"

namespace ember::kernel {

struct FusedLayout {
  bool dense = false;          // every input dense (or one element) and aligned to `width`
  int width = 1;               // dense: elements per thread and access (16 bytes' worth)
  uint32_t scalar_inputs = 0;  // dense: bit j when input j is one element read once
  int rank = 1;                // strided: rank of the merged shape
  bool wide_index = false;
  int workgroup = 256;
  // Programs with a reduction (below): merged ranks of the kept and the reduced dims.
  int kept = 0;
  int reduced = 0;
  bool per_workgroup = false;
  /// What a compiled kernel is cached under together with the program's signature.
  std::string key() const;
};

/// Whether a step of this op and operand dtype has a kernel expression (the fusible ops).
EMBER_API bool fused_step_supported(OpCode op, DType operand, DType out);
/// The kernel (ValueError for an op without an expression, or more than 8 dims).
EMBER_API Kernel fused_kernel(const fusion::Program& p, const FusedLayout& layout);
/// The scalar type constant `c` of `p` is passed as.
EMBER_API ScalarType fused_constant_type(DType step_dtype);

}  // namespace ember::kernel
