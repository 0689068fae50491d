#include "ember/distributed/process_group.h"

#include "ember/distributed/nccl.h"  // the group owns its NCCL communicator

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <thread>
#include <vector>

namespace ember::dist {

namespace {

using Fn = void (*)(void*, const void*, const void*, size_t);

template <class T>
Fn reduce_fn(Reduce op) {
  switch (op) {
    case Reduce::Max:
      return &gloo::max<T>;
    case Reduce::Min:
      return &gloo::min<T>;
    default:
      return &gloo::sum<T>;
  }
}

template <class T>
void divide(void* data, size_t n, int by) {
  T* p = static_cast<T*>(data);
  for (size_t i = 0; i < n; ++i) p[i] = p[i] / T(by);
}

int env_int(const char* name, int fallback) {
  const char* e = std::getenv(name);
  if (!e || !*e) return fallback;
  char* end = nullptr;
  long v = std::strtol(e, &end, 10);
  if (*end || v < 0 || v > (1 << 20))
    throw DistributedError(std::string("[process_group] ") + name + "=" + e + " is not a count");
  return int(v);
}

// Whether process `pid` of this host has ended (exited, or a zombie waiting to be reaped).
bool process_gone(long pid) {
  if (pid <= 0) return false;
  if (kill(pid_t(pid), 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  size_t close = line.rfind(')');  // "pid (name) S ...": the state follows the name
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

// This process's machine and process-id namespace ("" where /proc does not say): two ranks'
// pids name processes of one table only when these are equal.
std::string pid_space() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  struct stat ns {};
  if (boot.empty() || ::stat("/proc/self/ns/pid", &ns) != 0) return "";
  return boot + "/" + std::to_string(ns.st_ino);
}

std::vector<int> gone_ranks(const std::vector<long>& pids, int self) {
  std::vector<int> gone;
  for (int r = 0; r < int(pids.size()); ++r)
    if (r != self && process_gone(pids[r])) gone.push_back(r);
  return gone;
}

}  // namespace

std::string detail::rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

struct ProcessGroup::Impl {
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{};
  std::shared_ptr<gloo::rendezvous::Context> ctx;
  std::vector<long> pids;  // each rank's process id where it is of this host's table, else 0
  std::string store;

  // The message of a failed collective: the op, Gloo's reason, and the ranks on this host
  // whose processes are gone.
  [[noreturn]] void fail(const char* op, const std::exception& e) const {
    // A closed connection: a killed peer may not be reaped yet (a zombie of the launcher), so
    // look a few times. A time-out is said as such (a peer that is gone by now may have ended
    // because of the same silence).
    bool timed_out = std::string_view(e.what()).find("Timed out") != std::string_view::npos;
    std::string gone;
    for (int tries = 0; tries < (timed_out ? 1 : 20) && gone.empty(); ++tries) {
      if (tries) std::this_thread::sleep_for(std::chrono::milliseconds(25));
      gone = detail::rank_list(gone_ranks(pids, rank));
    }
    std::string msg = std::string("[") + op + "] rank " + std::to_string(rank) + " of " +
                      std::to_string(size) + ": ";
    if (timed_out)
      msg += "a peer did not answer within " + std::to_string(timeout.count()) + " ms" +
             (gone.empty() ? "" : " (rank " + gone + " is gone by now)");
    else
      msg += gone.empty() ? "a peer closed its connection"
                          : "lost rank " + gone + " (its process is gone)";
    throw DistributedError(msg + " (" + e.what() + ")");
  }
  template <class F>
  void run(const char* op, F&& f) {
    try {
      f();
    } catch (const gloo::Exception& e) {
      fail(op, e);
    } catch (const gloo::EnforceNotMet& e) {
      fail(op, e);
    }
  }
};

ProcessGroup::ProcessGroup(const GroupOptions& o) : impl_(std::make_unique<Impl>()) {
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size)
    throw DistributedError("[process_group] rank " + std::to_string(o.rank) +
                           " is not in a world of " + std::to_string(o.world_size));
  impl_->rank = o.rank;
  impl_->size = o.world_size;
  impl_->timeout = o.timeout;
  impl_->store = o.store;
  if (o.world_size == 1) return;
  // A peer that is gone makes a write to its socket fail: with SIGPIPE's default action that
  // would end this process instead of raising the collective's error.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  if (o.store.empty())
    throw DistributedError(
        "[process_group] no rendezvous store (EMBER_STORE): start the ranks with ember-run");
  std::error_code ec;
  std::filesystem::create_directories(o.store, ec);
  try {
    gloo::rendezvous::FileStore files(o.store);
    gloo::rendezvous::PrefixStore store("ember", files);
    // Each rank's process id and where it means something, so a failure can say which ranks of
    // this host are gone (a rank of another host, or of another container, is not looked for).
    const std::string space = pid_space();
    std::string pid = std::to_string(long(getpid())) + " " + space;
    store.set("pid/" + std::to_string(o.rank), std::vector<char>(pid.begin(), pid.end()));
    gloo::transport::tcp::attr attr;
    attr.hostname = o.host;
    std::shared_ptr<gloo::transport::Device> dev = gloo::transport::tcp::CreateDevice(attr);
    impl_->ctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.world_size);
    impl_->ctx->setTimeout(o.timeout);
    impl_->ctx->connectFullMesh(store, dev);
    // Every rank's connections made before any rank goes on: one that went on and ended at once
    // (a check that skips, a program that needs no collective) closed its sockets while a peer
    // was still finishing its side, whose join then failed ("Connection closed by peer") or
    // whose Gloo I/O thread aborted the process.
    gloo::BarrierOptions joined(impl_->ctx);
    joined.setTimeout(o.timeout);
    gloo::barrier(joined);
    impl_->pids.assign(o.world_size, 0);
    for (int r = 0; r < o.world_size; ++r) {
      std::vector<char> v = store.get("pid/" + std::to_string(r));
      std::string entry(v.begin(), v.end());
      size_t cut = entry.find(' ');
      bool here = !space.empty() && cut != std::string::npos && entry.substr(cut + 1) == space;
      impl_->pids[r] = here ? std::atol(entry.c_str()) : 0;  // 0: not looked for
    }
  } catch (const std::exception& e) {
    throw DistributedError("[process_group] rank " + std::to_string(o.rank) + " of " +
                           std::to_string(o.world_size) + " could not join the group in " +
                           o.store + " within " + std::to_string(o.timeout.count()) +
                           " ms: " + e.what());
  }
}

ProcessGroup ProcessGroup::from_env() {
  GroupOptions o;
  o.rank = env_int("RANK", 0);
  o.world_size = env_int("WORLD_SIZE", 1);
  if (const char* s = std::getenv("EMBER_STORE")) o.store = s;
  if (const char* h = std::getenv("EMBER_HOST")) o.host = h;
  o.timeout = std::chrono::seconds(env_int("EMBER_DIST_TIMEOUT", 30));
  return ProcessGroup(o);
}

bool ProcessGroup::in_env() {
  return env_int("WORLD_SIZE", 1) > 1 || std::getenv("EMBER_STORE") != nullptr;
}

std::chrono::milliseconds ProcessGroup::timeout() const { return impl_->timeout; }

std::function<std::vector<int>()> ProcessGroup::gone_ranks_probe() const {
  return [pids = impl_->pids, self = impl_->rank] { return gone_ranks(pids, self); };
}

ProcessGroup::ProcessGroup(ProcessGroup&&) noexcept = default;
ProcessGroup& ProcessGroup::operator=(ProcessGroup&&) noexcept = default;
ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::world_size() const { return impl_->size; }

void ProcessGroup::all_reduce(void* data, size_t count, DType dtype, Reduce op) {
  if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::I32 && dtype != DType::I64)
    throw DTypeError(std::string("[all_reduce] ") + std::string(name(dtype)) +
                     " is not reduced across ranks (f32, f64, i32, i64 are)");
  if (impl_->size > 1 && count > 0) {
    gloo::AllreduceOptions opts(impl_->ctx);
    opts.setTimeout(impl_->timeout);
    switch (dtype) {
      case DType::F32:
        opts.setOutput(static_cast<float*>(data), count);
        opts.setReduceFunction(reduce_fn<float>(op));
        break;
      case DType::F64:
        opts.setOutput(static_cast<double*>(data), count);
        opts.setReduceFunction(reduce_fn<double>(op));
        break;
      case DType::I32:
        opts.setOutput(static_cast<int32_t*>(data), count);
        opts.setReduceFunction(reduce_fn<int32_t>(op));
        break;
      case DType::I64:
        opts.setOutput(static_cast<int64_t*>(data), count);
        opts.setReduceFunction(reduce_fn<int64_t>(op));
        break;
      default:
        break;
    }
    impl_->run("all_reduce", [&] { gloo::allreduce(opts); });
  }
  if (op != Reduce::Mean || impl_->size == 1) return;
  switch (dtype) {
    case DType::F32:
      return divide<float>(data, count, impl_->size);
    case DType::F64:
      return divide<double>(data, count, impl_->size);
    case DType::I32:
      return divide<int32_t>(data, count, impl_->size);
    default:
      return divide<int64_t>(data, count, impl_->size);
  }
}

