// Internal: the CUDA backend's per-device state (context, stream, pool, staging buffers) as a
// GPU runtime (backends/gpu/runtime.h): kernels compiled by NVRTC and loaded as modules, launches
// on the device's stream, copies and fills by the driver, GEMMs through cuBLASLt and convs
// through cuDNN where they are found.
#pragma once
#include <future>
#include <memory>
#include <mutex>
#include <string>

#include "ember/backends/cuda/cuda.h"
#include "ember/backends/cuda/driver.h"
#include "ember/backends/cuda/queue.h"
#include "ember/backends/gpu/runtime.h"

namespace ember::cuda::detail {

using gpu::Args;
using gpu::GemmCall;
using gpu::key;
using gpu::Kind;
using gpu::Loaded;

/// A kernel on one device, compiled and loaded as a module on a worker thread
/// (compile_jobs.h) while the host goes on.
struct CudaLoaded final : Loaded {
  std::shared_future<std::shared_ptr<Module>> module;
  /// The kernel's function: waits for its module. Throws the compile's or the load's error.
  CuFunction* function() const { return module.get()->function(); }
  /// Whether the compile has finished (or failed).
  bool ready() const;
};

class DeviceState final : public gpu::Runtime {
 public:
  explicit DeviceState(int index);
  int arch = 90;
  CuContext* ctx = nullptr;
  std::unique_ptr<Stream> stream;
  DevicePool pool;
  Staging staging;
  std::unique_ptr<CommandQueue> queue;
  /// Held by whatever puts work on the stream, for the whole of it: a submit (which may
  /// capture a CUDA graph from the stream), an upload, a download, a timing, a cuDNN call. A
  /// data loader's worker thread that uploads while the main thread captures a step would
  /// otherwise have its copies captured into the graph (or fail). Recursive: s() submits.
  std::recursive_mutex stream_mu;

  /// The stream, with the queued commands submitted to it first: for work outside the queue
  /// (hold stream_mu while using it).
  CuStream* s();
  /// The stream without submitting: for its identity, or where the queue is being submitted.
  CuStream* raw_stream() const { return stream->get(); }
  /// Submits the queued commands to the stream.
  void submit();
  /// Makes this device's context current on the calling thread.
  void bind() const;
  /// Set while cuBLASLt loads on its background thread (preload_cublaslt), ready when it is done.
  std::shared_future<void> preloaded;
  /// Waits for that loading: the host's first read from the device does, so that a program that
  /// ends soon after (its last read) never exits while the loading thread is inside cuBLASLt,
  /// which the process's exit then tears down under it (a crash at exit, status 139).
  void wait_preload() const {
    if (preloaded.valid()) preloaded.wait();
  }

  const char* backend() const override { return "cuda"; }
  std::shared_ptr<gpu::Storage> allocate(size_t bytes) override;
  void launch(const Loaded& l, std::span<const gpu::Arg> args, int64_t groups) override;
  void copy(const gpu::Storage& src, size_t src_offset, const gpu::Storage& dst, size_t dst_offset,
            size_t bytes) override;
  void fill(const gpu::Storage& dst, size_t offset, uint32_t pattern, int size,
            size_t count) override;
  void upload(const gpu::Storage& dst, size_t offset, const void* src, size_t bytes) override;
  void download(void* dst, const gpu::Storage& src, size_t offset, size_t bytes) override;
  void synchronize() override;
  double time_ms(const std::function<void()>& launches) override;
  std::string tuner_device() const override;
  std::filesystem::path tuner_file() const override;
  void gemm(const GemmCall& g, gpu::Address a, gpu::Address b, gpu::Address c,
            const std::string& shapes) override;
  bool gemm_epilogue(const GemmCall& g, gpu::Address a, gpu::Address b, gpu::Address c) override;
  std::string render(const kernel::Kernel& kern) const override;
  bool ready(const Loaded& l) const override;
  bool compiles_async() const override { return true; }
  bool has_vendor_conv() const override;
  bool vendor_conv(const Op& op, const GpuTensor& a, const GpuTensor& b,
                   const GpuTensor& out) override;

 protected:
  std::unique_ptr<Loaded> compile(const kernel::Kernel& kern) override;
};

/// The state of device `index`, with its context current on this thread.
DeviceState& device(int index);
int device_count_cached();

/// Loads cuBLASLt and sets up the device's handle on a background thread (EMBER_CUDA_PRELOAD=0:
/// not).
void preload_cublaslt(DeviceState& d);
/// cuBLASLt's GEMM (matmul.cpp), the simple kernel where it has no algorithm.
void lt_gemm(DeviceState& d, const GemmCall& g, DevicePtr a, DevicePtr b, DevicePtr c,
             const std::string& shapes);
/// Whether cuBLASLt has an algorithm for `g`'s epilogue on these addresses (the plan is kept).
bool lt_gemm_epilogue(DeviceState& d, const GemmCall& g, DevicePtr a, DevicePtr b, DevicePtr c);

}  // namespace ember::cuda::detail
