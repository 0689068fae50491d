// NCCL collectives of CUDA device memory across the ranks of a ProcessGroup, one GPU per rank
// (docs/distributed.md). NCCL is loaded at run time (libnccl.so.2, or $EMBER_NCCL), so
// programs start on machines without it. Rank 0's NCCL id reaches the others through the
// process group; the collectives are queued on a CUDA stream, and `wait` waits for them while it
// watches the other ranks: a rank whose process is gone, an error NCCL reports or the group's
// timeout ends the wait with DistributedError and aborts the communicator, so a lost rank
// never leaves the others hanging in a collective. ProcessGroup::nccl(device) holds one
// communicator per group, which all_reduce_grads (data_parallel.h) uses for CUDA gradients.
//
//   auto pg = ember::dist::ProcessGroup::from_env();
//   std::string why;
//   if (ember::dist::nccl_available(&why)) {
//     ember::dist::NcclGroup nccl(pg, /*cuda device*/ pg.rank());
//     // nccl.all_reduce(device_ptr, count, ember::DType::F32, ember::dist::Reduce::Mean, stream);
//   }
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/distributed/process_group.h"

namespace ember::dist {

/// Whether NCCL loads; `why` says why not. Needs no GPU.
EMBER_API bool nccl_available(std::string* why = nullptr);
/// NCCL's version (e.g. 22703 for 2.27.3); throws DistributedError when it does not load.
EMBER_API int nccl_version();

class EMBER_API NcclGroup {
 public:
  /// A communicator of pg's ranks on CUDA device `cuda_device` of this rank (its primary
  /// context is made current on the calling thread). Every rank of pg calls it.
  NcclGroup(ProcessGroup& pg, int cuda_device);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return size_; }
  int device() const { return device_; }
  /// In place: `count` elements of `dtype` (f32, f64, f16, bf16, i32, i64) at device address
  /// `ptr`, reduced over the ranks; queued on `stream` (a CUstream; nullptr: the default).
  void all_reduce(uint64_t ptr, size_t count, DType dtype, Reduce op, void* stream = nullptr);
  /// `root`'s `count` elements at `ptr` to every rank's `ptr`.
  void broadcast(uint64_t ptr, size_t count, DType dtype, int root, void* stream = nullptr);
  /// A point on a stream: what was queued on it before `mark` (a CUDA event).
  struct Marker {
    std::shared_ptr<void> event;
  };
  /// Marks what is queued on `stream` so far, for `wait` (which need not hold the stream).
  Marker mark(void* stream);
  /// Waits until the marked work has run. Throws DistributedError naming `op` and this rank
  /// when a rank of this host is gone, NCCL reports an error, or the group's timeout passes
  /// first; the communicator is then aborted (its kernels end) and every later call throws.
  void wait(const Marker& m, const char* op = "nccl");
  /// mark, then wait.
  void wait(void* stream, const char* op = "nccl") { wait(mark(stream), op); }

 private:
  void* live_comm(const char* op) const;
  [[noreturn]] void fail(const char* op, const std::string& why);

  void* comm_ = nullptr;
  int rank_ = 0, size_ = 1, device_ = 0, version_ = 0;
  std::chrono::milliseconds timeout_{};
  std::function<std::vector<int>()> gone_ranks_;
  std::string aborted_;  // why the communicator was aborted
};

}  // namespace ember::dist
