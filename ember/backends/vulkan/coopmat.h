// Internal: cooperative matrices (VK_KHR_cooperative_matrix, tensor cores) on Vulkan: the
// shapes a device offers for f16 operands with f32 accumulation, and the rewrite of the SPIR-V
// glslang writes for the GLSL renderer's GL_NV_cooperative_matrix into SPV_KHR_cooperative_matrix
// (the Vulkan headers and glslang this builds with predate the KHR extension, so its few
// structures and numbers are declared here).
//
//   std::vector<uint32_t> words = {0x07230203u, 0x00010500u, 0u, 1u, 0u};  // a bare header
//   std::vector<uint32_t> same = vulkan::spirv_to_khr_coopmat(words);   // no matrices: as is
//
// (vulkan::compile_spirv applies the rewrite to every kernel with fragments; the context asks
// coop_shapes for DeviceInfo::coop_f16.)
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

#include "ember/backends/vulkan/runtime.h"

namespace ember::vulkan {

/// VK_KHR_cooperative_matrix's feature structure (VkPhysicalDeviceCooperativeMatrixFeaturesKHR).
struct CoopMatrixFeatures {
  VkStructureType sType = VkStructureType(1000506000);
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};
inline constexpr const char* kCoopMatrixExtension = "VK_KHR_cooperative_matrix";

/// The subgroup-scope shapes with f16 a and b, f32 accumulator and result that `d` offers
/// (empty without the extension).
std::vector<CoopShape> coop_shapes(VkInstance instance, VkPhysicalDevice d);

/// `words` (SPIR-V of the GLSL renderer, using SPV_NV_cooperative_matrix) with every
/// cooperative-matrix type, instruction, capability and extension of SPV_KHR_cooperative_matrix
/// instead; a module without them is returned as it is. ValueError for what the renderer never
/// writes (a type whose use its specialization constants do not give, a layout not constant).
std::vector<uint32_t> spirv_to_khr_coopmat(const std::vector<uint32_t>& words);

}  // namespace ember::vulkan
