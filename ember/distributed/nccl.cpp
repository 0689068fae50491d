#include "ember/distributed/nccl.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "ember/distributed/grad_sync.h"
#include "ember/kernel/dynlib.h"

namespace ember::dist {

namespace {

using Result = int;  // ncclResult_t
struct UniqueId {
  char bytes[128];
};

// The few NCCL entry points used (nccl.h is not needed to build ember).
struct Nccl {
  kernel::DynLib lib;
  std::string error;
  Result (*GetVersion)(int*) = nullptr;
  Result (*GetUniqueId)(UniqueId*) = nullptr;
  Result (*CommInitRank)(void**, int, UniqueId, int) = nullptr;
  Result (*CommDestroy)(void*) = nullptr;
  Result (*AllReduce)(const void*, void*, size_t, int, int, void*, void*) = nullptr;
  Result (*Broadcast)(const void*, void*, size_t, int, int, void*, void*) = nullptr;
  Result (*CommGetAsyncError)(void*, Result*) = nullptr;
  Result (*CommAbort)(void*) = nullptr;
  const char* (*GetErrorString)(Result) = nullptr;
  bool ready = false;
  Nccl() {
    std::vector<std::string> names;
    if (const char* e = std::getenv("EMBER_NCCL")) names.push_back(e);
    names.push_back("libnccl.so.2");
    names.push_back("libnccl.so");
    if (!lib.open(names, error)) {
      error = "no NCCL: " + error;
      return;
    }
    ready = lib.bind(GetVersion, {"ncclGetVersion"}, error) &&
            lib.bind(GetUniqueId, {"ncclGetUniqueId"}, error) &&
            lib.bind(CommInitRank, {"ncclCommInitRank"}, error) &&
            lib.bind(CommDestroy, {"ncclCommDestroy"}, error) &&
            lib.bind(AllReduce, {"ncclAllReduce"}, error) &&
            lib.bind(Broadcast, {"ncclBroadcast"}, error) &&
            lib.bind(CommGetAsyncError, {"ncclCommGetAsyncError"}, error) &&
            lib.bind(CommAbort, {"ncclCommAbort"}, error) &&
            lib.bind(GetErrorString, {"ncclGetErrorString"}, error);
  }
};

// NCCL as loaded once for the process (ready or not).
const Nccl& loaded() {
  static const Nccl n;
  return n;
}

const Nccl& api() {
  const Nccl& n = loaded();
  if (!n.ready) throw DistributedError("[nccl] " + n.error);
  return n;
}

void check(Result r, const char* call) {
  if (r != 0)
    throw DistributedError(std::string("[nccl] ") + call + " failed: " + api().GetErrorString(r) +
                           " (" + std::to_string(r) + ")");
}

int nccl_type(DType t) {  // ncclDataType_t
  switch (t) {
    case DType::I32:
      return 2;
    case DType::I64:
      return 4;
    case DType::F16:
      return 6;
    case DType::F32:
      return 7;
    case DType::F64:
      return 8;
    case DType::BF16:
      return 9;
    default:
      throw DTypeError("[nccl] " + std::string(name(t)) +
                       " is not reduced across GPUs (f32, f64, f16, bf16, i32, i64 are)");
  }
}

int nccl_op(Reduce op) {  // ncclRedOp_t
  switch (op) {
    case Reduce::Sum:
      return 0;
    case Reduce::Max:
      return 2;
    case Reduce::Min:
      return 3;
    case Reduce::Mean:
      return 4;  // ncclAvg
  }
  return 0;
}

// The CUDA driver's entry points used here: the device's primary context, and events to wait
// for a stream.
struct Driver {
  using CUresult = int;
  kernel::DynLib lib;
  std::string why;
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*DeviceGet)(int*, int) = nullptr;
  CUresult (*PrimaryCtxRetain)(void**, int) = nullptr;
  CUresult (*CtxSetCurrent)(void*) = nullptr;
  CUresult (*CtxGetCurrent)(void**) = nullptr;
  CUresult (*DeviceGetPCIBusId)(char*, int, int) = nullptr;
  CUresult (*EventCreate)(void**, unsigned) = nullptr;
  CUresult (*EventRecord)(void*, void*) = nullptr;
  CUresult (*EventQuery)(void*) = nullptr;
  CUresult (*EventDestroy)(void*) = nullptr;
  bool ok = false;
  Driver() {
    ok = lib.open({"libcuda.so.1"}, why) && lib.bind(Init, {"cuInit"}, why) &&
         lib.bind(DeviceGet, {"cuDeviceGet"}, why) &&
         lib.bind(PrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, why) &&
         lib.bind(CtxSetCurrent, {"cuCtxSetCurrent"}, why) &&
         lib.bind(CtxGetCurrent, {"cuCtxGetCurrent"}, why) &&
         lib.bind(DeviceGetPCIBusId, {"cuDeviceGetPCIBusId"}, why) &&
         lib.bind(EventCreate, {"cuEventCreate"}, why) &&
         lib.bind(EventRecord, {"cuEventRecord"}, why) &&
         lib.bind(EventQuery, {"cuEventQuery"}, why) &&
         lib.bind(EventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}, why) && Init(0) == 0;
  }
};

