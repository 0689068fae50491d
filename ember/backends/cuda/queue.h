// Internal: the host-side queue of a CUDA device's stream. Launches, copies, fills and GEMMs are
// queued here instead of being submitted one by one, and submitted in batches: when the stream
// is flushed (ember::flush, a read, a synchronize, an upload, a cuDNN call) or when a batch
// holds EMBER_CUDA_BATCH commands (default 64) whose kernels are all compiled. Two things come
// of it:
//
// - A kernel still compiling (compile_jobs.h) holds back only its batch: the host records on,
//   and the kernels of a whole first step compile side by side.
// - A batch that repeats is replayed as a CUDA graph: one launch instead of one per command.
//   A batch is the same as an earlier one when it runs the same kernels on the same grids and
//   buffers, and the same copies, fills and GEMMs; scalar arguments and fill values (a
//   learning rate, Adam's bias correction) may differ and are patched into the graph's nodes. The
//   second time a batch is seen it is captured; from the third on it is replayed.
//   EMBER_CUDA_GRAPHS=0 or cuda::set_graphs(false) submits every command on its own.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/backends/cuda/cuda.h"
#include "ember/backends/cuda/driver.h"
#include "ember/backends/gpu/runtime.h"

namespace ember::cuda::detail {

struct CudaLoaded;

class CommandQueue {
 public:
  explicit CommandQueue(CuStream* s);
  ~CommandQueue();
  CommandQueue(const CommandQueue&) = delete;

  /// Queue a launch of `k` on `groups` workgroups with packed argument slots, a copy, a fill or
  /// a GEMM; each returns whether the batch is now due (full, every kernel compiled).
  bool launch(const CudaLoaded& k, unsigned groups, const uint64_t* slots, size_t n);
  bool copy(DevicePtr dst, DevicePtr src, size_t bytes);
  bool fill(DevicePtr dst, uint32_t pattern, int size, size_t count);
  bool gemm(const gpu::GemmCall& g, DevicePtr a, DevicePtr b, DevicePtr c, std::string shapes);
  /// Submits what is queued to the stream (the calling thread runs it; a no-op while the
  /// queue is already being submitted on this thread, whose commands then run at once).
  /// `run_gemm` runs one GEMM on the stream. Throws the first failure; the batch is dropped.
  template <class RunGemm>
  void submit(RunGemm&& run_gemm) {
    submit_impl([&](const Gemm& g) { run_gemm(g.call, g.a, g.b, g.c, g.shapes); });
  }
  /// Whether this thread is submitting a batch now (commands run at once meanwhile).
  static bool submitting();

 private:
  enum Kind : uint8_t { Launch, Copy, Fill, GemmCmd };
  struct Cmd {
    Kind kind;
    unsigned groups = 0;
    const CudaLoaded* k = nullptr;
    uint32_t slot0 = 0, nslots = 0;  // a launch's argument slots in slots_ (a fill's value)
    DevicePtr dst = 0, src = 0;      // copy, fill
    size_t count = 0;                // bytes of a copy, elements of a fill
    int size = 0;
    uint32_t gemm = 0;  // index into gemms_
  };
  struct Gemm {
    gpu::GemmCall call;
    DevicePtr a, b, c;
    std::string shapes;
  };
  struct Graph;
  void submit_impl(const std::function<void(const Gemm&)>& run_gemm);
  void run(const std::function<void(const Gemm&)>& run_gemm, Graph* capture);
  void key(uint64_t w) {
    key_.push_back(w);
    hash_ = (hash_ ^ w) * 0x100000001b3ull;
  }
  void clear();
  bool due_locked() const;
  static bool debug();
  void explain_miss();
  std::unordered_map<size_t, std::vector<uint64_t>> last_miss_;  // debug only

  CuStream* s_;
  mutable std::mutex mu_;
  std::vector<Cmd> cmds_;
  std::vector<uint64_t> slots_;
  std::vector<Gemm> gemms_;
  std::vector<uint64_t> key_;  // the batch's structure: everything but scalar arguments
  uint64_t hash_ = 0xcbf29ce484222325ull;
  bool pending_compiles_ = false;

  std::vector<std::unique_ptr<Graph>> graphs_;  // most recently used last
  std::unordered_map<uint64_t, int> seen_;      // batches by hash: times seen
  uint64_t tick_ = 0;
};

/// The process's counts (cuda::graph_stats) and the switch (cuda::set_graphs).
GraphStats queue_stats();
void reset_queue_stats();
void set_graphs_enabled(bool on);
/// Whether batches are captured and replayed as CUDA graphs (EMBER_CUDA_GRAPHS, set_graphs).
bool graphs_enabled();
/// Commands a batch holds before it is submitted (EMBER_CUDA_BATCH, default 64).
size_t batch_limit();

}  // namespace ember::cuda::detail
