// The Vulkan runtime under the Vulkan backend: a compute device (discrete GPUs first, then
// integrated, virtual and CPU devices such as Mesa's lavapipe), buffers with device
// addresses, and kernels of the kernel IR run as compute pipelines (kernel::render_glsl ->
// SPIR-V -> pipeline, cached per kernel). A launch passes pointers and scalars, as on CUDA.
// Launches are recorded into one command buffer (a barrier between each) and submitted at a
// synchronize or a transfer.
//
//   std::string why;
//   if (!vulkan::available(&why)) return;            // no loader or no device: why says so
//   vulkan::Context& ctx = vulkan::context(0);
//   kernel::KernelBuilder kb("twice");               // y[i] = 2 x[i], a kernel of the IR
//   kernel::Mem x = kb.buffer("x", kernel::ScalarType::F32, kernel::Access::Read);
//   kernel::Mem y = kb.buffer("y", kernel::ScalarType::F32, kernel::Access::Write);
//   kernel::Val i = kb.global_id(0);
//   kb.store(y, i, kb.load(x, i) * 2.0);
//   kernel::Kernel k = kb.finish();
//   std::vector<float> host(256, 1.0f), out(256);
//   vulkan::Buffer bx = ctx.buffer(1024), by = ctx.buffer(1024);
//   bx.upload(host.data(), 1024);
//   ctx.launch(k, {vulkan::Arg::ptr(bx.address()), vulkan::Arg::ptr(by.address())}, 1);
//   by.download(out.data(), 1024);                   // 2, 2, 2, ...
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/kernel/codegen/glsl.h"
#include "ember/kernel/ir.h"

namespace ember::vulkan {

/// Whether a Vulkan device can run kernels here (false with the reason otherwise).
bool available(std::string* why = nullptr);
/// Compute devices, in the order `vulkan:N` numbers them (discrete GPUs first).
int device_count();

/// A cooperative-matrix shape (M x K times K x N) a device multiplies in one subgroup.
struct CoopShape {
  int m = 0, n = 0, k = 0;
  friend bool operator==(const CoopShape&, const CoopShape&) = default;
};

struct DeviceInfo {
  std::string name;
  std::string type;  // "discrete", "integrated", "virtual", "cpu", "other"
  uint32_t api_version = 0;
  uint32_t subgroup_size = 0;
  bool f64 = false, i64 = false, f16 = false, storage16 = false, storage8 = false;
  bool int8 = false, int16 = false, subgroup_ops = false;  // shaderInt8/16, shuffle + ballot
  bool subgroup_i64 = false;                               // shaderSubgroupExtendedTypes
  bool float_atomic_add = false, int64_atomics = false, buffer_address = false;
  bool denorm_preserve_f32 = false;  // float controls: f32 subnormals kept
  bool exact_fma = false;            // f32 fma rounds once (probed: Vulkan lets it round twice)
  /// Cooperative matrices with f16 operands and f32 accumulation (VK_KHR_cooperative_matrix,
  /// enabled with the Vulkan memory model they need): the shapes; empty without them.
  std::vector<CoopShape> coop_f16;
  uint32_t shared_memory = 0;       // bytes of shared memory a workgroup may declare
  size_t pipeline_cache_bytes = 0;  // the driver's pipeline cache read from disk at start
};

class Context;

/// The buffer pool of a context: buffers come in size classes (powers of two from 256 bytes to
/// 1 MiB, then multiples of 2 MiB) and freed ones wait for the next buffer of their class.
struct MemoryStats {
  int64_t driver_allocations = 0;  // vkAllocateMemory calls so far
  size_t in_use_bytes = 0;         // held by live buffers (their classes' sizes)
  size_t cached_bytes = 0;         // freed, kept for reuse
};

/// The device features kernel `k` needs that `d` lacks, named as Vulkan names them
/// ("shaderFloat64 (f64)", ...), comma-separated; empty when it can run there.
std::string missing_features(const kernel::Kernel& k, const DeviceInfo& d);

/// Device memory: a discrete GPU's own (uploads and downloads staged through host memory) or
/// memory both reach (mapped). Uploads and downloads run after the launches recorded before.
/// Freed, it returns to its context's pool (a buffer must not outlive its context).
class Buffer {
 public:
  Buffer();
  Buffer(Buffer&&) noexcept;
  Buffer& operator=(Buffer&&) noexcept;
  Buffer(const Buffer&) = delete;
  ~Buffer();
  size_t size() const { return size_; }
  void upload(const void* src, size_t bytes, size_t offset = 0);
  void download(void* dst, size_t bytes, size_t offset = 0) const;
  /// The device address of byte 0 (add byte offsets for views).
  uint64_t address() const { return address_; }
  struct Impl;