TensorData ProcessGroup::all_reduce(const TensorData& t, Reduce op) {
  TensorData out = t;
  all_reduce(out.bytes().data(), size_t(t.shape().numel()), t.dtype(), op);
  return out;
}

TensorData ProcessGroup::broadcast(const TensorData& t, int root) {
  if (root < 0 || root >= impl_->size)
    throw DistributedError("[broadcast] root " + std::to_string(root) + " is not a rank of " +
                           std::to_string(impl_->size));
  if (impl_->size == 1) return t;
  // The root's shape and dtype first (rank, dtype, dims), then its bytes.
  std::vector<int64_t> head(2 + 8, 0);
  if (impl_->rank == root) {
    head[0] = int64_t(t.shape().rank());
    head[1] = int64_t(t.dtype());
    for (size_t d = 0; d < t.shape().rank() && d < 8; ++d) head[2 + d] = t.shape()[d];
  }
  auto bcast = [&](char* p, size_t n) {
    gloo::BroadcastOptions opts(impl_->ctx);
    opts.setTimeout(impl_->timeout);
    opts.setRoot(root);
    opts.setOutput(p, n);
    if (impl_->rank == root) opts.setInput(p, n);
    impl_->run("broadcast", [&] { gloo::broadcast(opts); });
  };
  bcast(reinterpret_cast<char*>(head.data()), head.size() * sizeof(int64_t));
  Dims dims;
  for (int64_t d = 0; d < head[0]; ++d) dims.push_back(head[2 + d]);
  TensorData out = impl_->rank == root ? t : TensorData(Shape(dims), DType(head[1]));
  if (!out.bytes().empty()) bcast(reinterpret_cast<char*>(out.bytes().data()), out.bytes().size());
  return out;
}

