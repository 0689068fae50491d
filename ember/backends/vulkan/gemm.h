// Internal: the Vulkan runtime's GEMMs on the kernel layer's tiled matmul kernel
// (kernel::matmul_kernel): the operand loads each call's strides and alignment allow, and the
// tile shape chosen by the tuner among a few (the heuristic's first).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ember/backends/gpu/runtime.h"
#include "ember/backends/vulkan/runtime.h"
#include "ember/kernel/kernels/matmul.h"
#include "ember/kernel/kernels/matmul_coop.h"

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

/// The cooperative-matrix kernel for f16 `g` on a device like `info`; nullopt where the device
/// offers no 16x16x16 shape or EMBER_VULKAN_COOPMAT=0 turns them off.
std::optional<kernel::CoopMatmulSpec> coop_gemm_spec(const gpu::GemmCall& g, gpu::Address a,
                                                     gpu::Address b, const DeviceInfo& info,
                                                     int multiprocessors);

/// Runs f16 `g` on cooperative matrices; false, running nothing, where coop_gemm_spec has none.
bool run_coop_gemm(gpu::Runtime& rt, const gpu::GemmCall& g, gpu::Address a, gpu::Address b,
                   gpu::Address c, const DeviceInfo& info);

}  // namespace ember::vulkan
