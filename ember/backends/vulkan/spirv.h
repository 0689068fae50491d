// GLSL compute shaders to SPIR-V for Vulkan (shaderc and glslang, linked statically into
// ember_vulkan), through the kernel cache like NVRTC's binaries.
//
//   kernel::Kernel k = kernel::KernelBuilder("k").finish();
//   std::vector<uint32_t> words = vulkan::compile_spirv(k);   // kernel::render_glsl, then shaderc
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ember/kernel/cache.h"
#include "ember/kernel/ir.h"

namespace ember::vulkan {

struct SpirvOptions {
  /// The Vulkan version the module targets: 1.2 (SPIR-V 1.5) has buffer device addresses.
  int vulkan_minor = 2;
  kernel::KernelCache* cache = nullptr;  // nullptr: kernel::KernelCache::global()
};

/// SPIR-V words of GLSL compute shader `source` (ValueError with shaderc's log when it does not
/// compile).
std::vector<uint32_t> compile_glsl(const std::string& source, const std::string& name,
                                   const SpirvOptions& options = {});
/// compile_glsl(kernel::render_glsl(k), k.name).
std::vector<uint32_t> compile_spirv(const kernel::Kernel& k, const SpirvOptions& options = {});

}  // namespace ember::vulkan
