#include "ember/backends/cuda/queue.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "ember/backends/cuda/env.h"
#include "ember/backends/cuda/runtime.h"

namespace ember::cuda::detail {

namespace {

thread_local bool t_submitting = false;

std::atomic<int> g_graphs{-1};  // -1: not read from the environment yet

constexpr size_t kMinGraph = 4;      // fewer commands: launching them is cheaper
constexpr size_t kMaxGraphs = 16;    // instantiated graphs kept per device
constexpr size_t kHardLimit = 4096;  // commands queued while kernels still compile

struct Submitting {
  Submitting() { t_submitting = true; }
  ~Submitting() { t_submitting = false; }
};

}  // namespace

bool graphs_enabled() {
  int v = g_graphs.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* e = std::getenv("EMBER_CUDA_GRAPHS");
    v = !(e && (std::string_view(e) == "0" || std::string_view(e) == "off"));
    g_graphs.store(v, std::memory_order_relaxed);
  }
  return v && raw::graphs_available();
}

size_t batch_limit() {
  static const size_t n = [] {
    const char* e = std::getenv("EMBER_CUDA_BATCH");
    long v = e ? std::atol(e) : 64;
    return size_t(std::clamp(v, 1L, long(kHardLimit)));
  }();
  return n;
}

namespace {
struct Counters {
  std::atomic<int64_t> batches{0}, commands{0}, captured{0}, replayed{0}, patched_nodes{0},
      uncapturable{0};
} g_stats;
}  // namespace

GraphStats queue_stats() {
  Counters& c = g_stats;
  return {c.batches.load(),  c.commands.load(),      c.captured.load(),
          c.replayed.load(), c.patched_nodes.load(), c.uncapturable.load()};
}
void reset_queue_stats() {
  for (auto* a : {&g_stats.batches, &g_stats.commands, &g_stats.captured, &g_stats.replayed,
                  &g_stats.patched_nodes, &g_stats.uncapturable})
    a->store(0);
}
void set_graphs_enabled(bool on) { g_graphs.store(on ? 1 : 0); }

/// A captured batch: its structure, the scalar slots it was last launched with, and the graph
/// node of each launch (to patch scalars into).
struct CommandQueue::Graph {
  std::vector<uint64_t> key;
  uint64_t hash = 0;
  std::vector<uint64_t> slots;
  std::vector<CuGraphNode*> nodes;  // per command (nullptr: not a launch)
  CuGraph* graph = nullptr;
  CuGraphExec* exec = nullptr;
  uint64_t used = 0;
  ~Graph() {
    raw::destroy(exec);
    raw::destroy(graph);
  }
};

CommandQueue::CommandQueue(CuStream* s) : s_(s) {}
CommandQueue::~CommandQueue() = default;

bool CommandQueue::submitting() { return t_submitting; }

bool CommandQueue::launch(const CudaLoaded& k, unsigned groups, const uint64_t* slots, size_t n) {
  std::lock_guard lk(mu_);
  Cmd c{Launch};
  c.groups = groups;
  c.k = &k;
  c.slot0 = uint32_t(slots_.size());
  c.nslots = uint32_t(n);
  slots_.insert(slots_.end(), slots, slots + n);
  cmds_.push_back(c);
  key(uint64_t(Launch) | uint64_t(n) << 8);
  key(reinterpret_cast<uintptr_t>(&k));
  key(groups);
  for (size_t j = 0; j < n; ++j)  // buffers are part of the structure, scalars are not
    if (k.params[j] == kernel::ScalarType::Void) key(slots[j]);
  if (!k.ready()) pending_compiles_ = true;
  return due_locked();
}

bool CommandQueue::copy(DevicePtr dst, DevicePtr src, size_t bytes) {
  std::lock_guard lk(mu_);
  Cmd c{Copy};
  c.dst = dst;
  c.src = src;
  c.count = bytes;
  cmds_.push_back(c);
  key(Copy);
  key(dst);
  key(src);
  key(bytes);
  return due_locked();
}

