#include "ember/backends/cuda/driver.h"

#include <cstring>
#include <mutex>

#include "ember/core/error.h"
#include "ember/core/half.h"
#include "ember/kernel/dynlib.h"

namespace ember::cuda {

namespace {

// The few driver declarations used (cuda.h is not needed to build ember).
using CUresult = int;
using CUdevice = int;
constexpr CUresult kSuccess = 0, kOutOfMemory = 2, kStubLibrary = 34, kNoDevice = 100,
                   kNotReady = 600;
constexpr int kAttrMultiprocessors = 16, kAttrMajor = 75, kAttrMinor = 76;

struct Api {
  kernel::DynLib lib;
  std::string error;  // why the driver is unusable
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*DriverGetVersion)(int*) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*GetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*DeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*DeviceTotalMem)(size_t*, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRetain)(CuContext**, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*CtxSetCurrent)(CuContext*) = nullptr;
  CUresult (*CtxSynchronize)() = nullptr;
  CUresult (*ModuleLoadData)(CuModule**, const void*) = nullptr;
  CUresult (*ModuleUnload)(CuModule*) = nullptr;
  CUresult (*ModuleGetFunction)(CuFunction**, CuModule*, const char*) = nullptr;
  CUresult (*LaunchKernel)(CuFunction*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CuStream*, void**, void**) = nullptr;
  CUresult (*MemAlloc)(DevicePtr*, size_t) = nullptr;
  CUresult (*MemFree)(DevicePtr) = nullptr;
  CUresult (*MemcpyHtoD)(DevicePtr, const void*, size_t) = nullptr;
  CUresult (*MemcpyDtoH)(void*, DevicePtr, size_t) = nullptr;
  CUresult (*MemcpyHtoDAsync)(DevicePtr, const void*, size_t, CuStream*) = nullptr;
  CUresult (*MemcpyDtoHAsync)(void*, DevicePtr, size_t, CuStream*) = nullptr;
  CUresult (*StreamCreate)(CuStream**, unsigned) = nullptr;
  CUresult (*StreamDestroy)(CuStream*) = nullptr;
  CUresult (*StreamSynchronize)(CuStream*) = nullptr;
  CUresult (*EventCreate)(CuEvent**, unsigned) = nullptr;
  CUresult (*EventDestroy)(CuEvent*) = nullptr;
  CUresult (*EventRecord)(CuEvent*, CuStream*) = nullptr;
  CUresult (*EventSynchronize)(CuEvent*) = nullptr;
  CUresult (*EventElapsedTime)(float*, CuEvent*, CuEvent*) = nullptr;
  CUresult (*EventQuery)(CuEvent*) = nullptr;
  CUresult (*MemHostAlloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*MemFreeHost)(void*) = nullptr;
  CUresult (*MemcpyDtoDAsync)(DevicePtr, DevicePtr, size_t, CuStream*) = nullptr;
  CUresult (*MemsetD8Async)(DevicePtr, unsigned char, size_t, CuStream*) = nullptr;
  CUresult (*MemsetD16Async)(DevicePtr, unsigned short, size_t, CuStream*) = nullptr;
  CUresult (*MemsetD32Async)(DevicePtr, unsigned, size_t, CuStream*) = nullptr;
  CUresult (*MemGetInfo)(size_t*, size_t*) = nullptr;
  // Graphs (optional: without them every command is launched on its own).
  CUresult (*StreamBeginCapture)(CuStream*, int) = nullptr;
  CUresult (*StreamEndCapture)(CuStream*, CuGraph**) = nullptr;
  CUresult (*StreamGetCaptureInfo)(CuStream*, int*, uint64_t*, CuGraph**, CuGraphNode* const**,
                                   const void**, size_t*) = nullptr;
  CUresult (*GraphInstantiate)(CuGraphExec**, CuGraph*, unsigned long long) = nullptr;
  CUresult (*GraphLaunch)(CuGraphExec*, CuStream*) = nullptr;
  CUresult (*GraphExecKernelNodeSetParams)(CuGraphExec*, CuGraphNode*, const void*) = nullptr;
  CUresult (*GraphExecMemsetNodeSetParams)(CuGraphExec*, CuGraphNode*, const void*,
                                           CuContext*) = nullptr;
  CUresult (*CtxGetCurrent)(CuContext**) = nullptr;
  CUresult (*GraphExecDestroy)(CuGraphExec*) = nullptr;
  CUresult (*GraphDestroy)(CuGraph*) = nullptr;
  bool graphs = false;

