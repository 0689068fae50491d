// The CUDA C++ renderer: a validated kernel becomes one `extern "C" __global__` function
// (f16/bf16 through cuda_fp16.h / cuda_bf16.h), ready for NVRTC (codegen/nvrtc.h).
//
//   kernel::KernelBuilder kb("fill");
//   kernel::Mem out = kb.buffer("out", kernel::ScalarType::F32, kernel::Access::Write);
//   kb.store(out, kb.global_id(0), kb.lit(kernel::ScalarType::F32, 1));
//   std::string src = kernel::render_cuda(kb.finish());
//
// Parameters keep their order: buffers are device pointers, scalars are passed by value.
// Values are `_v<N>`; vectors are `ember_vec<T, N>` (aligned, so vector loads are single
// instructions).
#pragma once
#include <string>

#include "ember/core/export.h"
#include "ember/kernel/ir.h"

namespace ember::kernel {

/// CUDA C++ source of `k` (validated first: ValueError when malformed).
EMBER_API std::string render_cuda(const Kernel& k);

}  // namespace ember::kernel
