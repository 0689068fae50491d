#include "ember/distributed/nccl.h"

#include <cstdlib>
#include <cstring>
#include <vector>

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

// Makes device `d`'s primary context current (NCCL works on the current device).
void use_device(int d) {
  using CUresult = int;
  static kernel::DynLib cuda;
  static CUresult (*init)(unsigned) = nullptr;
  static CUresult (*get)(int*, int) = nullptr;
  static CUresult (*retain)(void**, int) = nullptr;
  static CUresult (*set)(void*) = nullptr;
  static std::string why;
  static const bool ok = cuda.open({"libcuda.so.1"}, why) && cuda.bind(init, {"cuInit"}, why) &&
                         cuda.bind(get, {"cuDeviceGet"}, why) &&
                         cuda.bind(retain, {"cuDevicePrimaryCtxRetain"}, why) &&
                         cuda.bind(set, {"cuCtxSetCurrent"}, why) && init(0) == 0;
  int dev = 0;
  void* ctx = nullptr;
  if (!ok || get(&dev, d) != 0 || retain(&ctx, dev) != 0 || set(ctx) != 0)
    throw DistributedError("[nccl] no CUDA device " + std::to_string(d) +
                           (why.empty() ? "" : ": " + why));
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

NcclGroup::NcclGroup(ProcessGroup& pg, int cuda_device) : rank_(pg.rank()), size_(pg.world_size()) {
  const Nccl& n = api();
  use_device(cuda_device);
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

void NcclGroup::all_reduce(uint64_t ptr, size_t count, DType dtype, Reduce op, void* stream) {
  int t = nccl_type(dtype);
  if (count == 0) return;
  void* p = reinterpret_cast<void*>(ptr);
  check(api().AllReduce(p, p, count, t, nccl_op(op), comm_, stream), "ncclAllReduce");
}

void NcclGroup::broadcast(uint64_t ptr, size_t count, DType dtype, int root, void* stream) {
  if (root < 0 || root >= size_)
    throw DistributedError("[nccl] broadcast root " + std::to_string(root) + " is not a rank of " +
                           std::to_string(size_));
  int t = nccl_type(dtype);
  if (count == 0) return;
  void* p = reinterpret_cast<void*>(ptr);
  check(api().Broadcast(p, p, count, t, root, comm_, stream), "ncclBroadcast");
}

}  // namespace ember::dist