const Driver& driver() {
  static const Driver d;
  return d;
}

// Makes device `d`'s primary context current (NCCL works on the current device) until the
// object goes, then the context that was current before.
class OnDevice {
 public:
  explicit OnDevice(int d) {
    const Driver& cu = driver();
    int dev = 0;
    void* ctx = nullptr;
    if (!cu.ok || cu.CtxGetCurrent(&before_) != 0 || cu.DeviceGet(&dev, d) != 0 ||
        cu.PrimaryCtxRetain(&ctx, dev) != 0 || cu.CtxSetCurrent(ctx) != 0)
      throw DistributedError("[nccl] no CUDA device " + std::to_string(d) +
                             (cu.why.empty() ? "" : ": " + cu.why));
  }
  ~OnDevice() { driver().CtxSetCurrent(before_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  void* before_ = nullptr;
};

// Which GPU device `d` is across processes: its PCI bus id ("" where the driver does not say).
std::string bus_id(int d) {
  const Driver& cu = driver();
  int dev = 0;
  char id[64] = {};
  if (!cu.ok || cu.DeviceGet(&dev, d) != 0 || cu.DeviceGetPCIBusId(id, sizeof id, dev) != 0)
    return "";
  return id;
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "";
}

}  // namespace

bool nccl_available(std::string* why) {
  const Nccl& n = loaded();
  if (!n.ready && why) *why = n.error;
  return n.ready;
}

int nccl_version() {
  int v = 0;
  check(api().GetVersion(&v), "ncclGetVersion");
  return v;
}

NcclGroup::NcclGroup(ProcessGroup& pg, int cuda_device)
    : rank_(pg.rank()),
      size_(pg.world_size()),
      device_(cuda_device),
      timeout_(pg.timeout()),
      gone_ranks_(pg.gone_ranks_probe()) {
  const Nccl& n = api();
  check(n.GetVersion(&version_), "ncclGetVersion");
  OnDevice on(cuda_device);
  UniqueId id{};
  if (rank_ == 0) check(n.GetUniqueId(&id), "ncclGetUniqueId");
  TensorData bytes(std::vector<std::byte>(sizeof id), Shape{int64_t(sizeof id)}, DType::U8);
  std::memcpy(bytes.bytes().data(), &id, sizeof id);
  TensorData got = pg.broadcast(bytes, 0);
  std::memcpy(&id, got.bytes().data(), sizeof id);
  check(n.CommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
}

NcclGroup::~NcclGroup() {
  if (comm_) api().CommDestroy(comm_);
}

void* NcclGroup::live_comm(const char* op) const {
  if (!aborted_.empty())
    throw DistributedError(std::string("[") + op + "] rank " + std::to_string(rank_) + " of " +
                           std::to_string(size_) + ": the NCCL communicator was aborted earlier (" +
                           aborted_ + ")");
  return comm_;
}

void NcclGroup::fail(const char* op, const std::string& why) {
  std::string msg = std::string("[") + op + "] rank " + std::to_string(rank_) + " of " +
                    std::to_string(size_) + ": " + why;
  // Aborting ends the communicator's kernels that wait for the lost rank, so the stream (and
  // every op of ember queued after them) goes on.
  if (comm_) api().CommAbort(comm_);
  comm_ = nullptr;
  aborted_ = why;
  throw DistributedError(msg);
}

NcclGroup::Marker NcclGroup::mark(void* stream) {
  const Driver& cu = driver();
  void* event = nullptr;
  if (!cu.ok || cu.EventCreate(&event, 2 /* CU_EVENT_DISABLE_TIMING */) != 0)
    throw DistributedError("[nccl] cannot make a CUDA event" +
                           (cu.why.empty() ? "" : ": " + cu.why));
  Marker m{std::shared_ptr<void>(event, [](void* e) { driver().EventDestroy(e); })};
  if (cu.EventRecord(event, stream) != 0)
    throw DistributedError("[nccl] cannot record a CUDA event on the stream");
  return m;
}

void NcclGroup::wait(const Marker& m, const char* op) {
  void* comm = live_comm(op);
  const Driver& cu = driver();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto next_check = start;
  for (int polls = 0;; ++polls) {
    int q = cu.EventQuery(m.event.get());
    if (q == 0) return;
    if (q != 600 /* CUDA_ERROR_NOT_READY */)
      fail(op, "the CUDA stream failed (CUresult " + std::to_string(q) + ")");
    const auto now = Clock::now();
    if (now >= next_check) {  // the watch, ten times a second
      next_check = now + std::chrono::milliseconds(100);
      // A lost rank first: NCCL may report its own error for the same loss.
      if (std::vector<int> gone = gone_ranks_ ? gone_ranks_() : std::vector<int>{}; !gone.empty())
        fail(op, "lost rank " + detail::rank_list(gone) + " (its process is gone)");
      Result async = 0;
      api().CommGetAsyncError(comm, &async);
      if (async != 0 && async != 7 /* ncclInProgress */)
        fail(op, std::string("NCCL reports ") + api().GetErrorString(async) + " (" +
                     std::to_string(async) + ")");
      if (now - start > timeout_)
        fail(op, "a peer did not answer within " + std::to_string(timeout_.count()) + " ms");
    }
    // Spin briefly (a bucket's all-reduce takes microseconds), then sleep a little.
    if (polls < 2000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

bool ProcessGroup::nccl_usable(int cuda_device) {
  if (nccl_usable_ < 0) {
    // Every rank's verdict and GPU, gathered: NCCL on all of them or on none.
    std::string id = nccl_available() ? bus_id(cuda_device) : "";
    std::string key = id.empty() ? "" : id + "@" + host_name();
    std::vector<int64_t> mine(2, 0);
    mine[0] = key.empty() ? 0 : 1;
    mine[1] = int64_t(std::hash<std::string>{}(key)&0x7fffffffffffffff);
    TensorData all = all_gather(TensorData::from<int64_t>(mine, {2}));
    auto v = all.as<int64_t>();
    bool ok = true;
    for (int r = 0; r < world_size(); ++r) {
      ok = ok && v[size_t(2 * r)] == 1;
      for (int q = 0; q < r; ++q) ok = ok && v[size_t(2 * q + 1)] != v[size_t(2 * r + 1)];
    }
    nccl_usable_ = ok ? 1 : 0;
  }
  return nccl_usable_ == 1;
}

GradTransport resolve_grad_transport(ProcessGroup& pg, Device device, GradTransport asked) {
  if (asked == GradTransport::Auto) {
    if (const char* e = std::getenv("EMBER_GRAD_SYNC"); e && *e) {
      std::string v = e;
      if (v == "host")
        asked = GradTransport::Host;
      else if (v == "nccl")
        asked = GradTransport::Nccl;
      else
        throw DistributedError("[all_reduce_grads] EMBER_GRAD_SYNC=" + v +
                               " is not a transport (host or nccl)");
    }
  }
  const bool cuda = device.kind == DeviceKind::Cuda;
  std::string why;
  switch (asked) {
    case GradTransport::Host:
      return GradTransport::Host;
    case GradTransport::Nccl:
      if (!cuda)
        throw DistributedError("[all_reduce_grads] NCCL averages CUDA gradients; these are on " +
                               device.to_string());
      if (!nccl_available(&why)) throw DistributedError("[all_reduce_grads] " + why);
      return GradTransport::Nccl;
    case GradTransport::Auto:
      break;
  }
  return cuda && pg.world_size() > 1 && pg.nccl_usable(device.index) ? GradTransport::Nccl
                                                                     : GradTransport::Host;
}

NcclGroup& ProcessGroup::nccl(int cuda_device) {
  if (!nccl_) {
    nccl_ = std::make_unique<NcclGroup>(*this, cuda_device);
  } else if (nccl_->device() != cuda_device) {
    throw DistributedError("[nccl] rank " + std::to_string(rank()) +
                           "'s communicator is on cuda:" + std::to_string(nccl_->device()) +
                           ", not cuda:" + std::to_string(cuda_device) + " (one GPU a rank)");
  }
  return *nccl_;
}

void NcclGroup::all_reduce(uint64_t ptr, size_t count, DType dtype, Reduce op, void* stream) {
  int t = nccl_type(dtype);
  if (op == Reduce::Mean && version_ < 21000)
    throw DistributedError("[nccl] a mean over the ranks needs NCCL 2.10 or newer (this is " +
                           std::to_string(version_) + ")");
  if (count == 0) return;
  void* p = reinterpret_cast<void*>(ptr);
  check(api().AllReduce(p, p, count, t, nccl_op(op), live_comm("all_reduce"), stream),
        "ncclAllReduce");
}

void NcclGroup::broadcast(uint64_t ptr, size_t count, DType dtype, int root, void* stream) {
  if (root < 0 || root >= size_)
    throw DistributedError("[nccl] broadcast root " + std::to_string(root) + " is not a rank of " +
                           std::to_string(size_));
  int t = nccl_type(dtype);
  if (count == 0) return;
  void* p = reinterpret_cast<void*>(ptr);
  check(api().Broadcast(p, p, count, t, root, live_comm("broadcast"), stream), "ncclBroadcast");
}

}  // namespace ember::dist
