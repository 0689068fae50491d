// The CUDA driver API, loaded at run time from libcuda.so.1 (never linked), so that programs
// start on machines without a GPU: there every call raises DeviceError("[cuda] no CUDA
// driver: ...") and available() is false. Every failing call raises an ember error naming
// the call and CUDA's error string (MemoryError for out of memory).
//
//   std::string why;
//   if (cuda::available(&why)) {
//     cuda::Context ctx(0);                      // the primary context of device 0
//     cuda::DeviceBuffer buf(1024);              // bytes
//     std::vector<float> host(256, 1.0f);
//     buf.upload(host.data(), 1024);
//   }
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/kernel/codegen/nvrtc.h"
#include "ember/kernel/ir.h"

namespace ember::cuda {

using DevicePtr = uint64_t;  // CUdeviceptr
struct CuStream;             // opaque driver handles
struct CuEvent;
struct CuModule;
struct CuFunction;
struct CuContext;
struct CuGraph;
struct CuGraphExec;
struct CuGraphNode;

/// Whether the driver loads and cuInit succeeds with at least one device; `why` says why not.
EMBER_API bool available(std::string* why = nullptr);
EMBER_API int device_count();
EMBER_API int driver_version();  // e.g. 13000
struct DeviceInfo {
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  int64_t total_memory = 0;
  int arch() const { return major * 10 + minor; }
};
EMBER_API DeviceInfo device_info(int device);

/// The device's primary context, current on this thread while the object lives.
class EMBER_API Context {
 public:
  explicit Context(int device);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  void synchronize();
  int device() const { return device_; }

 private:
  int device_;
  CuContext* ctx_ = nullptr;
};

class EMBER_API Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void synchronize();
  CuStream* get() const { return s_; }

 private:
  CuStream* s_ = nullptr;
};

class EMBER_API Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const Stream* s = nullptr);
  void record_raw(CuStream* s);
  void synchronize();
  /// Whether the work before the recorded point has finished (cuEventQuery).
  bool done() const;
  CuEvent* get() const { return e_; }
  /// Milliseconds from `start` to this event (both recorded and complete).
  float since(const Event& start) const;

 private:
  CuEvent* e_ = nullptr;
};

/// Device memory, freed with the object.
class EMBER_API DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void upload(const void* src, size_t bytes, const Stream* s = nullptr);
  void download(void* dst, size_t bytes, const Stream* s = nullptr) const;
  DevicePtr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  DevicePtr ptr_ = 0;
  size_t bytes_ = 0;
};

/// The arguments of a launch, in the kernel's parameter order: device pointers for buffers,
/// values (converted to the parameter's type) for scalars.
class EMBER_API LaunchArgs {
 public:
  explicit LaunchArgs(const kernel::Kernel& k) : params_(k.params), name_(k.name) {}
  LaunchArgs& buffer(DevicePtr p);
  LaunchArgs& scalar(double v);
  LaunchArgs& scalar_int(int64_t v);
  /// Pointers to each argument, as cuLaunchKernel takes them (throws if some are missing).
  std::vector<void*> pointers();

 private:
  const kernel::Param& next(kernel::Param::Kind kind);
  LaunchArgs& put_int(const kernel::Param& p, int64_t v);
  std::vector<kernel::Param> params_;
  std::string name_;
  std::vector<uint64_t> storage_;
};

/// A loaded module (cubin or PTX) and its kernel.
class EMBER_API Module {
 public:
  explicit Module(const kernel::CudaBinary& bin);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  /// Launches `groups` workgroups of the kernel's workgroup size.
  void launch(const kernel::Kernel& k, int64_t groups, LaunchArgs& args, const Stream* s = nullptr);
  CuFunction* function() const { return f_; }

 private:
  CuModule* m_ = nullptr;
  CuFunction* f_ = nullptr;
  std::string name_;
};

/// Low-level entry points for the CUDA backend's hot path: no allocation and no strings
/// unless a call fails (then the same errors as above).
namespace raw {
/// The device's primary context, retained once for the process.
EMBER_API CuContext* primary_context(int device);
EMBER_API void set_current(CuContext* ctx);
/// cuMemAlloc: false on out of memory (other failures throw).
EMBER_API bool try_alloc(DevicePtr* p, size_t bytes);
EMBER_API void free(DevicePtr p);
/// Page-locked host memory (cuMemHostAlloc): nullptr on out of memory.
EMBER_API void* host_alloc(size_t bytes);
EMBER_API void host_free(void* p);
EMBER_API void copy_htod(DevicePtr dst, const void* src, size_t bytes, CuStream* s);
EMBER_API void copy_dtoh(void* dst, DevicePtr src, size_t bytes, CuStream* s);
EMBER_API void copy_dtod(DevicePtr dst, DevicePtr src, size_t bytes, CuStream* s);
/// Sets `count` elements of 1, 2 or 4 bytes to `value` (cuMemsetD8/D16/D32Async).
EMBER_API void memset(DevicePtr dst, uint32_t value, int elem_bytes, size_t count, CuStream* s);
/// cuLaunchKernel of `groups` x 1 x 1 workgroups of `block` threads.
EMBER_API void launch(CuFunction* f, unsigned groups, const int* block, unsigned shared_bytes,
                      CuStream* s, void** args);
EMBER_API void stream_synchronize(CuStream* s);
/// Graphs: whether the driver offers capture and replay (CUDA 12.3 or newer).
EMBER_API bool graphs_available();
/// Starts capturing `s`'s work into a graph (relaxed mode); nothing runs until it is launched.
EMBER_API void begin_capture(CuStream* s);
EMBER_API CuGraph* end_capture(CuStream* s);
/// The node the last call captured on `s` (nullptr when it is not one node).
EMBER_API CuGraphNode* last_captured(CuStream* s);
EMBER_API CuGraphExec* instantiate(CuGraph* g);
EMBER_API void graph_launch(CuGraphExec* e, CuStream* s);
/// New arguments (and grid) for a kernel node of an instantiated graph.
EMBER_API void set_kernel_node(CuGraphExec* e, CuGraphNode* node, CuFunction* f, unsigned groups,
                               const int* block, void** args);
/// A new value for a memset node of an instantiated graph.
EMBER_API void set_memset_node(CuGraphExec* e, CuGraphNode* node, DevicePtr dst, uint32_t value,
                               int elem_bytes, size_t count);
EMBER_API void destroy(CuGraphExec* e) noexcept;
EMBER_API void destroy(CuGraph* g) noexcept;
/// Free and total device memory of the current context's device (cuMemGetInfo).
EMBER_API void mem_info(size_t* free_bytes, size_t* total_bytes);
}  // namespace raw

}  // namespace ember::cuda