bool CommandQueue::fill(DevicePtr dst, uint32_t pattern, int size, size_t count) {
  std::lock_guard lk(mu_);
  Cmd c{Fill};
  c.dst = dst;
  c.size = size;
  c.count = count;
  c.slot0 = uint32_t(slots_.size());  // the value is patched like a scalar argument
  c.nslots = 1;
  slots_.push_back(pattern);
  cmds_.push_back(c);
  key(uint64_t(Fill) | uint64_t(size) << 8);
  key(dst);
  key(count);
  return due_locked();
}

bool CommandQueue::gemm(const gpu::GemmCall& g, DevicePtr a, DevicePtr b, DevicePtr c,
                        std::string shapes) {
  std::lock_guard lk(mu_);
  Cmd cmd{GemmCmd};
  cmd.gemm = uint32_t(gemms_.size());
  gemms_.push_back({g, a, b, c, std::move(shapes)});
  cmds_.push_back(cmd);
  key(uint64_t(GemmCmd) | uint64_t(g.dtype) << 8 | uint64_t(g.va.col) << 16 |
      uint64_t(g.vb.col) << 17);
  for (int64_t w : {g.m, g.n, g.k, g.va.ld, g.vb.ld, g.batch, g.sa, g.sb, g.sc}) key(uint64_t(w));
  key(g.bias);
  key(g.residual | uint64_t(g.relu));  // addresses are at least 2-byte aligned
  key(a);
  key(b);
  key(c);
  return due_locked();
}

bool CommandQueue::due_locked() const {
  if (cmds_.size() >= kHardLimit) return true;
  if (cmds_.size() < batch_limit()) return false;
  if (!pending_compiles_) return true;
  for (const Cmd& c : cmds_)  // wait while a kernel compiles: more of the step can be queued
    if (c.kind == Launch && !c.k->ready()) return false;
  return true;
}

void CommandQueue::clear() {
  cmds_.clear();
  slots_.clear();
  gemms_.clear();
  key_.clear();
  hash_ = 0xcbf29ce484222325ull;
  pending_compiles_ = false;
}

void CommandQueue::run(const std::function<void(const Gemm&)>& run_gemm, Graph* capture) {
  void* p[gpu::Args::kMaxArgs];
  for (size_t i = 0; i < cmds_.size(); ++i) {
    const Cmd& c = cmds_[i];
    switch (c.kind) {
      case Launch:
        for (uint32_t j = 0; j < c.nslots; ++j) p[j] = &slots_[c.slot0 + j];
        raw::launch(c.k->function(), c.groups, c.k->block, 0, s_, p);
        if (capture) capture->nodes[i] = raw::last_captured(s_);
        break;
      case Copy:
        raw::copy_dtod(c.dst, c.src, c.count, s_);
        break;
      case Fill:
        raw::memset(c.dst, uint32_t(slots_[c.slot0]), c.size, c.count, s_);
        if (capture) capture->nodes[i] = raw::last_captured(s_);
        break;
      case GemmCmd:
        run_gemm(gemms_[c.gemm]);
        break;
    }
  }
}

bool CommandQueue::debug() {
  static const bool on = env_switch("EMBER_CUDA_GRAPHS_DEBUG");
  return on;
}

// EMBER_CUDA_GRAPHS_DEBUG=1: why a batch found no graph to replay (stderr): its commands, and
// where it differs from the last batch of the same length that missed.
void CommandQueue::explain_miss() {
  std::string kinds;
  for (const Cmd& c : cmds_) kinds += "LCFG"[c.kind];
  std::fprintf(stderr, "[cuda graphs] miss: %s, hash %016llx, seen %d", kinds.c_str(),
               (unsigned long long)hash_, seen_.count(hash_) ? seen_.at(hash_) : 0);
  std::vector<uint64_t>& last = last_miss_[key_.size()];
  if (last.size() == key_.size()) {
    int shown = 0;
    for (size_t i = 0; i < key_.size() && shown < 4; ++i)
      if (last[i] != key_[i])
        std::fprintf(stderr, "; word %zu: %llx -> %llx", i, (unsigned long long)last[i],
                     (unsigned long long)key_[i]),
            ++shown;
  }
  std::fprintf(stderr, "\n");
  last = key_;
}