 private:
  friend class Context;
  std::unique_ptr<Impl> impl_;
  size_t size_ = 0;
  uint64_t address_ = 0;
};

/// An argument: a buffer parameter's device address, or a scalar (converted to the
/// parameter's type when the kernel is launched).
struct Arg {
  enum Kind : uint8_t { Int, Real, Address } kind = Int;
  int64_t i = 0;
  double f = 0;
  static Arg of(int64_t v) { return {Int, v, 0}; }
  static Arg real(double v) { return {Real, 0, v}; }
  static Arg ptr(uint64_t address) { return {Address, static_cast<int64_t>(address), 0}; }
};

class Context {
 public:
  explicit Context(int index);
  ~Context();
  Context(const Context&) = delete;
  const DeviceInfo& info() const;
  Buffer buffer(size_t bytes);
  /// A kernel compiled to a compute pipeline (kept by the context for its lifetime).
  struct Pipeline;
  /// The pipeline of `k`, compiled the first time (DeviceError naming the kernel and the
  /// features the device lacks where it cannot run here).
  const Pipeline& prepare(const kernel::Kernel& k);
  /// The same, rendered with `options` instead of the device's (tests of the renderer's
  /// choices on one device).
  const Pipeline& prepare(const kernel::Kernel& k, const kernel::GlslOptions& options);
  /// What the device lets kernels ask for (DeviceInfo's float controls and fma).
  kernel::GlslOptions glsl_options() const;
  /// Records a prepared kernel, as launch(k, args, groups) does.
  void launch(const Pipeline& p, std::span<const Arg> args, uint32_t groups);
  /// Records `k` on `groups` workgroups with one argument per parameter, in order (addresses
  /// for buffers; errors name the kernel and the argument). Launches run in order; they are
  /// submitted by synchronize(), by a transfer, or when their arguments fill the ring (4 MiB).
  void launch(const kernel::Kernel& k, const std::vector<Arg>& args, uint32_t groups);
  /// Records a copy of `bytes` from `src` at `src_offset` to `dst` at `dst_offset` (the
  /// transfer engine's copy, in order with the launches; vkCmdCopyBuffer).
  void copy(const Buffer& src, size_t src_offset, Buffer& dst, size_t dst_offset, size_t bytes);
  /// Records filling `bytes` of `dst` from `offset` (a multiple of 4) with the 4-byte `word`,
  /// rounded up to whole words (the pool's buffers are allocated in whole words).
  void fill(Buffer& dst, size_t offset, size_t bytes, uint32_t word);
  /// Submits the recorded launches and waits for them.
  void synchronize();
  /// Records a timestamp after the work recorded so far; its index in this batch (at most 256
  /// a batch; DeviceError where the queue writes none).
  uint32_t timestamp();
  /// Milliseconds between two timestamps of the current batch (submits and waits first).
  double elapsed_ms(uint32_t from, uint32_t to);
  MemoryStats memory_stats() const;
  /// Frees the cached buffers (after the recorded work is done).
  void empty_cache();
  /// Writes the driver's pipeline cache to the kernel cache's directory (done every 16 new
  /// pipelines too), so the next process skips the driver's shader compiles.
  void save_pipeline_cache();
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The context of device `index` (made on first use; DeviceError where it cannot be).
Context& context(int index);

}  // namespace ember::vulkan
