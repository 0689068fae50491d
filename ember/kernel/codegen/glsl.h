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
// Arguments: one storage buffer (binding 0) holds every parameter in order, std430 (each at an
// offset aligned to its size; `glsl_layout` gives them): a buffer parameter is the 64-bit device
// address of its first element (a buffer reference: Vulkan 1.2's bufferDeviceAddress), so a
// launch passes pointers and scalars as on CUDA. Element types: bool buffers are bytes (0/1),
// bf16 buffers are the 16-bit patterns (GLSL has no bf16); half types compute in f32 registers
// and are rounded after every operation, as on CUDA and the CPU. Scalars of bool, 8- and
// 16-bit types travel as 32-bit values, f16/bf16 scalars as f32. GLSL has no f64 math: every
// f64 function is ember's own (range reduction, polynomials, series; erf's continued fraction),
// within 1e-12 of the CPU's libm. Subgroup sizes are the device's (8 on
// lavapipe, 32 on NVIDIA): kernels read subgroup_size, as they must.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/kernel/ir.h"

namespace ember::kernel {

/// Cooperative matrices (the IR's fragments) are rendered with GL_NV_cooperative_matrix, which
/// is what glslang offers; the SPIR-V is then rewritten to SPV_KHR_cooperative_matrix
/// (vulkan/coopmat.h), whose types also carry their use (a, b, accumulator). For that, each
/// distinct fragment type's rows and columns are specialization constants numbered
/// kFragmentSpecIds + 8 * type + 2 * use (columns: + 1), left at their default values.
inline constexpr uint32_t kFragmentSpecIds = 1000;

/// What the device lets a shader ask for (Vulkan's float controls).
struct GlslOptions {
  /// Keep f32 subnormals (f16/bf16 compute in f32 too): the `DenormPreserve` execution mode,
  /// for devices whose shaderDenormPreserveFloat32 says they can.
  bool denorm_preserve_f32 = false;
  /// The device's f32 fma rounds once (Vulkan lets it round twice; the Vulkan runtime probes
  /// it): division's correction then takes its residual from one fma instead of Dekker's
  /// product, a few instructions instead of some twenty.
  bool exact_fma = false;
};

/// GLSL source of `k` (validated first: ValueError when malformed or not expressible).
EMBER_API std::string render_glsl(const Kernel& k, const GlslOptions& options = {});

/// How a kernel's arguments are laid out in the argument buffer.
struct GlslLayout {
  static constexpr uint32_t kNone = 0xffffffffu;
  struct Arg {
    size_t param = 0;                 // index in Kernel::params
    bool address = false;             // a buffer: its device address (8 bytes)
    uint32_t offset = 0;              // bytes into the argument buffer
    ScalarType as = ScalarType::I32;  // scalars: the type stored there (see above)
    /// A 16-bit buffer with atomic adds: the same address again at this offset, its 32-bit
    /// word view (the address must be 4-byte aligned).
    uint32_t word_offset = kNone;
  };
  std::vector<Arg> args;  // one per parameter, in order
  uint32_t bytes = 16;    // the argument buffer's size
};
EMBER_API GlslLayout glsl_layout(const Kernel& k);

}  // namespace ember::kernel