  Api() {
    if (!lib.open({"libcuda.so.1"}, error)) {
      error = "no CUDA driver: " + error;
      return;
    }
    bool ok = true;
    auto get = [&](auto& fn, std::initializer_list<const char*> names) {
      ok = lib.bind(fn, names, error) && ok;
    };
    get(Init, {"cuInit"});
    get(DriverGetVersion, {"cuDriverGetVersion"});
    get(GetErrorString, {"cuGetErrorString"});
    get(GetErrorName, {"cuGetErrorName"});
    get(DeviceGetCount, {"cuDeviceGetCount"});
    get(DeviceGet, {"cuDeviceGet"});
    get(DeviceGetName, {"cuDeviceGetName"});
    get(DeviceGetAttribute, {"cuDeviceGetAttribute"});
    get(DeviceTotalMem, {"cuDeviceTotalMem_v2"});
    get(DevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
    get(DevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
    get(CtxSetCurrent, {"cuCtxSetCurrent"});
    get(CtxSynchronize, {"cuCtxSynchronize"});
    get(ModuleLoadData, {"cuModuleLoadData"});
    get(ModuleUnload, {"cuModuleUnload"});
    get(ModuleGetFunction, {"cuModuleGetFunction"});
    get(LaunchKernel, {"cuLaunchKernel"});
    get(MemAlloc, {"cuMemAlloc_v2"});
    get(MemFree, {"cuMemFree_v2"});
    get(MemcpyHtoD, {"cuMemcpyHtoD_v2"});
    get(MemcpyDtoH, {"cuMemcpyDtoH_v2"});
    get(MemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"});
    get(MemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"});
    get(StreamCreate, {"cuStreamCreate"});
    get(StreamDestroy, {"cuStreamDestroy_v2"});
    get(StreamSynchronize, {"cuStreamSynchronize"});
    get(EventCreate, {"cuEventCreate"});
    get(EventDestroy, {"cuEventDestroy_v2"});
    get(EventRecord, {"cuEventRecord"});
    get(EventSynchronize, {"cuEventSynchronize"});
    get(EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
    get(EventQuery, {"cuEventQuery"});
    get(MemHostAlloc, {"cuMemHostAlloc"});
    get(MemFreeHost, {"cuMemFreeHost"});
    get(MemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"});
    get(MemsetD8Async, {"cuMemsetD8Async"});
    get(MemsetD16Async, {"cuMemsetD16Async"});
    get(MemsetD32Async, {"cuMemsetD32Async"});
    get(MemGetInfo, {"cuMemGetInfo_v2"});
    if (!ok) return;
    std::string no_graphs;
    graphs =
        lib.bind(StreamBeginCapture, {"cuStreamBeginCapture_v2"}, no_graphs) &&
        lib.bind(StreamEndCapture, {"cuStreamEndCapture"}, no_graphs) &&
        lib.bind(StreamGetCaptureInfo, {"cuStreamGetCaptureInfo_v3"}, no_graphs) &&
        lib.bind(GraphInstantiate, {"cuGraphInstantiateWithFlags"}, no_graphs) &&
        lib.bind(GraphLaunch, {"cuGraphLaunch"}, no_graphs) &&
        lib.bind(GraphExecKernelNodeSetParams, {"cuGraphExecKernelNodeSetParams_v2"}, no_graphs) &&
        lib.bind(GraphExecMemsetNodeSetParams, {"cuGraphExecMemsetNodeSetParams"}, no_graphs) &&
        lib.bind(CtxGetCurrent, {"cuCtxGetCurrent"}, no_graphs) &&
        lib.bind(GraphExecDestroy, {"cuGraphExecDestroy"}, no_graphs) &&
        lib.bind(GraphDestroy, {"cuGraphDestroy"}, no_graphs);
    CUresult r = Init(0);
    if (r == kStubLibrary)
      error = "no CUDA driver: libcuda.so.1 is the toolkit's stub library";
    else if (r == kNoDevice)
      error = "no CUDA GPU: cuInit found no device";
    else if (r != kSuccess)
      error = "cuInit failed: " + describe(r);
    else
      ready = true;
  }

  std::string describe(CUresult r) const {
    const char* n = nullptr;
    const char* s = nullptr;
    if (GetErrorName) GetErrorName(r, &n);
    if (GetErrorString) GetErrorString(r, &s);
    return std::string(n ? n : "CUDA error " + std::to_string(r)) + " (" + (s ? s : "?") + ")";
  }

  bool ready = false;
};

Api& api_raw() {
  static Api a;
  return a;
}

const Api& api() {
  const Api& a = api_raw();
  if (!a.ready) throw DeviceError("[cuda] " + a.error);
  return a;
}

void check(CUresult r, const char* call, size_t bytes = 0) {
  if (r == kSuccess) return;
  std::string msg = std::string("[cuda] ") + call + " failed: " + api_raw().describe(r);
  if (r == kOutOfMemory)
    throw MemoryError(msg + " for " + std::to_string(bytes) + " bytes",
                      static_cast<int64_t>(bytes));
  throw DeviceError(msg);
}

}  // namespace

bool available(std::string* why) {
  const Api& a = api_raw();
  if (!a.ready) {
    if (why) *why = a.error;
    return false;
  }
  int n = 0;
  if (a.DeviceGetCount(&n) != kSuccess || n == 0) {
    if (why) *why = "no CUDA GPU";
    return false;
  }
  return true;
}

int device_count() {
  int n = 0;
  check(api().DeviceGetCount(&n), "cuDeviceGetCount");
  return n;
}

int driver_version() {
  int v = 0;
  check(api().DriverGetVersion(&v), "cuDriverGetVersion");
  return v;
}

DeviceInfo device_info(int device) {
  const Api& a = api();
  CUdevice d = 0;
  check(a.DeviceGet(&d, device), "cuDeviceGet");
  DeviceInfo info;
  char name[256] = {};
  check(a.DeviceGetName(name, sizeof name, d), "cuDeviceGetName");
  info.name = name;
  check(a.DeviceGetAttribute(&info.major, kAttrMajor, d), "cuDeviceGetAttribute");
  check(a.DeviceGetAttribute(&info.minor, kAttrMinor, d), "cuDeviceGetAttribute");
  check(a.DeviceGetAttribute(&info.multiprocessors, kAttrMultiprocessors, d),
        "cuDeviceGetAttribute");
  size_t mem = 0;
  check(a.DeviceTotalMem(&mem, d), "cuDeviceTotalMem");
  info.total_memory = static_cast<int64_t>(mem);
  return info;
}

Context::Context(int device) : device_(device) {
  const Api& a = api();
  CUdevice d = 0;
  check(a.DeviceGet(&d, device), "cuDeviceGet");
  check(a.DevicePrimaryCtxRetain(&ctx_, d), "cuDevicePrimaryCtxRetain");
  check(a.CtxSetCurrent(ctx_), "cuCtxSetCurrent");
}
Context::~Context() {
  if (ctx_) api_raw().DevicePrimaryCtxRelease(device_);
}
void Context::synchronize() { check(api().CtxSynchronize(), "cuCtxSynchronize"); }

Stream::Stream() { check(api().StreamCreate(&s_, 1 /* non-blocking */), "cuStreamCreate"); }
Stream::~Stream() {
  if (s_) api_raw().StreamDestroy(s_);
}
void Stream::synchronize() { check(api().StreamSynchronize(s_), "cuStreamSynchronize"); }

Event::Event() { check(api().EventCreate(&e_, 0), "cuEventCreate"); }
Event::~Event() {
  if (e_) api_raw().EventDestroy(e_);
}
void Event::record(const Stream* s) {
  check(api().EventRecord(e_, s ? s->get() : nullptr), "cuEventRecord");
}
void Event::record_raw(CuStream* s) { check(api().EventRecord(e_, s), "cuEventRecord"); }
void Event::synchronize() { check(api().EventSynchronize(e_), "cuEventSynchronize"); }
bool Event::done() const {
  CUresult r = api().EventQuery(e_);
  if (r == kNotReady) return false;
  check(r, "cuEventQuery");
  return true;
}
float Event::since(const Event& start) const {
  float ms = 0;
  check(api().EventElapsedTime(&ms, start.e_, e_), "cuEventElapsedTime");
  return ms;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes) check(api().MemAlloc(&ptr_, bytes), "cuMemAlloc", bytes);
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) api_raw().MemFree(ptr_);
}
void DeviceBuffer::upload(const void* src, size_t bytes, const Stream* s) {
  if (bytes > bytes_)
    throw ValueError("[cuda] upload of " + std::to_string(bytes) + " bytes into a buffer of " +
                     std::to_string(bytes_));
  if (!bytes) return;
  if (s)
    check(api().MemcpyHtoDAsync(ptr_, src, bytes, s->get()), "cuMemcpyHtoDAsync");
  else
    check(api().MemcpyHtoD(ptr_, src, bytes), "cuMemcpyHtoD");
}
void DeviceBuffer::download(void* dst, size_t bytes, const Stream* s) const {
  if (bytes > bytes_)
    throw ValueError("[cuda] download of " + std::to_string(bytes) + " bytes from a buffer of " +
                     std::to_string(bytes_));
  if (!bytes) return;
  if (s)
    check(api().MemcpyDtoHAsync(dst, ptr_, bytes, s->get()), "cuMemcpyDtoHAsync");
  else
    check(api().MemcpyDtoH(dst, ptr_, bytes), "cuMemcpyDtoH");
}

const kernel::Param& LaunchArgs::next(kernel::Param::Kind kind) {
  size_t i = storage_.size();
  if (i >= params_.size())
    throw ValueError("[cuda " + name_ + "] more arguments than its " +
                     std::to_string(params_.size()) + " parameters");
  if (params_[i].kind != kind)
    throw ValueError("[cuda " + name_ + "] parameter " + params_[i].name + " is " +
                     (params_[i].kind == kernel::Param::Buffer ? "a buffer" : "a scalar"));
  return params_[i];
}

LaunchArgs& LaunchArgs::buffer(DevicePtr p) {
  next(kernel::Param::Buffer);
  storage_.push_back(p);
  return *this;
}

LaunchArgs& LaunchArgs::scalar(double v) {
  using kernel::ScalarType;
  const kernel::Param& p = next(kernel::Param::Value);
  uint64_t slot = 0;
  auto put = [&](auto x) { std::memcpy(&slot, &x, sizeof x); };
  switch (p.type.scalar) {
    case ScalarType::F64:
      put(v);
      break;
    case ScalarType::F32:
      put(static_cast<float>(v));
      break;
    case ScalarType::F16:
      put(f16(static_cast<float>(v)).bits);
      break;
    case ScalarType::BF16:
      put(bf16(static_cast<float>(v)).bits);
      break;
    default:
      return put_int(p, static_cast<int64_t>(v));
  }
  storage_.push_back(slot);
  return *this;
}

LaunchArgs& LaunchArgs::scalar_int(int64_t v) {
  const kernel::Param& p = next(kernel::Param::Value);
  if (kernel::is_float(p.type.scalar)) {
    return scalar(static_cast<double>(v));
  }
  return put_int(p, v);
}

LaunchArgs& LaunchArgs::put_int(const kernel::Param& p, int64_t v) {
  using kernel::ScalarType;
  uint64_t slot = 0;
  auto put = [&](auto x) { std::memcpy(&slot, &x, sizeof x); };
  switch (p.type.scalar) {
    case ScalarType::Bool:
      put(static_cast<bool>(v));
      break;
    case ScalarType::I8:
      put(static_cast<int8_t>(v));
      break;
    case ScalarType::U8:
      put(static_cast<uint8_t>(v));
      break;
    case ScalarType::I16:
      put(static_cast<int16_t>(v));
      break;
    case ScalarType::I32:
      put(static_cast<int32_t>(v));
      break;
    case ScalarType::U32:
      put(static_cast<uint32_t>(v));
      break;
    default:
      put(v);
  }
  storage_.push_back(slot);
  return *this;
}

std::vector<void*> LaunchArgs::pointers() {
  if (storage_.size() != params_.size())
    throw ValueError("[cuda " + name_ + "] " + std::to_string(storage_.size()) + " arguments for " +
                     std::to_string(params_.size()) + " parameters");
  std::vector<void*> p;
  for (uint64_t& s : storage_) p.push_back(&s);
  return p;
}

Module::Module(const kernel::CudaBinary& bin) : name_(bin.kernel) {
  const Api& a = api();
  check(a.ModuleLoadData(&m_, bin.data.data()), "cuModuleLoadData");
  CUresult r = a.ModuleGetFunction(&f_, m_, bin.kernel.c_str());
  if (r != kSuccess) {
    a.ModuleUnload(m_);
    m_ = nullptr;
    check(r, "cuModuleGetFunction");
  }
}
Module::~Module() {
  if (m_) api_raw().ModuleUnload(m_);
}

void Module::launch(const kernel::Kernel& k, int64_t groups, LaunchArgs& args, const Stream* s) {
  if (groups <= 0) return;
  if (groups > 0x7fffffff)
    throw ValueError("[cuda " + name_ + "] " + std::to_string(groups) +
                     " workgroups is over 2^31 - 1");
  std::vector<void*> p = args.pointers();
  check(api().LaunchKernel(f_, static_cast<unsigned>(groups), 1, 1, k.workgroup[0], k.workgroup[1],
                           k.workgroup[2], 0, s ? s->get() : nullptr, p.data(), nullptr),
        "cuLaunchKernel");
}

namespace raw {

CuContext* primary_context(int device) {
  static std::mutex mu;
  static std::vector<CuContext*> ctxs;
  std::lock_guard lk(mu);
  if (device >= 0 && size_t(device) < ctxs.size() && ctxs[device]) return ctxs[device];
  const Api& a = api();
  CUdevice d = 0;
  check(a.DeviceGet(&d, device), "cuDeviceGet");
  CuContext* c = nullptr;
  check(a.DevicePrimaryCtxRetain(&c, d), "cuDevicePrimaryCtxRetain");
  if (ctxs.size() <= size_t(device)) ctxs.resize(device + 1);
  ctxs[device] = c;  // kept for the process: released contexts would free the caches' memory
  return c;
}
void set_current(CuContext* ctx) { check(api().CtxSetCurrent(ctx), "cuCtxSetCurrent"); }

bool try_alloc(DevicePtr* p, size_t bytes) {
  CUresult r = api().MemAlloc(p, bytes);
  if (r == kOutOfMemory) return false;
  check(r, "cuMemAlloc", bytes);
  return true;
}
void free(DevicePtr p) {
  if (p) check(api().MemFree(p), "cuMemFree");
}
void* host_alloc(size_t bytes) {
  void* p = nullptr;
  CUresult r = api().MemHostAlloc(&p, bytes, 0);
  if (r == kOutOfMemory) return nullptr;
  check(r, "cuMemHostAlloc", bytes);
  return p;
}
void host_free(void* p) {
  if (p) check(api().MemFreeHost(p), "cuMemFreeHost");
}
void copy_htod(DevicePtr dst, const void* src, size_t bytes, CuStream* s) {
  if (bytes) check(api().MemcpyHtoDAsync(dst, src, bytes, s), "cuMemcpyHtoDAsync");
}
void copy_dtoh(void* dst, DevicePtr src, size_t bytes, CuStream* s) {
  if (bytes) check(api().MemcpyDtoHAsync(dst, src, bytes, s), "cuMemcpyDtoHAsync");
}
void copy_dtod(DevicePtr dst, DevicePtr src, size_t bytes, CuStream* s) {
  if (bytes) check(api().MemcpyDtoDAsync(dst, src, bytes, s), "cuMemcpyDtoDAsync");
}
void memset(DevicePtr dst, uint32_t value, int elem_bytes, size_t count, CuStream* s) {
  if (!count) return;
  const Api& a = api();
  if (elem_bytes == 1)
    check(a.MemsetD8Async(dst, static_cast<unsigned char>(value), count, s), "cuMemsetD8Async");
  else if (elem_bytes == 2)
    check(a.MemsetD16Async(dst, static_cast<unsigned short>(value), count, s), "cuMemsetD16Async");
  else
    check(a.MemsetD32Async(dst, value, count, s), "cuMemsetD32Async");
}
void launch(CuFunction* f, unsigned groups, const int* block, unsigned shared_bytes, CuStream* s,
            void** args) {
  check(api().LaunchKernel(f, groups, 1, 1, block[0], block[1], block[2], shared_bytes, s, args,
                           nullptr),
        "cuLaunchKernel");
}
void stream_synchronize(CuStream* s) { check(api().StreamSynchronize(s), "cuStreamSynchronize"); }

bool graphs_available() { return api().graphs; }
void begin_capture(CuStream* s) {
  constexpr int kRelaxed = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED: other threads may allocate
  check(api().StreamBeginCapture(s, kRelaxed), "cuStreamBeginCapture");
}
CuGraph* end_capture(CuStream* s) {
  CuGraph* g = nullptr;
  check(api().StreamEndCapture(s, &g), "cuStreamEndCapture");
  return g;
}
CuGraphNode* last_captured(CuStream* s) {
  int status = 0;
  uint64_t id = 0;
  CuGraph* g = nullptr;
  CuGraphNode* const* deps = nullptr;
  const void* edges = nullptr;
  size_t n = 0;
  check(api().StreamGetCaptureInfo(s, &status, &id, &g, &deps, &edges, &n),
        "cuStreamGetCaptureInfo");
  return n == 1 ? deps[0] : nullptr;
}
CuGraphExec* instantiate(CuGraph* g) {
  CuGraphExec* e = nullptr;
  check(api().GraphInstantiate(&e, g, 0), "cuGraphInstantiate");
  return e;
}
void graph_launch(CuGraphExec* e, CuStream* s) { check(api().GraphLaunch(e, s), "cuGraphLaunch"); }
void set_kernel_node(CuGraphExec* e, CuGraphNode* node, CuFunction* f, unsigned groups,
                     const int* block, void** args) {
  struct {  // CUDA_KERNEL_NODE_PARAMS_v2
    CuFunction* func;
    unsigned grid[3], block[3], shared;
    void** params;
    void** extra;
    void* kern;
    void* ctx;
  } p{f,       {groups, 1, 1}, {unsigned(block[0]), unsigned(block[1]), unsigned(block[2])},
      0,       args,           nullptr,
      nullptr, nullptr};
  check(api().GraphExecKernelNodeSetParams(e, node, &p), "cuGraphExecKernelNodeSetParams");
}
void set_memset_node(CuGraphExec* e, CuGraphNode* node, DevicePtr dst, uint32_t value,
                     int elem_bytes, size_t count) {
  struct {  // CUDA_MEMSET_NODE_PARAMS
    DevicePtr dst;
    size_t pitch;
    unsigned value, element;
    size_t width, height;
  } p{dst, 0, value, unsigned(elem_bytes), count, 1};
  CuContext* ctx = nullptr;
  check(api().CtxGetCurrent(&ctx), "cuCtxGetCurrent");
  check(api().GraphExecMemsetNodeSetParams(e, node, &p, ctx), "cuGraphExecMemsetNodeSetParams");
}
void destroy(CuGraphExec* e) noexcept {
  if (e) api().GraphExecDestroy(e);
}
void destroy(CuGraph* g) noexcept {
  if (g) api().GraphDestroy(g);
}
void mem_info(size_t* free_bytes, size_t* total_bytes) {
  check(api().MemGetInfo(free_bytes, total_bytes), "cuMemGetInfo");
}

}  // namespace raw

}  // namespace ember::cuda
