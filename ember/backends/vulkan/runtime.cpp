#include "ember/backends/vulkan/runtime.h"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "ember/backends/vulkan/coopmat.h"
#include "ember/backends/vulkan/spirv.h"
#include "ember/backends/vulkan/vk.h"
#include "ember/core/error.h"
#include "ember/kernel/codegen/glsl.h"

namespace ember::vulkan {

struct Buffer::Impl {
  Context::Impl* ctx = nullptr;  // null: not pooled (freed at once)
  VkDevice device = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;  // null: device-local memory the host reaches by staging copies
  uint64_t address = 0;
  size_t capacity = 0;  // bytes allocated (a size class)
  bool host = false;
  ~Impl();
  void free_now();
};

Buffer::Buffer() = default;
Buffer::Buffer(Buffer&&) noexcept = default;

struct Context::Pipeline {
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool descriptors = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  kernel::GlslLayout args;
  std::string name;                 // the kernel's, for errors
  std::vector<std::string> params;  // its parameters' names
};

struct Context::Impl {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  uint32_t host_type = 0;      // host-visible, coherent: staging, arguments
  uint32_t device_type = 0;    // device-local: tensors
  bool device_mapped = false;  // device_type is host-visible too (lavapipe, unified memory)
  VkDeviceSize arg_align = 16;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  DeviceInfo info;
  std::recursive_mutex mu;
  bool open = false;  // launches recorded, not submitted yet
  // The arguments of the recorded launches, each at its own offset (a dynamic descriptor).
  static constexpr size_t kRing = size_t(1) << 22;
  std::unique_ptr<Buffer> ring;
  size_t ring_used = 0;
  // Freed buffers by size class and memory kind, for the next allocation of that class. Reuse
  // is safe in recording order: every launch ends with a barrier, and transfers submit first.
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<Buffer::Impl>>> free_blocks;
  MemoryStats stats;
  static size_t size_class(size_t bytes) {
    size_t c = 256;
    if (bytes <= (size_t(1) << 20)) {
      while (c < bytes) c <<= 1;
      return c;
    }
    const size_t step = size_t(2) << 20;
    return (bytes + step - 1) / step * step;
  }
  void release(std::unique_ptr<Buffer::Impl> b) {
    std::lock_guard lk(mu);
    stats.in_use_bytes -= b->capacity;
    stats.cached_bytes += b->capacity;
    uint64_t key = uint64_t(b->capacity) * 2 + (b->host ? 1 : 0);
    free_blocks[key].push_back(std::move(b));
  }
  void empty_cache() {
    std::lock_guard lk(mu);
    sync();  // nothing recorded may still use them
    for (auto& [key, v] : free_blocks)
      for (auto& b : v) b->free_now();
    free_blocks.clear();
    stats.cached_bytes = 0;
  }

  // Pipelines compiled by the driver, kept on disk in the kernel cache under `cache_key`.
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
  std::string cache_key;
  int unsaved = 0;  // pipelines made since the cache was last written
  // Timestamps of the open batch (reset when its first one is written).
  static constexpr uint32_t kQueries = 256;
  VkQueryPool queries = VK_NULL_HANDLE;
  uint32_t queries_used = 0;
  double timestamp_ns = 0;              // per tick; 0: the queue cannot write timestamps
  uint64_t batch = 0;                   // batches submitted so far
  uint64_t stamp_batch[kQueries] = {};  // the batch each timestamp was written in, + 1
  uint32_t max_groups = 65535;

  void save_pipeline_cache() {
    if (!pipeline_cache || cache_key.empty()) return;
    size_t n = 0;
    if (vkGetPipelineCacheData(device, pipeline_cache, &n, nullptr) != VK_SUCCESS || !n) return;
    std::vector<char> data(n);
    if (vkGetPipelineCacheData(device, pipeline_cache, &n, data.data()) != VK_SUCCESS) return;
    data.resize(n);
    kernel::KernelCache::global().put(cache_key, data);
    unsaved = 0;
  }
  std::unordered_map<std::string, std::unique_ptr<Pipeline>> pipelines;

