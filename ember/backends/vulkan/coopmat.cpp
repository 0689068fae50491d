#include "ember/backends/vulkan/coopmat.h"

#include <cstring>
#include <map>
#include <string>

#include "ember/core/error.h"
#include "ember/kernel/codegen/glsl.h"

namespace ember::vulkan {

namespace {

// VkCooperativeMatrixPropertiesKHR.
struct CoopMatrixProperties {
  VkStructureType sType = VkStructureType(1000506001);
  void* pNext = nullptr;
  uint32_t MSize = 0, NSize = 0, KSize = 0;
  uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0;  // VkComponentTypeKHR
  VkBool32 saturatingAccumulation = VK_FALSE;
  uint32_t scope = 0;  // VkScopeKHR
};
using GetCoopProperties = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, CoopMatrixProperties*);
constexpr uint32_t kFloat16 = 0, kFloat32 = 1, kScopeSubgroup = 3;

// SPIR-V numbers (the unified1 grammar).
enum : uint32_t {
  kOpExtension = 10,
  kOpTypeInt = 21,
  kOpConstantTrue = 41,
  kOpConstantFalse = 42,
  kOpConstant = 43,
  kOpDecorate = 71,
  kOpCapability = 17,
  kDecorationSpecId = 1,
  kCapCoopNV = 5357,
  kCapCoopKHR = 6022,
  kOpTypeCoopNV = 5358,
  kOpLoadNV = 5359,
  kOpStoreNV = 5360,
  kOpMulAddNV = 5361,
  kOpLengthNV = 5362,
  kOpTypeCoopKHR = 4456,
  kOpLoadKHR = 4457,
  kOpStoreKHR = 4458,
  kOpMulAddKHR = 4459,
  kOpLengthKHR = 4460,
};

[[noreturn]] void bad(const std::string& why) {
  throw ValueError("[vulkan] cooperative-matrix SPIR-V: " + why);
}

std::vector<uint32_t> string_words(const char* s) {
  std::vector<uint32_t> w((std::strlen(s) + 4) / 4, 0);
  std::memcpy(w.data(), s, std::strlen(s));
  return w;
}

}  // namespace

std::vector<CoopShape> coop_shapes(VkInstance instance, VkPhysicalDevice d) {
  auto get = reinterpret_cast<GetCoopProperties>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  std::vector<CoopShape> out;
  if (!get) return out;
  uint32_t n = 0;
  if (get(d, &n, nullptr) != VK_SUCCESS || n == 0) return out;
  std::vector<CoopMatrixProperties> props(n);
  if (get(d, &n, props.data()) != VK_SUCCESS) return out;
  for (uint32_t i = 0; i < n; ++i) {
    const CoopMatrixProperties& p = props[i];
    if (p.AType == kFloat16 && p.BType == kFloat16 && p.CType == kFloat32 &&
        p.ResultType == kFloat32 && p.scope == kScopeSubgroup && !p.saturatingAccumulation)
      out.push_back({int(p.MSize), int(p.NSize), int(p.KSize)});
  }
  return out;
}