TensorData ProcessGroup::all_gather(const TensorData& t) {
  Dims dims{int64_t(impl_->size)};
  for (size_t d = 0; d < t.shape().rank(); ++d) dims.push_back(t.shape()[d]);
  TensorData out(Shape(dims), t.dtype());
  if (impl_->size == 1) {
    std::memcpy(out.bytes().data(), t.bytes().data(), t.bytes().size());
    return out;
  }
  if (t.bytes().empty()) return out;
  gloo::AllgatherOptions opts(impl_->ctx);
  opts.setTimeout(impl_->timeout);
  std::vector<char> in(t.bytes().size());
  std::memcpy(in.data(), t.bytes().data(), in.size());
  opts.setInput(in.data(), in.size());
  opts.setOutput(reinterpret_cast<char*>(out.bytes().data()), out.bytes().size());
  impl_->run("all_gather", [&] { gloo::allgather(opts); });
  return out;
}

TensorData ProcessGroup::reduce_scatter(const TensorData& t, Reduce op) {
  int64_t n0 = t.shape().rank() ? t.shape()[0] : 0;
  if (t.shape().rank() == 0 || n0 % impl_->size != 0)
    throw ShapeError("[reduce_scatter] dim 0 of " + t.shape().to_string() +
                     " does not divide into " + std::to_string(impl_->size) + " ranks");
  // The whole reduction, then this rank's part: simple and exact; it moves world_size times
  // the bytes a ring reduce-scatter would.
  TensorData all = all_reduce(t, op);
  Dims dims = t.shape().dims();
  dims[0] = n0 / impl_->size;
  TensorData out(Shape(dims), t.dtype());
  std::memcpy(out.bytes().data(), all.bytes().data() + impl_->rank * out.bytes().size(),
              out.bytes().size());
  return out;
}

void ProcessGroup::barrier() {
  if (impl_->size == 1) return;
  gloo::BarrierOptions opts(impl_->ctx);
  opts.setTimeout(impl_->timeout);
  impl_->run("barrier", [&] { gloo::barrier(opts); });
}

}  // namespace ember::dist