  Buffer make_buffer(size_t bytes, bool host) {
    Buffer b;
    b.size_ = bytes;
    size_t cap = size_class(std::max<size_t>(bytes, 16));
    auto it = free_blocks.find(uint64_t(cap) * 2 + (host ? 1 : 0));
    if (it != free_blocks.end() && !it->second.empty()) {
      b.impl_ = std::move(it->second.back());
      it->second.pop_back();
      stats.cached_bytes -= cap;
    } else {
      try {
        b.impl_ = allocate(cap, host);
      } catch (const MemoryError&) {
        empty_cache();  // the cached blocks first, then once more
        b.impl_ = allocate(cap, host);
      }
    }
    stats.in_use_bytes += cap;
    b.impl_->ctx = this;
    b.address_ = b.impl_->address;
    return b;
  }

  std::unique_ptr<Buffer::Impl> allocate(size_t cap, bool host) {
    auto b = std::make_unique<Buffer::Impl>();
    b->device = device;
    b->capacity = cap;
    b->host = host;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = cap;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    check(vkCreateBuffer(device, &bi, nullptr, &b->buffer), "vkCreateBuffer",
          std::to_string(cap) + " bytes");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, b->buffer, &req);
    VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
    flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.pNext = &flags;
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = host ? host_type : device_type;
    check(vkAllocateMemory(device, &ai, nullptr, &b->memory), "vkAllocateMemory",
          std::to_string(cap) + " bytes");
    ++stats.driver_allocations;
    check(vkBindBufferMemory(device, b->buffer, b->memory, 0), "vkBindBufferMemory");
    if (host || device_mapped)
      check(vkMapMemory(device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped), "vkMapMemory");
    VkBufferDeviceAddressInfo addr{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
    addr.buffer = b->buffer;
    b->address = vkGetBufferDeviceAddress(device, &addr);
    return b;
  }

