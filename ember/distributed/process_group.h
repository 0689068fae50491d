// Collective operations across processes (ranks), for data-parallel training
// (docs/distributed.md). A ProcessGroup connects every rank of a job to every other through
// Gloo's TCP transport, after a rendezvous in a store (a directory every rank can reach, which
// the launcher `ember-run` creates). Host tensors travel; a device tensor is copied to the
// host and back.
//
//   // started by `ember-run --nproc 2 -- ./train` (RANK, WORLD_SIZE, EMBER_STORE set)
//   auto pg = ember::dist::ProcessGroup::from_env();
//   std::vector<float> g(1000, float(pg.rank()));
//   pg.all_reduce(g.data(), g.size(), ember::dist::Reduce::Mean);  // 0.5 everywhere
//   pg.barrier();
//
// A rank that stops answering (killed, hung, disconnected) makes every collective of the
// others throw DistributedError within the group's timeout, naming the ranks that are gone
// when they ran on this host: never a hang. A group of more than one rank ignores SIGPIPE
// (when its action is the default), so a write to a lost peer is that error, not the end of
// the process.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/dtype.h"
#include "ember/core/error.h"
#include "ember/core/export.h"
#include "ember/core/tensor_data.h"

namespace ember::dist {

/// A collective failed: a rank is gone or too slow, or the group could not be formed.
class EMBER_API DistributedError : public Error {
 public:
  using Error::Error;
};

enum class Reduce { Sum, Mean, Max, Min };

class NcclGroup;

namespace detail {
/// "1, 3": ranks as a message names them.
EMBER_API std::string rank_list(const std::vector<int>& ranks);
}  // namespace detail

struct GroupOptions {
  int rank = 0;
  int world_size = 1;
  /// The rendezvous: a directory every rank can reach (created when missing).
  std::string store;
  /// This rank's address for the others (loopback for one host).
  std::string host = "127.0.0.1";
  /// How long a collective (and forming the group) may wait for the other ranks.
  std::chrono::milliseconds timeout{30000};
};

class EMBER_API ProcessGroup {
 public:
  /// Forms the group: waits (up to the timeout) until every rank has joined.
  explicit ProcessGroup(const GroupOptions& o);
  /// From the environment ember-run (or torchrun with EMBER_STORE) sets: RANK, WORLD_SIZE,
  /// EMBER_STORE, and optionally EMBER_HOST and EMBER_DIST_TIMEOUT (seconds).
  static ProcessGroup from_env();
  /// Whether the environment names a group: more than one rank, or started by ember-run (its
  /// EMBER_STORE is set, one rank too).
  static bool in_env();
  ProcessGroup(ProcessGroup&&) noexcept;
  ProcessGroup& operator=(ProcessGroup&&) noexcept;
  ~ProcessGroup();

  int rank() const;
  int world_size() const;
  /// How long a collective waits for the others.
  std::chrono::milliseconds timeout() const;
  /// A function naming the ranks whose processes on this host have ended (ranks on other hosts
  /// are not seen), for watching collectives that run outside the group (NCCL's). It holds
  /// what it needs: it may outlive the group.
  std::function<std::vector<int>()> gone_ranks_probe() const;
  /// The group's NCCL communicator (nccl.h) on CUDA device `cuda_device` of this rank, formed
  /// by every rank's first call (a collective); the same one afterwards. Throws
  /// DistributedError when NCCL does not load or a later call names another device.
  NcclGroup& nccl(int cuda_device);
  /// Whether NCCL can join this group's ranks on their CUDA devices (`cuda_device` here): it
  /// loads on every rank and no two ranks share a GPU. Decided by every rank's first call
  /// together (a collective), then kept.
  bool nccl_usable(int cuda_device);

  /// In place: every rank ends with the reduction of all ranks' `count` elements of `dtype`
  /// (f32, f64, i32, i64).
  void all_reduce(void* data, size_t count, DType dtype, Reduce op = Reduce::Sum);
  void all_reduce(float* data, size_t count, Reduce op = Reduce::Sum) {
    all_reduce(data, count, DType::F32, op);
  }
  /// A tensor's data, reduced over the ranks (shapes and dtypes must agree).
  TensorData all_reduce(const TensorData& t, Reduce op = Reduce::Sum);
  /// Every rank ends with `root`'s data (its shape and dtype too).
  TensorData broadcast(const TensorData& t, int root = 0);
  /// The ranks' tensors (the same shape) stacked along a new first dim, in rank order.
  TensorData all_gather(const TensorData& t);
  /// The reduction of all ranks' tensors, cut along dim 0 into world_size equal parts: this
  /// rank's part (dim 0 must divide by world_size).
  TensorData reduce_scatter(const TensorData& t, Reduce op = Reduce::Sum);
  void barrier();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<NcclGroup> nccl_;
  int nccl_usable_ = -1;  // not yet decided
};

}  // namespace ember::dist
