// The GLSL renderer: a validated kernel becomes one GLSL 4.50 compute shader for Vulkan
// (compiled to SPIR-V by codegen/spirv.h), the same kernels the CUDA renderer takes.
//
//   kernel::KernelBuilder kb("fill");
//   kernel::Mem out = kb.buffer("out", kernel::ScalarType::F32, kernel::Access::Write);
//   kb.store(out, kb.global_id(0), kb.lit(kernel::ScalarType::F32, 1));
//   kernel::Kernel k = kb.finish();
//   std::string src = kernel::render_glsl(k);
//   kernel::GlslLayout L = kernel::glsl_layout(k);   // where the host puts each argument
//
// Bindings: 0 is a storage buffer holding every scalar parameter (std430: each at an offset
// aligned to its size; `glsl_layout` gives the offsets), 1.. the buffer parameters in order.
// Element types: bool buffers are bytes (0/1), bf16 buffers are the 16-bit patterns (GLSL has
// no bf16), f16 is float16_t; half types compute in f32 and round back, as on CUDA and the
// CPU. Scalars of bool, 8- and 16-bit types travel as 32-bit values, f16/bf16 scalars as f32.
// f64 math (exp, log, sin, ...) has no GLSL built-in: it is computed in f32 (a documented loss
// of precision); f64 add, mul, div, sqrt, fma, floor and the like are exact. Subgroup sizes are
// the device's (8 on lavapipe, 32 on NVIDIA): kernels read subgroup_size, as they must.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/kernel/ir.h"

namespace ember::kernel {

/// GLSL source of `k` (validated first: ValueError when malformed or not expressible).
EMBER_API std::string render_glsl(const Kernel& k);

/// How a kernel's arguments are laid out for the shader.
struct GlslLayout {
  struct Scalar {
    size_t param = 0;                 // index in Kernel::params
    uint32_t offset = 0;              // bytes into the parameter buffer (binding 0)
    ScalarType as = ScalarType::I32;  // the type stored there (see above)
  };
  std::vector<Scalar> scalars;
  uint32_t scalar_bytes = 0;    // the parameter buffer's size (at least 16)
  std::vector<size_t> buffers;  // Kernel::params index of binding 1, 2, ...
};
EMBER_API GlslLayout glsl_layout(const Kernel& k);

}  // namespace ember::kernel
