// The Vulkan backend: the GPU op layer (backends/gpu) on a vulkan::Context. Storage is a pool
// buffer addressed by its device address; kernels are pipelines of the GLSL rendering; GEMMs
// run the tiled matmul kernel of the kernel layer.
#include <algorithm>
#include <atomic>
#include <mutex>

#include "ember/backend/device_backend.h"
#include "ember/backends/gpu/backend.h"
#include "ember/backends/gpu/tune.h"
#include "ember/backends/vulkan/gemm.h"
#include "ember/backends/vulkan/vulkan.h"
#include "ember/core/error.h"
#include "ember/fusion/fusion.h"
#include "ember/kernel/codegen/glsl.h"
#include "ember/kernel/kernels/copy.h"

namespace ember {

namespace vulkan {
namespace {

struct VulkanStorage final : gpu::Storage {
  Buffer buffer;
};

struct VulkanLoaded final : gpu::Loaded {
  const Context::Pipeline* pipeline = nullptr;
};

Buffer& buffer_of(const gpu::Storage& s) {
  return const_cast<VulkanStorage&>(static_cast<const VulkanStorage&>(s)).buffer;
}

class VulkanRuntime final : public gpu::Runtime {
 public:
  explicit VulkanRuntime(int index)
      : gpu::Runtime(DeviceKind::Vulkan, index), ctx_(context(index)) {
    // Vulkan does not say how many compute units a device has: launch sizes from its kind.
    const std::string& t = ctx_.info().type;
    multiprocessors = t == "discrete" ? 128 : t == "integrated" ? 16 : 4;
    // The kernels' shared scratch holds a value per subgroup of a workgroup of 8 lanes or more.
    subgroup = int(ctx_.info().subgroup_size);
    if (subgroup < 8 || subgroup > 128)
      throw DeviceError("[vulkan] " + ctx_.info().name + " has subgroups of " +
                        std::to_string(subgroup) + " lanes; ember's kernels need 8 to 128");
  }
  const char* backend() const override { return "vulkan"; }

  std::shared_ptr<gpu::Storage> allocate(size_t bytes) override {
    auto s = std::make_shared<VulkanStorage>();
    s->runtime = this;
    s->bytes = bytes;
    if (bytes) {
      s->buffer = ctx_.buffer(bytes);
      s->ptr = s->buffer.address();
    }
    return s;
  }

  void launch(const gpu::Loaded& l, std::span<const gpu::Arg> args, int64_t groups) override {
    if (groups <= 0) return;
    Arg a[gpu::Args::kMaxArgs];
    for (size_t j = 0; j < args.size(); ++j) {
      const gpu::Arg& g = args[j];
      kernel::ScalarType t = l.params[j];
      bool real_param = t == kernel::ScalarType::F32 || t == kernel::ScalarType::F64;
      // Reals into integer parameters saturate (NaN to 0), as gpu::pack does on CUDA.
      a[j] = g.kind == gpu::Arg::Address ? Arg::ptr(static_cast<uint64_t>(g.i))
             : g.kind == gpu::Arg::Int   ? Arg::of(g.i)
             : real_param                ? Arg::real(g.f)
                                         : Arg::of(Scalar::saturate(g.f));
    }
    ctx_.launch(*static_cast<const VulkanLoaded&>(l).pipeline, std::span<const Arg>(a, args.size()),
                static_cast<uint32_t>(std::min<int64_t>(groups, 0x7fffffff)));
  }

  // Words by the copy kernel (NVIDIA's vkCmdCopyBuffer ran a 64M-float copy at 850 GB/s, the
  // kernel at 3100); other sizes and offsets by the transfer command.
  void copy(const gpu::Storage& src, size_t src_offset, const gpu::Storage& dst, size_t dst_offset,
            size_t bytes) override {
    if (!bytes) return;
    if ((src_offset | dst_offset | bytes) % 4) {
      ctx_.copy(buffer_of(src), src_offset, buffer_of(dst), dst_offset, bytes);
      return;
    }
    auto words = static_cast<int64_t>(bytes / 4);
    bool wide = words > 0x7fffffff;
    // 16 bytes a thread where both ends are 16-byte aligned, else word by word.
    bool vector = (src.ptr + src_offset) % 16 == 0 && (dst.ptr + dst_offset) % 16 == 0;
    const gpu::Loaded& l = gpu::kernel_for(
        *this, gpu::key(gpu::Kind::Copy, vector ? 2 : 1, DType::I32, DType::I32, 1, true, wide),
        [&] {
          kernel::CopySpec cs;
          cs.src = cs.dst = DType::I32;
          cs.rank = 1;
          cs.wide_index = wide;
          cs.vector = vector;
          return kernel::copy_kernel(cs);
        });
    gpu::Args a(l);
    a.ptr(src.ptr + src_offset).ptr(dst.ptr + dst_offset).i(words);
    if (!vector) a.i(words).i(1);
    a.launch(*this, gpu::groups_for(*this, vector ? (words + 3) / 4 : words, 256));
  }

