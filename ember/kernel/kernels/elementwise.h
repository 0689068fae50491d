// Elementwise kernels written once against the kernel IR: unary and binary ops of the op table
// over any strides with broadcasting (stride 0), and a vectorized path for dense data.
//
//   kernel::ElementwiseSpec s{OpCode::Add, DType::F32};
//   s.rank = 2;                                      // strided: shape and strides as parameters
//   kernel::Kernel k = kernel::elementwise_kernel(s);
//   s.contiguous = true;                             // dense: 16-byte vector loads and stores
//   kernel::Kernel fast = kernel::elementwise_kernel(s);
//
// Gelu and Silu (composites of one input) have kernels too: the decompositions' expressions.
//
// Parameters, in order: the inputs (x, or a and b), out, n (elements), then for the strided
// path shape0..shape{rank-1} and each input's strides (x_stride*, or a_stride* then b_stride*),
// in elements, 0 where the input is broadcast. The output is dense. Index parameters are i32,
// or i64 with `wide_index`. Launch any number of workgroups (the kernel loops over the
// elements); the dense path needs each pointer aligned to vector_width(dtype) elements.
#pragma once
#include <span>
#include <string>

#include "ember/core/export.h"
#include "ember/kernel/builder.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct ElementwiseSpec {
  OpCode op = OpCode::Add;
  DType dtype = DType::F32;  // of the inputs
  int rank = 1;              // strided path: rank of the (collapsed) output
  bool contiguous = false;   // every operand dense and of the output's shape
  /// Dense path: bit j set when input j is one element broadcast to every output (a scalar
  /// operand), read once; the others are dense.
  int scalar_inputs = 0;
  bool wide_index = false;  // i64 indices
  int workgroup = 256;
};

/// Whether `op` has an elementwise kernel here for inputs of `dtype`.
EMBER_API bool elementwise_supported(OpCode op, DType dtype);
/// The output element type (bool for comparisons and is_nan/is_inf).
EMBER_API DType elementwise_out_dtype(OpCode op, DType dtype);
/// Elements per thread on the dense path: 16 bytes' worth.
EMBER_API int vector_width(DType dtype);
/// The kernel (ValueError for an op or dtype without one).
EMBER_API Kernel elementwise_kernel(const ElementwiseSpec& spec);
/// `op` applied to values of the input dtype (lanes of any width): the expression Fusion
/// and the kernels share. Half types compute in f32.
EMBER_API Val apply_elementwise(KernelBuilder& kb, OpCode op, std::span<const Val> in);

}  // namespace ember::kernel