void CommandQueue::submit_impl(const std::function<void(const Gemm&)>& run_gemm) {
  if (t_submitting) return;
  std::lock_guard lk(mu_);
  if (cmds_.empty()) return;
  Submitting guard;
  Counters& st = g_stats;
  st.batches++;
  st.commands += int64_t(cmds_.size());
  struct Clear {
    CommandQueue* q;
    ~Clear() { q->clear(); }
  } clear_after{this};
  // Every kernel compiled and loaded first: a compile error shows here, outside any capture.
  for (const Cmd& c : cmds_)
    if (c.kind == Launch) c.k->function();
  if (!graphs_enabled() || cmds_.size() < kMinGraph) return run(run_gemm, nullptr);

  auto same = [&](const Graph& g) {
    return g.hash == hash_ && g.key.size() == key_.size() &&
           std::memcmp(g.key.data(), key_.data(), key_.size() * sizeof(uint64_t)) == 0;
  };
  auto it = std::find_if(graphs_.begin(), graphs_.end(), [&](auto& g) { return same(*g); });
  if (it != graphs_.end()) {
    Graph& g = **it;
    void* p[gpu::Args::kMaxArgs];
    for (size_t i = 0; i < cmds_.size(); ++i) {
      const Cmd& c = cmds_[i];
      if (c.kind != Launch && c.kind != Fill) continue;
      uint64_t* now = &slots_[c.slot0];
      uint64_t* was = &g.slots[c.slot0];
      if (std::memcmp(now, was, c.nslots * sizeof(uint64_t)) == 0) continue;
      if (c.kind == Fill) {
        raw::set_memset_node(g.exec, g.nodes[i], c.dst, uint32_t(*now), c.size, c.count);
      } else {
        for (uint32_t j = 0; j < c.nslots; ++j) p[j] = &now[j];
        raw::set_kernel_node(g.exec, g.nodes[i], c.k->function(), c.groups, c.k->block, p);
      }
      std::memcpy(was, now, c.nslots * sizeof(uint64_t));
      st.patched_nodes++;
    }
    raw::graph_launch(g.exec, s_);
    g.used = ++tick_;
    st.replayed++;
    return;
  }
  if (debug()) explain_miss();
  if (++seen_[hash_] < 2) {
    if (seen_.size() > 4096) seen_.clear();
    return run(run_gemm, nullptr);
  }
  // Seen before: capture it (nothing runs while capturing), then launch the graph.
  auto g = std::make_unique<Graph>();
  g->key = key_;
  g->hash = hash_;
  g->slots = slots_;
  g->nodes.assign(cmds_.size(), nullptr);
  raw::begin_capture(s_);
  try {
    run(run_gemm, g.get());
  } catch (...) {
    raw::destroy(raw::end_capture(s_));
    throw;
  }
  g->graph = raw::end_capture(s_);
  bool patchable = true;
  for (size_t i = 0; i < cmds_.size(); ++i)
    if ((cmds_[i].kind == Launch || cmds_[i].kind == Fill) && !g->nodes[i]) patchable = false;
  if (!patchable) {  // not one node per launch: replaying could not patch scalars
    st.uncapturable++;
    seen_[hash_] = -(1 << 30);  // not tried again
    return run(run_gemm, nullptr);
  }
  g->exec = raw::instantiate(g->graph);
  raw::graph_launch(g->exec, s_);
  g->used = ++tick_;
  st.captured++;
  if (graphs_.size() >= kMaxGraphs) {
    auto lru = std::min_element(graphs_.begin(), graphs_.end(),
                                [](auto& a, auto& b) { return a->used < b->used; });
    graphs_.erase(lru);
  }
  graphs_.push_back(std::move(g));
}

}  // namespace ember::cuda::detail