  void begin() {
    if (open) return;
    check(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
    open = true;
  }
  // Work recorded before it is done (written) before work after it reads or writes.
  void barrier() {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd, st, st, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }
  // Submits what is recorded and waits for it.
  void sync() {
    if (!open) return;
    open = false;
    ring_used = 0;
    queries_used = 0;
    // The device's writes visible to the host's reads after the fence.
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
    ++batch;
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    check(vkQueueSubmit(queue, 1, &si, fence), "vkQueueSubmit");
    check(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(device, 1, &fence), "vkResetFences");
  }

  // Between host memory and `b` (staged where b is not mapped), after the work recorded so far.
  void transfer(Buffer::Impl& b, void* host, size_t bytes, size_t offset, bool up) {
    std::lock_guard lk(mu);
    sync();
    if (b.mapped) {
      char* dev = static_cast<char*>(b.mapped) + offset;
      if (up)
        std::memcpy(dev, host, bytes);
      else
        std::memcpy(host, dev, bytes);
      return;
    }
    Buffer staging = make_buffer(bytes, true);
    if (up) std::memcpy(staging.impl_->mapped, host, bytes);
    begin();
    VkBufferCopy region{up ? 0 : offset, up ? offset : 0, bytes};
    vkCmdCopyBuffer(cmd, up ? staging.impl_->buffer : b.buffer,
                    up ? b.buffer : staging.impl_->buffer, 1, &region);
    barrier();
    sync();
    if (!up) std::memcpy(host, staging.impl_->mapped, bytes);
  }

  void destroy(Pipeline& p) {
    if (p.descriptors) vkDestroyDescriptorPool(device, p.descriptors, nullptr);
    if (p.pipeline) vkDestroyPipeline(device, p.pipeline, nullptr);
    if (p.layout) vkDestroyPipelineLayout(device, p.layout, nullptr);
    if (p.set_layout) vkDestroyDescriptorSetLayout(device, p.set_layout, nullptr);
    if (p.module) vkDestroyShaderModule(device, p.module, nullptr);
    p = Pipeline{};
  }

  kernel::GlslOptions glsl_options() const {
    kernel::GlslOptions go;
    go.denorm_preserve_f32 = info.denorm_preserve_f32;
    go.exact_fma = info.exact_fma;
    return go;
  }
  Pipeline& pipeline(const kernel::Kernel& k) { return pipeline(k, glsl_options()); }
  Pipeline& pipeline(const kernel::Kernel& k, const kernel::GlslOptions& go) {
    std::string source = kernel::render_glsl(k, go);
    auto it = pipelines.find(source);
    if (it != pipelines.end()) return *it->second;
    std::string missing = missing_features(k, info);
    if (!missing.empty())
      throw DeviceError("[vulkan] kernel " + k.name + " needs " + missing + ", which " + info.name +
                        " lacks");
    auto p = std::make_unique<Pipeline>();
    p->name = k.name;
    for (const kernel::Param& q : k.params) p->params.push_back(q.name);
    try {
      p->args = kernel::glsl_layout(k);
      SpirvOptions so;
      so.vulkan_minor = 2;
      std::vector<uint32_t> words = compile_glsl(source, k.name, so);
      if (!k.fragments.empty()) words = spirv_to_khr_coopmat(words);
      VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
      mi.codeSize = words.size() * 4;
      mi.pCode = words.data();
      check(vkCreateShaderModule(device, &mi, nullptr, &p->module), "vkCreateShaderModule", k.name);
      VkDescriptorSetLayoutBinding b{};
      b.binding = 0;
      b.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
      b.descriptorCount = 1;
      b.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
      VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
      li.bindingCount = 1;
      li.pBindings = &b;
      check(vkCreateDescriptorSetLayout(device, &li, nullptr, &p->set_layout),
            "vkCreateDescriptorSetLayout", k.name);
      VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
      pl.setLayoutCount = 1;
      pl.pSetLayouts = &p->set_layout;
      check(vkCreatePipelineLayout(device, &pl, nullptr, &p->layout), "vkCreatePipelineLayout",
            k.name);
      VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
      ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
      ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
      ci.stage.module = p->module;
      ci.stage.pName = "main";
      ci.layout = p->layout;
      check(vkCreateComputePipelines(device, pipeline_cache, 1, &ci, nullptr, &p->pipeline),
            "vkCreateComputePipelines", k.name);
      if (++unsaved >= 16) save_pipeline_cache();
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC, 1};
      VkDescriptorPoolCreateInfo di{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      di.maxSets = 1;
      di.poolSizeCount = 1;
      di.pPoolSizes = &size;
      check(vkCreateDescriptorPool(device, &di, nullptr, &p->descriptors), "vkCreateDescriptorPool",
            k.name);
      VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
      ai.descriptorPool = p->descriptors;
      ai.descriptorSetCount = 1;
      ai.pSetLayouts = &p->set_layout;
      check(vkAllocateDescriptorSets(device, &ai, &p->set), "vkAllocateDescriptorSets", k.name);
      VkDescriptorBufferInfo info{ring->impl_->buffer, 0, p->args.bytes};
      VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      w.dstSet = p->set;
      w.dstBinding = 0;
      w.descriptorCount = 1;
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
      w.pBufferInfo = &info;
      vkUpdateDescriptorSets(device, 1, &w, 0, nullptr);
    } catch (...) {  // what was made so far, freed
      destroy(*p);
      throw;
    }
    return *pipelines.emplace(source, std::move(p)).first->second;
  }
};

void Buffer::Impl::free_now() {
  if (device == VK_NULL_HANDLE) return;
  if (mapped) vkUnmapMemory(device, memory);
  if (buffer) vkDestroyBuffer(device, buffer, nullptr);
  if (memory) vkFreeMemory(device, memory, nullptr);
  device = VK_NULL_HANDLE;
}

Buffer::Impl::~Impl() { free_now(); }

Buffer::~Buffer() {
  if (impl_ && impl_->ctx) {
    Context::Impl* c = impl_->ctx;
    c->release(std::move(impl_));  // to the context's pool, for the next buffer of its class
  }
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this == &o) return *this;
  if (impl_ && impl_->ctx) impl_->ctx->release(std::move(impl_));
  impl_ = std::move(o.impl_);
  size_ = o.size_;
  address_ = o.address_;
  return *this;
}

void Buffer::upload(const void* src, size_t bytes, size_t offset) {
  if (offset + bytes > size_) throw ValueError("[vulkan] upload past the end of a buffer");
  if (bytes) impl_->ctx->transfer(*impl_, const_cast<void*>(src), bytes, offset, true);
}
void Buffer::download(void* dst, size_t bytes, size_t offset) const {
  if (offset + bytes > size_) throw ValueError("[vulkan] download past the end of a buffer");
  if (bytes) impl_->ctx->transfer(*impl_, dst, bytes, offset, false);
}

Context::Context(int index) : impl_(std::make_unique<Impl>()) {
  std::string why;
  if (!available(&why)) throw DeviceError("[vulkan] no device: " + why);
  Instance& inst = instance();
  if (index < 0 || index >= int(inst.devices.size()))
    throw DeviceError("[vulkan] no device vulkan:" + std::to_string(index) + " (" +
                      std::to_string(inst.devices.size()) + " found)");
  Impl& m = *impl_;
  m.physical = inst.devices[size_t(index)];
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(m.physical, &props);
  m.info.name = props.deviceName;
  m.info.api_version = props.apiVersion;
  switch (props.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      m.info.type = "discrete";
      break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      m.info.type = "integrated";
      break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      m.info.type = "virtual";
      break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      m.info.type = "cpu";
      break;
    default:
      m.info.type = "other";
  }
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceFloatControlsProperties fc{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sub;
  sub.pNext = &fc;
  vkGetPhysicalDeviceProperties2(m.physical, &p2);
  m.info.subgroup_size = sub.subgroupSize;
  m.info.denorm_preserve_f32 = fc.shaderDenormPreserveFloat32;
  m.info.shared_memory = props.limits.maxComputeSharedMemorySize;

  // The features kernels use, enabled where the device has them.
  bool float_ext = has_extension(m.physical, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &v11;
  v11.pNext = &v12;
  if (float_ext) v12.pNext = &af;
  bool coop_ext = has_extension(m.physical, kCoopMatrixExtension);
  CoopMatrixFeatures cf;
  if (coop_ext) cf.pNext = std::exchange(f2.pNext, &cf);
  vkGetPhysicalDeviceFeatures2(m.physical, &f2);
  VkPhysicalDeviceFeatures2 want{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  want.features.shaderFloat64 = f2.features.shaderFloat64;
  want.features.shaderInt64 = f2.features.shaderInt64;
  want.features.shaderInt16 = f2.features.shaderInt16;
  VkPhysicalDeviceVulkan11Features w11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  w11.storageBuffer16BitAccess = v11.storageBuffer16BitAccess;
  VkPhysicalDeviceVulkan12Features w12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  w12.storageBuffer8BitAccess = v12.storageBuffer8BitAccess;
  w12.shaderInt8 = v12.shaderInt8;
  w12.shaderFloat16 = v12.shaderFloat16;
  w12.shaderBufferInt64Atomics = v12.shaderBufferInt64Atomics;
  w12.shaderSharedInt64Atomics = v12.shaderSharedInt64Atomics;
  w12.bufferDeviceAddress = v12.bufferDeviceAddress;
  w12.shaderSubgroupExtendedTypes = v12.shaderSubgroupExtendedTypes;
  if (!v12.bufferDeviceAddress)
    throw DeviceError("[vulkan] " + std::string(props.deviceName) +
                      " lacks bufferDeviceAddress, which every kernel's arguments need");
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT waf{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  waf.shaderBufferFloat32AtomicAdd = af.shaderBufferFloat32AtomicAdd;
  waf.shaderSharedFloat32AtomicAdd = af.shaderSharedFloat32AtomicAdd;
  want.pNext = &w11;
  w11.pNext = &w12;
  if (float_ext) w12.pNext = &waf;
  // Cooperative matrices (f16 x f16 + f32) with the memory model glslang's code for them uses.
  CoopMatrixFeatures wcf;
  if (coop_ext && cf.cooperativeMatrix && v12.vulkanMemoryModel && v12.shaderFloat16 &&
      v11.storageBuffer16BitAccess)
    m.info.coop_f16 = coop_shapes(instance().instance, m.physical);
  if (!m.info.coop_f16.empty()) {
    wcf.cooperativeMatrix = VK_TRUE;
    w12.vulkanMemoryModel = VK_TRUE;
    wcf.pNext = std::exchange(want.pNext, &wcf);
  }
  m.info.f64 = f2.features.shaderFloat64;
  m.info.int8 = v12.shaderInt8;
  m.info.int16 = f2.features.shaderInt16;
  const VkSubgroupFeatureFlags ops = VK_SUBGROUP_FEATURE_BASIC_BIT |
                                     VK_SUBGROUP_FEATURE_SHUFFLE_BIT |
                                     VK_SUBGROUP_FEATURE_BALLOT_BIT;
  m.info.subgroup_ops =
      (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sub.supportedOperations & ops) == ops;
  m.info.i64 = f2.features.shaderInt64;
  m.info.f16 = v12.shaderFloat16;
  m.info.storage16 = v11.storageBuffer16BitAccess;
  m.info.storage8 = v12.storageBuffer8BitAccess;
  m.info.float_atomic_add = float_ext && af.shaderBufferFloat32AtomicAdd;
  m.info.int64_atomics = v12.shaderBufferInt64Atomics;
  m.info.buffer_address = v12.bufferDeviceAddress;
  m.info.subgroup_i64 = v12.shaderSubgroupExtendedTypes;
  m.max_groups = std::max<uint32_t>(1, props.limits.maxComputeWorkGroupCount[0]);

  uint32_t q = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(m.physical, &q, nullptr);
  std::vector<VkQueueFamilyProperties> qs(q);
  vkGetPhysicalDeviceQueueFamilyProperties(m.physical, &q, qs.data());
  for (uint32_t i = 0; i < q; ++i)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      m.family = i;
      break;
    }
  float priority = 1;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = m.family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  std::vector<const char*> exts;
  if (float_ext) exts.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  if (!m.info.coop_f16.empty()) exts.push_back(kCoopMatrixExtension);
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pNext = &want;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = uint32_t(exts.size());
  di.ppEnabledExtensionNames = exts.empty() ? nullptr : exts.data();
  check(vkCreateDevice(m.physical, &di, nullptr, &m.device), "vkCreateDevice", m.info.name);
  vkGetDeviceQueue(m.device, m.family, 0, &m.queue);

  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(m.physical, &mp);
  const VkMemoryPropertyFlags host =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int host_type = -1, local_only = -1, local_mapped = -1;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    bool local = f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    if ((f & host) == host && host_type < 0) host_type = int(i);
    if (local && !(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && local_only < 0) local_only = int(i);
    if (local && (f & host) == host && local_mapped < 0) local_mapped = int(i);
  }
  if (host_type < 0) throw DeviceError("[vulkan] no host-visible memory on " + m.info.name);
  m.host_type = uint32_t(host_type);
  // A discrete GPU's own memory when it has it (staged), else memory both reach (mapped).
  if (local_only >= 0 && props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
    m.device_type = uint32_t(local_only);
  } else {
    m.device_type = uint32_t(local_mapped >= 0 ? local_mapped : host_type);
    m.device_mapped = true;
  }
  m.arg_align = std::max<VkDeviceSize>(props.limits.minStorageBufferOffsetAlignment, 16);

  VkCommandPoolCreateInfo ci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  ci.queueFamilyIndex = m.family;
  check(vkCreateCommandPool(m.device, &ci, nullptr, &m.pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = m.pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(m.device, &ai, &m.cmd), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(m.device, &fi, nullptr, &m.fence), "vkCreateFence");
  m.ring = std::make_unique<Buffer>();
  m.ring->impl_ = m.allocate(Impl::kRing, true);  // not pooled: freed with the device
  m.ring->size_ = Impl::kRing;
  m.ring->address_ = m.ring->impl_->address;

  // The driver's pipeline cache, from disk when a run on this device and driver left one.
  char uuid[2 * VK_UUID_SIZE + 1] = {};
  for (uint32_t i = 0; i < VK_UUID_SIZE; ++i)
    std::snprintf(uuid + 2 * i, 3, "%02x", unsigned(props.pipelineCacheUUID[i]));
  m.cache_key = "vulkan pipeline cache " + std::to_string(props.vendorID) + ":" +
                std::to_string(props.deviceID) + ":" + std::to_string(props.driverVersion) + ":" +
                uuid;
  std::optional<std::vector<char>> saved = kernel::KernelCache::global().get(m.cache_key);
  VkPipelineCacheCreateInfo pc{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (saved && !saved->empty()) {
    pc.initialDataSize = saved->size();
    pc.pInitialData = saved->data();
    m.info.pipeline_cache_bytes = saved->size();
  }
  if (vkCreatePipelineCache(m.device, &pc, nullptr, &m.pipeline_cache) != VK_SUCCESS) {
    pc.initialDataSize = 0;  // data the driver rejects: start empty
    pc.pInitialData = nullptr;
    m.info.pipeline_cache_bytes = 0;
    check(vkCreatePipelineCache(m.device, &pc, nullptr, &m.pipeline_cache),
          "vkCreatePipelineCache");
  }

  // Timestamps, where the compute queue writes them.
  if (qs[m.family].timestampValidBits > 0 && props.limits.timestampPeriod > 0) {
    VkQueryPoolCreateInfo qi2{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi2.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi2.queryCount = Impl::kQueries;
    check(vkCreateQueryPool(m.device, &qi2, nullptr, &m.queries), "vkCreateQueryPool");
    m.timestamp_ns = props.limits.timestampPeriod;
  }
  m.info.exact_fma = fma_rounds_once(*this);
}

Context::~Context() {
  Impl& m = *impl_;
  if (m.device == VK_NULL_HANDLE) return;
  try {
    m.sync();
  } catch (const std::exception&) {  // a lost device: what was recorded is gone with it
  }
  vkDeviceWaitIdle(m.device);
  for (auto& [key, p] : m.pipelines) m.destroy(*p);
  m.pipelines.clear();
  m.empty_cache();
  m.save_pipeline_cache();
  if (m.pipeline_cache) vkDestroyPipelineCache(m.device, m.pipeline_cache, nullptr);
  if (m.queries) vkDestroyQueryPool(m.device, m.queries, nullptr);
  m.ring.reset();
  vkDestroyFence(m.device, m.fence, nullptr);
  vkDestroyCommandPool(m.device, m.pool, nullptr);
  vkDestroyDevice(m.device, nullptr);
}

const DeviceInfo& Context::info() const { return impl_->info; }

Buffer Context::buffer(size_t bytes) {
  std::lock_guard lk(impl_->mu);
  return impl_->make_buffer(bytes, false);
}

MemoryStats Context::memory_stats() const {
  std::lock_guard lk(impl_->mu);
  return impl_->stats;
}

void Context::empty_cache() { impl_->empty_cache(); }

void Context::save_pipeline_cache() {
  std::lock_guard lk(impl_->mu);
  impl_->save_pipeline_cache();
}

uint32_t Context::timestamp() {
  Impl& m = *impl_;
  std::lock_guard lk(m.mu);
  if (!m.queries) throw DeviceError("[vulkan] " + m.info.name + " writes no timestamps");
  if (m.queries_used == Impl::kQueries)
    throw DeviceError("[vulkan] more than 256 timestamps in one batch");
  m.begin();
  if (m.queries_used == 0) vkCmdResetQueryPool(m.cmd, m.queries, 0, Impl::kQueries);
  vkCmdWriteTimestamp(m.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m.queries, m.queries_used);
  m.stamp_batch[m.queries_used] = m.batch + 1;  // the batch being recorded
  return m.queries_used++;
}

double Context::elapsed_ms(uint32_t from, uint32_t to) {
  Impl& m = *impl_;
  std::lock_guard lk(m.mu);
  if (!m.queries) throw DeviceError("[vulkan] " + m.info.name + " writes no timestamps");
  m.sync();
  if (from >= Impl::kQueries || to >= Impl::kQueries || m.stamp_batch[from] != m.batch ||
      m.stamp_batch[to] != m.batch)
    throw ValueError("[vulkan] timestamps " + std::to_string(from) + " and " + std::to_string(to) +
                     " are not both of the last batch (a transfer or synchronize ends a batch)");
  uint64_t t[2];
  for (int i = 0; i < 2; ++i)
    check(
        vkGetQueryPoolResults(m.device, m.queries, i ? to : from, 1, sizeof(uint64_t), &t[i],
                              sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  return double(int64_t(t[1] - t[0])) * m.timestamp_ns * 1e-6;
}

void Context::copy(const Buffer& src, size_t src_offset, Buffer& dst, size_t dst_offset,
                   size_t bytes) {
  if (src_offset + bytes > src.size() || dst_offset + bytes > dst.size())
    throw ValueError("[vulkan] copy past the end of a buffer");
  if (!bytes) return;
  Impl& m = *impl_;
  std::lock_guard lk(m.mu);
  m.begin();
  VkBufferCopy region{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(m.cmd, src.impl_->buffer, dst.impl_->buffer, 1, &region);
  m.barrier();
}

void Context::fill(Buffer& dst, size_t offset, size_t bytes, uint32_t word) {
  size_t cap = dst.impl_ ? dst.impl_->capacity : 0;
  if (offset % 4 || offset + (bytes + 3) / 4 * 4 > cap)
    throw ValueError("[vulkan] fill of " + std::to_string(bytes) + " bytes at " +
                     std::to_string(offset) + " of a buffer of " + std::to_string(dst.size()));
  if (!bytes) return;
  Impl& m = *impl_;
  std::lock_guard lk(m.mu);
  m.begin();
  vkCmdFillBuffer(m.cmd, dst.impl_->buffer, offset, (bytes + 3) / 4 * 4, word);
  m.barrier();
}

void Context::synchronize() {
  std::lock_guard lk(impl_->mu);
  impl_->sync();
}

const Context::Pipeline& Context::prepare(const kernel::Kernel& k) {
  std::lock_guard lk(impl_->mu);
  return impl_->pipeline(k);
}

const Context::Pipeline& Context::prepare(const kernel::Kernel& k,
                                          const kernel::GlslOptions& options) {
  std::lock_guard lk(impl_->mu);
  return impl_->pipeline(k, options);
}

kernel::GlslOptions Context::glsl_options() const { return impl_->glsl_options(); }

void Context::launch(const kernel::Kernel& k, const std::vector<Arg>& args, uint32_t groups) {
  launch(prepare(k), std::span<const Arg>(args.data(), args.size()), groups);
}

void Context::launch(const Pipeline& p, std::span<const Arg> args, uint32_t groups) {
  Impl& m = *impl_;
  std::lock_guard lk(m.mu);
  if (args.size() != p.args.args.size())
    throw ValueError("[vulkan] kernel " + p.name + " takes " + std::to_string(p.args.args.size()) +
                     " arguments, got " + std::to_string(args.size()));
  // The arguments, converted to the types the shader reads.
  std::vector<char> bytes(p.args.bytes, 0);
  for (size_t i = 0; i < args.size(); ++i) {
    const kernel::GlslLayout::Arg& s = p.args.args[i];
    const Arg& a = args[i];
    const std::string& pname = p.params[s.param];
    if (s.address != (a.kind == Arg::Address))
      throw ValueError("[vulkan] kernel " + p.name + ": argument " + pname + " must be " +
                       (s.address ? "a buffer address" : "a scalar"));
    auto put = [&](uint32_t at, auto v) { std::memcpy(bytes.data() + at, &v, sizeof v); };
    if (s.address) {
      uint64_t addr = static_cast<uint64_t>(a.i);
      put(s.offset, addr);
      if (s.word_offset != kernel::GlslLayout::kNone) {
        if (addr % 4)
          throw ValueError("[vulkan] kernel " + p.name + ": " + pname +
                           " needs a 4-byte aligned address for its 16-bit atomics");
        put(s.word_offset, addr);
      }
      continue;
    }
    double f = a.kind == Arg::Int ? double(a.i) : a.f;
    int64_t n = a.kind == Arg::Int ? a.i : static_cast<int64_t>(a.f);
    switch (s.as) {
      case kernel::ScalarType::F32:
        put(s.offset, static_cast<float>(f));
        break;
      case kernel::ScalarType::F64:
        put(s.offset, f);
        break;
      case kernel::ScalarType::I64:
        put(s.offset, n);
        break;
      case kernel::ScalarType::U32:
        put(s.offset, static_cast<uint32_t>(n));
        break;
      default:
        put(s.offset, static_cast<int32_t>(n));
    }
  }
  // This launch's arguments at their own offset of the ring; a full ring submits first.
  size_t at = (m.ring_used + m.arg_align - 1) / m.arg_align * m.arg_align;
  if (at + bytes.size() > Impl::kRing) {
    m.sync();
    at = 0;
  }
  std::memcpy(static_cast<char*>(m.ring->impl_->mapped) + at, bytes.data(), bytes.size());
  m.ring_used = at + bytes.size();
  m.begin();
  vkCmdBindPipeline(m.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  uint32_t offset = static_cast<uint32_t>(at);
  vkCmdBindDescriptorSets(m.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &p.set, 1,
                          &offset);
  // Kernels loop over their work: more workgroups than the device takes are not needed.
  vkCmdDispatch(m.cmd, std::clamp<uint32_t>(groups, 1, m.max_groups), 1, 1);
  m.barrier();
}

Context& context(int index) {
  static std::mutex mu;
  static std::unordered_map<int, Context*> contexts;  // never destroyed (see Instance)
  std::lock_guard lk(mu);
  auto it = contexts.find(index);
  if (it != contexts.end()) return *it->second;
  auto* c = new Context(index);
  contexts.emplace(index, c);
  // Contexts live as long as the process; their pipeline caches are written at its exit.
  static bool registered = [] {
    std::atexit([] {
      std::lock_guard lk2(mu);
      for (auto& [i, ctx] : contexts) ctx->save_pipeline_cache();
    });
    return true;
  }();
  (void)registered;
  return *c;
}

}  // namespace ember::vulkan
