// The Vulkan instance and its compute devices (ranked), VkResult errors, the features a
// kernel needs, and those measured by running one (runtime.h, vk.h).
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ember/backends/vulkan/runtime.h"
#include "ember/backends/vulkan/vk.h"
#include "ember/core/error.h"
#include "ember/kernel/builder.h"

namespace ember::vulkan {

std::string result_name(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    default:
      return "VkResult " + std::to_string(int(r));
  }
}

void check(VkResult r, const char* what, const std::string& context) {
  if (r == VK_SUCCESS) return;
  std::string msg = std::string("[vulkan] ") + what + " failed: " + result_name(r);
  if (!context.empty()) msg += " (" + context + ")";
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw MemoryError(msg, -1, false);
  throw DeviceError(msg);
}

Instance::Instance() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "ember";
  app.pEngineName = "ember";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkResult r = vkCreateInstance(&ci, nullptr, &instance);
  if (r != VK_SUCCESS) {
    error = "vkCreateInstance failed: " + result_name(r);
    instance = VK_NULL_HANDLE;
    return;
  }
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> all(n);
  if (n) vkEnumeratePhysicalDevices(instance, &n, all.data());
  auto rank = [](VkPhysicalDevice d) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d, &p);
    switch (p.deviceType) {
      case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return 0;
      case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return 1;
      case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return 2;
      case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return 3;
      default:
        return 4;
    }
  };
  for (VkPhysicalDevice d : all) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d, &p);
    if (p.apiVersion < VK_API_VERSION_1_2) continue;  // 1.2's features are what kernels need
    uint32_t q = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d, &q, nullptr);
    std::vector<VkQueueFamilyProperties> qs(q);
    vkGetPhysicalDeviceQueueFamilyProperties(d, &q, qs.data());
    bool compute = false;
    for (auto& f : qs) compute = compute || (f.queueFlags & VK_QUEUE_COMPUTE_BIT);
    if (compute) devices.push_back(d);
  }
  std::stable_sort(devices.begin(), devices.end(),
                   [&](VkPhysicalDevice a, VkPhysicalDevice b) { return rank(a) < rank(b); });
  if (devices.empty()) error = "no Vulkan 1.2 device with a compute queue";
}

Instance& instance() {
  static Instance* i = new Instance();
  return *i;
}

