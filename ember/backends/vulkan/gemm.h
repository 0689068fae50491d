// Internal: the Vulkan runtime's GEMMs on the kernel layer's tiled matmul kernel
// (kernel::matmul_kernel): the operand loads each call's strides and alignment allow, and the
// tile shape chosen by the tuner among a few (the heuristic's first).
#pragma once
#include <string>
#include <vector>

#include "ember/backends/gpu/runtime.h"
#include "ember/kernel/kernels/matmul.h"

namespace ember::vulkan {

/// A kernel a GEMM may run with, and its code for the tuner.
struct GemmChoice {
  int64_t code;
  kernel::MatmulSpec spec;
};

/// The kernels a GEMM of `g` may run with on a device with `shared_bytes` of shared memory a
/// workgroup, the heuristic's first: tile shapes, with the loads the call's strides and
/// alignment allow.
std::vector<GemmChoice> gemm_candidates(const gpu::GemmCall& g, gpu::Address a, gpu::Address b,
                                        gpu::Address c, int64_t shared_bytes, int multiprocessors);

/// Runs `g` on `rt` (floats: f32 and f64); false, running nothing, where no tile shape fits the
/// device's shared memory.
bool run_gemm(gpu::Runtime& rt, const gpu::GemmCall& g, gpu::Address a, gpu::Address b,
              gpu::Address c, int64_t shared_bytes);

}  // namespace ember::vulkan