  void fill(const gpu::Storage& dst, size_t offset, uint32_t pattern, int size,
            size_t count) override {
    if (!count) return;
    uint32_t word = size == 1   ? (pattern & 0xffu) * 0x01010101u
                    : size == 2 ? (pattern & 0xffffu) * 0x00010001u
                                : pattern;
    ctx_.fill(buffer_of(dst), offset, count * size_t(size), word);
  }

  void upload(const gpu::Storage& dst, size_t offset, const void* src, size_t bytes) override {
    if (bytes) buffer_of(dst).upload(src, bytes, offset);
  }

  void download(void* dst, const gpu::Storage& src, size_t offset, size_t bytes) override {
    if (bytes) buffer_of(src).download(dst, bytes, offset);
  }

  void synchronize() override { ctx_.synchronize(); }

  double time_ms(const std::function<void()>& launches) override {
    launches();
    uint32_t from = ctx_.timestamp();
    for (int i = 0; i < 3; ++i) launches();
    uint32_t to = ctx_.timestamp();
    return ctx_.elapsed_ms(from, to) / 3;
  }

  std::string tuner_device() const override { return "vulkan " + ctx_.info().name; }
  std::filesystem::path tuner_file() const override {
    return gpu::Tuner::default_file("vulkan_" + ctx_.info().name);
  }

  // f16 on cooperative matrices where the device has them, f32 and f64 on the tiled kernel of
  // the kernel layer (gemm.h); integers and the rest on the simple one.
  void gemm(const gpu::GemmCall& g, gpu::Address a, gpu::Address b, gpu::Address c,
            const std::string& shapes) override {
    if (g.dtype == DType::F16 && run_coop_gemm(*this, g, a, b, c, ctx_.info())) return;
    if ((g.dtype != DType::F32 && g.dtype != DType::F64) ||
        !run_gemm(*this, g, a, b, c, ctx_.info().shared_memory))
      gpu::Runtime::gemm(g, a, b, c, shapes);
  }

  std::string render(const kernel::Kernel& k) const override {
    return kernel::render_glsl(k, ctx_.glsl_options());  // as Context::prepare renders it
  }

 protected:
  std::unique_ptr<gpu::Loaded> compile(const kernel::Kernel& k) override {
    auto l = std::make_unique<VulkanLoaded>();
    l->pipeline = &ctx_.prepare(k);
    for (int j = 0; j < 3; ++j) l->block[j] = k.workgroup[j];
    for (const kernel::Param& p : k.params)
      l->params.push_back(p.kind == kernel::Param::Buffer ? kernel::ScalarType::Void
                                                          : p.type.scalar);
    l->name = k.name;
    return l;
  }

 private:
  Context& ctx_;
};

// The runtime of vulkan:index, made on first use and kept for the process (like its context);
// an op finds it without a lock.
gpu::Runtime& runtime(int index) {
  constexpr int kMax = 16;
  static std::atomic<VulkanRuntime*> made[kMax];
  static std::mutex mu;
  if (index < 0 || index >= std::min(device_count(), kMax))
    throw DeviceError("[vulkan] no device vulkan:" + std::to_string(index) + " (" +
                      std::to_string(device_count()) + " found)");
  if (VulkanRuntime* r = made[index].load(std::memory_order_acquire)) return *r;
  std::lock_guard lk(mu);
  if (!made[index].load(std::memory_order_relaxed))
    made[index].store(new VulkanRuntime(index), std::memory_order_release);
  return *made[index].load(std::memory_order_relaxed);
}

gpu::Runtime& state(Device dev) {
  static const bool registered = (gpu::set_runtime_lookup(DeviceKind::Vulkan, &runtime), true);
  (void)registered;
  if (dev.kind != DeviceKind::Vulkan)
    throw DeviceError("[vulkan] not a vulkan device: " + dev.to_string());
  return runtime(dev.index);
}

}  // namespace

void synchronize(int device) {
  Fusion<Vulkan>::flush({DeviceKind::Vulkan, device});  // what is still recorded runs first
  state({DeviceKind::Vulkan, device}).synchronize();
}

std::unique_ptr<DeviceBackend> make_device_backend() {
  std::string why;
  if (!available(&why)) return nullptr;
  int n = device_count();
  if (n <= 0) return nullptr;
  return std::make_unique<DeviceBackendFor<Fusion<Vulkan>>>(n);
}

}  // namespace vulkan

GpuTensor Vulkan::from_data(const TensorData& d, Device dev) {
  return gpu::from_data(d, vulkan::state(dev));
}

TensorData Vulkan::to_data(const GpuTensor& h) { return gpu::to_data(h); }

GpuTensor Vulkan::run(const Op& op, std::span<GpuTensor> in, const TensorMeta& out, Device dev) {
  return gpu::run(op, in, out, vulkan::state(dev));
}

bool Vulkan::supports(OpCode c) { return gpu::supports(c); }

bool Vulkan::can_fuse(const Op& op, std::span<const TensorMeta* const> in, const TensorMeta& out) {
  return gpu::can_fuse(op, in, out);
}

std::vector<GpuTensor> Vulkan::run_fused(const fusion::Program& p, std::span<GpuTensor> in,
                                         Device dev) {
  return gpu::run_fused(p, in, vulkan::state(dev));
}

}  // namespace ember