bool has_extension(VkPhysicalDevice d, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(d, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> e(n);
  vkEnumerateDeviceExtensionProperties(d, nullptr, &n, e.data());
  for (auto& x : e)
    if (std::strcmp(x.extensionName, name) == 0) return true;
  return false;
}

std::string missing_features(const kernel::Kernel& k, const DeviceInfo& d) {
  using kernel::ScalarType;
  bool f64 = false, i64 = false, s16 = false, s8 = false, sub = false, i64atomic = false;
  bool fatomic = false;
  auto note = [&](kernel::Type t) {
    f64 = f64 || t.scalar == ScalarType::F64;
    i64 = i64 || t.scalar == ScalarType::I64;
  };
  for (const kernel::Param& p : k.params) {
    note(p.type);
    if (p.kind == kernel::Param::Buffer) {
      int bytes = kernel::byte_size(p.type.scalar);
      s16 = s16 || bytes == 2;
      s8 = s8 || bytes == 1;
    }
  }
  for (const kernel::SharedArray& a : k.shared) note(a.type);
  for (const kernel::LocalVar& v : k.vars) note(v.type);
  for (const kernel::Inst& i : k.body) {
    note(i.type);
    kernel::Form f = kernel::info(i.op).form;
    sub = sub || f == kernel::Form::SubgroupReduce || f == kernel::Form::Shuffle ||
          f == kernel::Form::Ballot;
    if (f == kernel::Form::Atomic && i.space == kernel::Space::Global) {
      ScalarType t = k.params[i.ref].type.scalar;
      i64atomic = i64atomic || t == ScalarType::I64 || t == ScalarType::F64;  // f64: 64-bit CAS
      fatomic = fatomic || (t == ScalarType::F32 && i.op == kernel::Op::AtomicAdd);
    }
  }
  // Vector accesses go through 64-bit address arithmetic (render_glsl's word views); 64-bit
  // values in subgroup operations need the extended subgroup types.
  std::vector<kernel::Type> types(k.num_values);
  for (const kernel::Inst& i : k.body)
    if (i.result != kernel::kNoValue) types[i.result] = i.type;
  bool sub64 = false;
  for (const kernel::Inst& i : k.body) {
    if (i.op == kernel::Op::Load && i.type.width > 1) i64 = true;
    if (i.op == kernel::Op::Store && types[i.args[1]].width > 1) i64 = true;
    kernel::Form f = kernel::info(i.op).form;
    if ((f == kernel::Form::Shuffle || f == kernel::Form::SubgroupReduce) &&
        i.type.scalar == ScalarType::I64)
      sub64 = true;
  }
  std::string m;
  auto lack = [&](bool need, bool have, const char* what) {
    if (need && !have) m += (m.empty() ? "" : ", ") + std::string(what);
  };
  lack(f64, d.f64, "shaderFloat64 (f64)");
  lack(i64, d.i64, "shaderInt64 (i64)");
  lack(s16, d.storage16 && d.int16, "storageBuffer16BitAccess and shaderInt16 (16-bit tensors)");
  lack(s8, d.storage8 && d.int8, "storageBuffer8BitAccess and shaderInt8 (8-bit and bool tensors)");
  lack(sub, d.subgroup_ops, "subgroup shuffle and ballot operations");
  lack(sub64, d.subgroup_i64, "shaderSubgroupExtendedTypes (64-bit subgroup operations)");
  lack(i64atomic, d.int64_atomics, "shaderBufferInt64Atomics (i64 atomics)");
  lack(fatomic, d.float_atomic_add, "shaderBufferFloat32AtomicAdd (f32 atomic add)");
  // Cooperative matrices: each multiply's shape among those the device offers.
  for (const kernel::Inst& i : k.body) {
    if (i.op != kernel::Op::FragMma) continue;
    const kernel::Fragment& a = k.fragments[kernel::mma_a(i)];
    const kernel::Fragment& b = k.fragments[kernel::mma_b(i)];
    CoopShape want{a.rows, b.cols, a.cols};
    if (std::find(d.coop_f16.begin(), d.coop_f16.end(), want) != d.coop_f16.end()) continue;
    std::string shape = "the cooperative-matrix shape " + std::to_string(want.m) + "x" +
                        std::to_string(want.n) + "x" + std::to_string(want.k) + " (f16, f32)";
    lack(true, false,
         d.coop_f16.empty() ? "VK_KHR_cooperative_matrix (f16 cooperative matrices)"
                            : shape.c_str());
    break;
  }
  return m;
}

// Whether the device's f32 fma rounds once: products whose low part a single rounding keeps
// and two lose (fma(a, b, -round(a * b)) is the product's rounding error, or 0 when rounded
// twice), against the host's fma. Vulkan allows either; division's correction needs to know.
bool fma_rounds_once(Context& ctx) {
  constexpr int n = 256;
  std::vector<float> a(n), b(n), c(n), want(n), got(n);
  for (int i = 0; i < n; ++i) {
    a[i] = 1.0f + float(i + 1) * 0x1p-12f;
    b[i] = 1.0f - float(3 * i + 1) * 0x1p-13f;
    c[i] = -(a[i] * b[i]);
    want[i] = std::fma(a[i], b[i], c[i]);
  }
  kernel::KernelBuilder kb("ember_probe_fma", {64, 1, 1});
  kernel::Mem pa = kb.buffer("a", kernel::ScalarType::F32, kernel::Access::Read);
  kernel::Mem pb = kb.buffer("b", kernel::ScalarType::F32, kernel::Access::Read);
  kernel::Mem pc = kb.buffer("c", kernel::ScalarType::F32, kernel::Access::Read);
  kernel::Mem out = kb.buffer("out", kernel::ScalarType::F32, kernel::Access::Write);
  kernel::Val i = kb.global_id(0);
  kb.store(out, i, kb.fma(kb.load(pa, i), kb.load(pb, i), kb.load(pc, i)));
  kernel::Kernel k = kb.finish();
  Buffer ba = ctx.buffer(n * 4), bb = ctx.buffer(n * 4), bc = ctx.buffer(n * 4),
         bo = ctx.buffer(n * 4);
  ba.upload(a.data(), n * 4);
  bb.upload(b.data(), n * 4);
  bc.upload(c.data(), n * 4);
  ctx.launch(k,
             {Arg::ptr(ba.address()), Arg::ptr(bb.address()), Arg::ptr(bc.address()),
              Arg::ptr(bo.address())},
             n / 64);
  bo.download(got.data(), n * 4);
  return std::memcmp(want.data(), got.data(), n * 4) == 0;
}

bool available(std::string* why) {
  Instance& i = instance();
  if (!i.error.empty()) {
    if (why) *why = i.error;
    return false;
  }
  return true;
}

int device_count() { return static_cast<int>(instance().devices.size()); }

}  // namespace ember::vulkan