std::vector<uint32_t> spirv_to_khr_coopmat(const std::vector<uint32_t>& words) {
  if (words.size() < 5) bad("shorter than its header");
  // First pass: specialization ids, the 32-bit unsigned int type, bool constants.
  std::map<uint32_t, uint32_t> spec_id;
  std::map<uint32_t, bool> bools;
  uint32_t uint_type = 0;
  bool any = false;
  for (size_t at = 5; at < words.size();) {
    uint32_t op = words[at] & 0xffff, wc = words[at] >> 16;
    if (wc == 0 || at + wc > words.size()) bad("an instruction runs past the end");
    if (op == kOpDecorate && wc == 4 && words[at + 2] == kDecorationSpecId)
      spec_id[words[at + 1]] = words[at + 3];
    if (op == kOpTypeInt && wc == 4 && words[at + 2] == 32 && words[at + 3] == 0 && !uint_type)
      uint_type = words[at + 1];
    if (op == kOpConstantTrue || op == kOpConstantFalse)
      bools[words[at + 2]] = op == kOpConstantTrue;
    any = any || op == kOpTypeCoopNV;
    at += wc;
  }
  if (!any) return words;
  if (!uint_type) bad("no 32-bit unsigned int type for the layouts and uses");
  uint32_t bound = words[3];
  const uint32_t c0 = bound, c1 = bound + 1, c2 = bound + 2;  // constants 0, 1, 2
  std::vector<uint32_t> out(words.begin(), words.begin() + 5);
  out[3] = bound + 3;
  bool declared = false;
  auto emit = [&](uint32_t op, std::initializer_list<uint32_t> operands) {
    out.push_back(uint32_t(operands.size() + 1) << 16 | op);
    out.insert(out.end(), operands);
  };
  auto layout = [&](uint32_t col_major) {
    auto it = bools.find(col_major);
    if (it == bools.end()) bad("a layout that is not a constant");
    return it->second ? c1 : c0;  // ColumnMajorKHR 1, RowMajorKHR 0
  };
  for (size_t at = 5; at < words.size();) {
    uint32_t op = words[at] & 0xffff, wc = words[at] >> 16;
    const uint32_t* w = &words[at];
    if (op == kOpCapability && wc == 2 && w[1] == kCapCoopNV) {
      emit(kOpCapability, {kCapCoopKHR});
    } else if (op == kOpExtension && std::strncmp(reinterpret_cast<const char*>(w + 1),
                                                  "SPV_NV_cooperative_matrix", (wc - 1) * 4) == 0) {
      std::vector<uint32_t> s = string_words("SPV_KHR_cooperative_matrix");
      out.push_back(uint32_t(s.size() + 1) << 16 | kOpExtension);
      out.insert(out.end(), s.begin(), s.end());
    } else if (op == kOpTypeCoopNV && wc == 6) {
      if (!declared) {  // the constants precede the first type that names them
        emit(kOpConstant, {uint_type, c0, 0});
        emit(kOpConstant, {uint_type, c1, 1});
        emit(kOpConstant, {uint_type, c2, 2});
        declared = true;
      }
      auto it = spec_id.find(w[4]);  // the rows' specialization constant
      if (it == spec_id.end() || it->second < kernel::kFragmentSpecIds)
        bad("a type whose use its rows do not give");
      uint32_t use = ((it->second - kernel::kFragmentSpecIds) % 8) / 2;
      if (use > 2) bad("a type of unknown use");
      emit(kOpTypeCoopKHR, {w[1], w[2], w[3], w[4], w[5], use == 0 ? c0 : use == 1 ? c1 : c2});
    } else if (op == kOpLoadNV && wc >= 6) {
      // (type, result, pointer, stride, column-major, memory access...) ->
      // (type, result, pointer, layout, stride, memory operands...)
      out.push_back(wc << 16 | kOpLoadKHR);
      out.insert(out.end(), {w[1], w[2], w[3], layout(w[5]), w[4]});
      out.insert(out.end(), w + 6, w + wc);
    } else if (op == kOpStoreNV && wc >= 5) {
      // (pointer, object, stride, column-major, ...) -> (pointer, object, layout, stride, ...)
      out.push_back(wc << 16 | kOpStoreKHR);
      out.insert(out.end(), {w[1], w[2], layout(w[4]), w[3]});
      out.insert(out.end(), w + 5, w + wc);
    } else if (op == kOpMulAddNV || op == kOpLengthNV) {
      out.push_back(wc << 16 | (op == kOpMulAddNV ? kOpMulAddKHR : kOpLengthKHR));
      out.insert(out.end(), w + 1, w + wc);
    } else {
      out.insert(out.end(), w, w + wc);
    }
    at += wc;
  }
  return out;
}

}  // namespace ember::vulkan
