// Internal: the CPU kernel families, one file each. Each family is a template over the element
// type it runs on, and its file defines ember::cpu::kernel<Family, T> for every type
// (EMBER_CPU_DEFINE_KERNELS) so that the table of kernel_table.h picks them at link time.
#pragma once
#include <vector>

#include "ember/backends/cpu/kernel_table.h"
#include "ember/backends/cpu/strided.h"

namespace ember::cpu {

using Inputs = std::span<CpuTensor>;

template <class T>
CpuTensor create(const Op& op, Inputs in, const TensorMeta& out);
template <class T>
CpuTensor unary(const Op& op, Inputs in, const TensorMeta& out);
template <class T>
CpuTensor binary(const Op& op, Inputs in, const TensorMeta& out);  // also Compare
template <class T>
CpuTensor where(const Op& op, Inputs in, const TensorMeta& out);
template <class T>
CpuTensor cast(const Op& op, Inputs in, const TensorMeta& out);  // T: the source type
template <class T>
CpuTensor reduce(const Op& op, Inputs in, const TensorMeta& out);
template <class T>
CpuTensor scan(const Op& op, Inputs in, const TensorMeta& out);
template <class T>
CpuTensor argsort(const Op& op, Inputs in, const TensorMeta& out);
template <class T>
CpuTensor movement(const Op& op, Inputs in, const TensorMeta& out);
template <class T>
CpuTensor index(const Op& op, Inputs in, const TensorMeta& out);
template <class T>
CpuTensor matmul(const Op& op, Inputs in, const TensorMeta& out);
/// Conv, pooling, interpolation, unfold/fold (spatial.cpp, conv.cpp, pool.cpp, interpolate.cpp).
template <class T>
CpuTensor spatial(const Op& op, Inputs in, const TensorMeta& out);
/// Fused kernels for composite ops (softmax, log_softmax, attention).
template <class T>
CpuTensor composite(const Op& op, Inputs in, const TensorMeta& out);
bool has_composite_kernel(OpCode c);
/// The attention op, fused (attention.cpp).
CpuTensor attention(const Op& op, Inputs in, const TensorMeta& out);
/// int_matmul: 8-bit operands, i32 sums, on AVX-512 VNNI where the CPU has it (matmul.cpp).
CpuTensor int_matmul(const Op& op, Inputs in, const TensorMeta& out);
/// int_conv: 8-bit operands, i32 sums, on AVX-512 VNNI where the CPU has it (int_conv.cpp).
CpuTensor int_conv(const Op& op, Inputs in, const TensorMeta& out);
/// relu's gradient, g where x > 0 else 0, in one pass (binary.cpp); T not bool.
template <class T>
CpuTensor relu_backward(const Op& op, Inputs in, const TensorMeta& out);
/// lerp, addcmul and adaptive_step in one pass (update_ops.cpp); T a float type.
bool is_update_op(OpCode c);
template <class T>
CpuTensor update_op(const Op& op, Inputs in, const TensorMeta& out);

/// Runs an op on the kernel the program's table has for it (what Cpu::run does); kernels call
/// it for the ops they are made of, so a left-out kernel fails with its name there too.
CpuTensor run_kernel(const Op& op, Inputs in, const TensorMeta& out);
/// `t` converted to `dt` (the Cast kernel of t's type), or `t` itself when it has that type.
CpuTensor cast_to(const CpuTensor& t, DType dt);

/// An op on f16 or bf16 run as its f32 kernel: the operands of the output's type widened, the
/// f32 result rounded once to it. `kernel(inputs, meta)` is the f32 kernel.
template <class K>
CpuTensor through_f32(Inputs in, const TensorMeta& out, K&& kernel) {
  std::vector<CpuTensor> f32(in.begin(), in.end());
  for (CpuTensor& t : f32)
    if (t.meta.dtype == out.dtype) t = cast_to(t, DType::F32);
  return cast_to(kernel(Inputs(f32), TensorMeta{out.shape, DType::F32}), out.dtype);
}

/// Copies `src` (any strides) into `dst` (any strides) of the same shape and dtype.
void copy_into(const CpuTensor& src, const CpuTensor& dst);

}  // namespace ember::cpu

// ember::cpu::kernel<OpFamily::F, T> for every element type T, as fn<T> (in namespace ember::cpu).
#define EMBER_CPU_DEFINE_KERNEL(F, fn, T)                                                      \
  template <>                                                                                  \
  EMBER_API CpuTensor kernel<OpFamily::F, T>(const Op& op, Inputs in, const TensorMeta& out) { \
    return fn<T>(op, in, out);                                                                 \
  }
#define EMBER_CPU_DEFINE_KERNELS(F, fn)         \
  EMBER_CPU_DEFINE_KERNEL(F, fn, double)        \
  EMBER_CPU_DEFINE_KERNEL(F, fn, float)         \
  EMBER_CPU_DEFINE_KERNEL(F, fn, ::ember::f16)  \
  EMBER_CPU_DEFINE_KERNEL(F, fn, ::ember::bf16) \
  EMBER_CPU_DEFINE_KERNEL(F, fn, int64_t)       \
  EMBER_CPU_DEFINE_KERNEL(F, fn, int32_t)       \
  EMBER_CPU_DEFINE_KERNEL(F, fn, int16_t)       \
  EMBER_CPU_DEFINE_KERNEL(F, fn, int8_t)        \
  EMBER_CPU_DEFINE_KERNEL(F, fn, uint8_t)       \
  EMBER_CPU_DEFINE_KERNEL(F, fn, bool)
