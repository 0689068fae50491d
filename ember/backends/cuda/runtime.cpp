// The CUDA runtime: per-device state, compiling and loading kernels, the launch path.
#include "ember/backends/cuda/runtime.h"
#include "ember/fusion/fusion.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "ember/backends/cuda/compile_jobs.h"
#include "ember/backends/cuda/cudnn.h"
#include "ember/backends/gpu/tune.h"
#include "ember/core/error.h"
#include "ember/kernel/codegen/cuda.h"
#include "ember/kernel/codegen/nvrtc.h"

namespace ember::cuda::detail {

namespace {
constexpr int kMaxDevices = 64;
std::atomic<DeviceState*> g_devices[kMaxDevices];
std::mutex g_devices_mu;
thread_local CuContext* t_current = nullptr;
std::atomic<bool> g_tf32{false};
}  // namespace

int device_count_cached() {
  static int n = [] {
    std::string why;
    return available(&why) ? std::min(cuda::device_count(), kMaxDevices) : 0;
  }();
  return n;
}

DeviceState::DeviceState(int i) : gpu::Runtime(DeviceKind::Cuda, i) {
  ctx = raw::primary_context(i);
  raw::set_current(ctx);
  t_current = ctx;
  DeviceInfo info = device_info(i);
  arch = info.arch();
  multiprocessors = std::max(1, info.multiprocessors);
  stream = std::make_unique<Stream>();
  queue = std::make_unique<CommandQueue>(stream->get());
  preload_cublaslt(*this);
}

CuStream* DeviceState::s() {
  submit();
  return stream->get();
}

void DeviceState::submit() {
  std::lock_guard lk(stream_mu);
  bind();
  queue->submit([this](const GemmCall& g, DevicePtr a, DevicePtr b, DevicePtr c,
                       const std::string& shapes) { lt_gemm(*this, g, a, b, c, shapes); });
}

bool CudaLoaded::ready() const {
  return module.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

DeviceState& device(int index) {
  if (index < 0 || index >= kMaxDevices)
    throw DeviceError("[cuda] no device cuda:" + std::to_string(index));
  DeviceState* d = g_devices[index].load(std::memory_order_acquire);
  if (!d) {
    std::lock_guard lk(g_devices_mu);
    d = g_devices[index].load(std::memory_order_relaxed);
    if (!d) {
      if (index >= device_count_cached())
        throw DeviceError("[cuda] no device cuda:" + std::to_string(index) + " (" +
                          std::to_string(device_count_cached()) + " found)");
      // Never destroyed: tensors freed during exit still return their blocks to it.
      d = new DeviceState(index);
      g_devices[index].store(d, std::memory_order_release);
    }
  }
  d->bind();
  return *d;
}

void DeviceState::bind() const {
  if (t_current != ctx) {
    raw::set_current(ctx);
    t_current = ctx;
  }
}

namespace {
// Device memory from the device's pool, returned to it when the last view goes.
struct CudaStorage final : gpu::Storage {
  ~CudaStorage() override {
    // The device exists (it allocated this); no driver call, so nothing can throw here.
    if (ptr) {
      auto* d = static_cast<DeviceState*>(runtime);
      d->pool.release(ptr, bytes, d->raw_stream());
    }
  }
};
}  // namespace

std::shared_ptr<gpu::Storage> DeviceState::allocate(size_t bytes) {
  bind();
  auto st = std::make_shared<CudaStorage>();
  st->runtime = this;
  st->bytes = bytes;
  if (bytes) st->ptr = pool.allocate(bytes, raw_stream(), [this] { submit(); });
  return st;
}

std::unique_ptr<Loaded> DeviceState::compile(const kernel::Kernel& kern) {
  bind();
  kernel::CudaCompileOptions o;
  o.arch = arch;
  auto l = std::make_unique<CudaLoaded>();
  l->module = compile_async(kernel::render_cuda(kern), kern.name, o, ctx,
                            gpu::CompileProbe::active() != nullptr);
  for (int j = 0; j < 3; ++j) l->block[j] = kern.workgroup[j];
  for (const kernel::Param& p : kern.params)
    l->params.push_back(p.kind == kernel::Param::Buffer ? kernel::ScalarType::Void : p.type.scalar);
  l->name = kern.name;
  return l;
}

bool DeviceState::ready(const Loaded& l) const { return static_cast<const CudaLoaded&>(l).ready(); }

std::string DeviceState::render(const kernel::Kernel& kern) const {
  return kernel::render_cuda(kern);
}

void DeviceState::launch(const Loaded& l, std::span<const gpu::Arg> args, int64_t groups) {
  if (groups <= 0) return;
  bind();
  uint64_t slots[Args::kMaxArgs];
  for (size_t j = 0; j < args.size(); ++j)
    slots[j] = args[j].kind == gpu::Arg::Address ? static_cast<uint64_t>(args[j].i)
                                                 : gpu::pack(args[j], l.params[j]);
  auto& k = static_cast<const CudaLoaded&>(l);
  auto grid = static_cast<unsigned>(std::min<int64_t>(groups, 0x7fffffff));
  if (CommandQueue::submitting()) {  // a GEMM's fallback kernel, run as part of the batch
    void* p[Args::kMaxArgs];
    for (size_t j = 0; j < args.size(); ++j) p[j] = &slots[j];
    return raw::launch(k.function(), grid, l.block, 0, raw_stream(), p);
  }
  if (queue->launch(k, grid, slots, args.size())) submit();
}

void DeviceState::copy(const gpu::Storage& src, size_t src_offset, const gpu::Storage& dst,
                       size_t dst_offset, size_t bytes) {
  bind();
  if (!bytes) return;
  if (queue->copy(dst.ptr + dst_offset, src.ptr + src_offset, bytes)) submit();
}

void DeviceState::fill(const gpu::Storage& dst, size_t offset, uint32_t pattern, int size,
                       size_t count) {
  bind();
  if (!count) return;
  if (queue->fill(dst.ptr + offset, pattern, size, count)) submit();
}

void DeviceState::upload(const gpu::Storage& dst, size_t offset, const void* src, size_t bytes) {
  std::lock_guard lk(stream_mu);
  bind();
  staging.upload(dst.ptr + offset, src, bytes, s());
}

void DeviceState::download(void* dst, const gpu::Storage& src, size_t offset, size_t bytes) {
  wait_preload();
  std::lock_guard lk(stream_mu);
  bind();
  staging.download(dst, src.ptr + offset, bytes, s());
}

void DeviceState::synchronize() {
  wait_preload();
  std::lock_guard lk(stream_mu);
  bind();
  raw::stream_synchronize(s());
}

double DeviceState::time_ms(const std::function<void()>& launches) {
  std::lock_guard lk(stream_mu);
  bind();
  launches();
  Event start, end;
  start.record_raw(s());
  for (int i = 0; i < 3; ++i) launches();
  end.record_raw(s());  // after the three calls' commands are submitted
  end.synchronize();
  return double(end.since(start)) / 3;
}

std::string DeviceState::tuner_device() const {
  return device_info(index).name + " sm_" + std::to_string(arch);
}

std::filesystem::path DeviceState::tuner_file() const {
  return gpu::Tuner::default_file(device_info(index).name, arch);
}

void DeviceState::gemm(const GemmCall& g, gpu::Address a, gpu::Address b, gpu::Address c,
                       const std::string& shapes) {
  bind();
  if (CommandQueue::submitting()) return lt_gemm(*this, g, a, b, c, shapes);
  if (queue->gemm(g, a, b, c, shapes)) submit();
}

bool DeviceState::gemm_epilogue(const GemmCall& g, gpu::Address a, gpu::Address b, gpu::Address c) {
  bind();
  return lt_gemm_epilogue(*this, g, a, b, c);
}

bool DeviceState::has_vendor_conv() const { return dnn::enabled(); }

bool DeviceState::vendor_conv(const Op& op, const GpuTensor& a, const GpuTensor& b,
                              const GpuTensor& out) {
  std::lock_guard lk(stream_mu);
  submit();  // cuDNN works on the stream directly, after what is queued
  return cudnn_conv(op, a, b, out);
}

}  // namespace ember::cuda::detail

namespace ember::cuda {

using detail::device;

void synchronize(int dev) {
  Fusion<Cuda>::flush({DeviceKind::Cuda, dev});  // what is still recorded runs first
  device(dev).synchronize();
}
GraphStats graph_stats() { return detail::queue_stats(); }
void reset_graph_stats() { detail::reset_queue_stats(); }
void set_graphs(bool on) { detail::set_graphs_enabled(on); }
void set_allow_tf32(bool on) { detail::g_tf32 = on; }
bool allow_tf32() { return detail::g_tf32.load(std::memory_order_relaxed); }

MemoryStats memory_stats(int dev) { return device(dev).pool.stats(); }
void empty_cache(int dev) {
  auto& d = device(dev);
  std::lock_guard lk(d.stream_mu);
  raw::stream_synchronize(d.s());
  d.pool.empty_cache();
}
void reset_peak_memory_stats(int dev) { device(dev).pool.reset_peak(); }

}  // namespace ember::cuda
