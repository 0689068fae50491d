#include "ember/core/thread_pool.h"

#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ember {

namespace {

int default_threads() {
  if (const char* e = std::getenv("EMBER_NUM_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  return available_cpus();
}

#if defined(__linux__)
// Whole CPUs of a quota over a period, rounded up; 0 for none.
int whole_cpus(int64_t quota, int64_t period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<int>(std::min<int64_t>((quota + period - 1) / period, 1 << 16));
}

// The process's CPU quota from its cgroup: v2's `cpu.max` ("max 100000" or "QUOTA PERIOD"),
// else v1's `cpu.cfs_quota_us` (-1 for none) over `cpu.cfs_period_us`; 0 when there is none or
// neither can be read.
int cgroup_cpu_quota() {
  std::ifstream v2("/sys/fs/cgroup/cpu.max");
  std::string quota;
  int64_t period = 0;
  if (v2 >> quota >> period)
    return quota == "max" ? 0 : whole_cpus(std::atoll(quota.c_str()), period);
  std::ifstream q1("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
      p1("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  int64_t q = 0;
  if (q1 >> q && p1 >> period) return whole_cpus(q, period);
  return 0;
}
#endif

// Spins before sleeping: a worker that has just finished a job polls for the next one for
// about this long, and the caller polls for the job's end, before either blocks on a condition
// variable. Training steps run hundreds of short ops back to back; waking a sleeping thread
// (a futex call each way) cost about as much as the ops themselves.
constexpr auto kSpin = std::chrono::microseconds(50);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `ready` for up to kSpin; true when it held.
template <class F>
bool spin_until(F&& ready) {
  auto end = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= end) return false;
  }
}

// One job at a time (ops run one after another). A job lives on the caller's stack; workers
// join it under the lock and the caller returns only once every chunk is done and no worker
// still holds the job, so a late worker can never take chunks of the next job.
class Pool {
 public:
  explicit Pool(int n) { resize(n); }
  ~Pool() { stop(); }

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int n) {
    stop();
    quit_ = false;
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { loop(); });
  }

  void run(int64_t chunks, const std::function<void(int64_t)>& body) {
    std::lock_guard run_lock(run_mu_);  // callers from several threads take turns
    Job job(&body, chunks);
    {
      std::lock_guard lk(mu_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    // Spinning workers see the generation change; sleeping ones need the wake-up (a worker
    // counts itself as sleeping under mu_, before it waits, so none is missed).
    if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
    work(job);
    auto finished = [&] { return job.done.load() == job.chunks && job.users.load() == 0; };
    spin_until(finished);
    std::unique_lock lk(mu_);
    job_ = nullptr;  // no worker joins from here on
    done_cv_.wait(lk, finished);
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  struct Job {
    Job(const std::function<void(int64_t)>* b, int64_t n) : body(b), chunks(n) {}
    const std::function<void(int64_t)>* body;
    int64_t chunks;
    std::atomic<int64_t> next{0}, done{0};
    std::atomic<int> users{0};  // workers inside work(); joined under mu_
    std::exception_ptr error;
  };

  void work(Job& job) {
    for (int64_t c; (c = job.next.fetch_add(1)) < job.chunks;) {
      try {
        (*job.body)(c);
      } catch (...) {  // the first error reaches the caller of run()
        std::lock_guard lk(mu_);
        if (!job.error) job.error = std::current_exception();
      }
      job.done.fetch_add(1);
    }
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      bool spun = spin_until([&] {
        return quit_.load(std::memory_order_relaxed) ||
               generation_.load(std::memory_order_acquire) != seen;
      });
      Job* job;
      {
        std::unique_lock lk(mu_);
        auto ready = [&] { return quit_ || (generation_.load() != seen && job_ != nullptr); };
        if (!spun || !ready()) {
          ++sleepers_;
          cv_.wait(lk, ready);
          --sleepers_;
        }
        if (quit_) return;
        seen = generation_.load();
        job = job_;
        job->users.fetch_add(1);
      }
      work(*job);
      job->users.fetch_sub(1);
      // The caller may be asleep on done_cv_ (after its spin): wake it under the lock, so the
      // wake-up cannot fall between its check and its wait.
      std::lock_guard lk(mu_);
      done_cv_.notify_all();
    }
  }
  void stop() {
    {
      std::lock_guard lk(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable cv_, done_cv_;
  Job* job_ = nullptr;  // guarded by mu_
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> quit_{false};
};

Pool& pool() {
  static Pool p(default_threads());
  return p;
}

}  // namespace

int available_cpus() {
  int n = static_cast<int>(std::thread::hardware_concurrency());
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
  if (int q = cgroup_cpu_quota(); q > 0) n = std::min(n, q);
#endif
  return std::max(n, 1);
}

int num_threads() { return pool().size(); }
void set_num_threads(int n) { pool().resize(std::max(1, n)); }

namespace {
// Set while this thread runs a chunk of a pool job: a parallel_for inside it runs inline (the
// pool runs one job at a time, and the job's caller waits for this chunk: waiting for the pool
// from here would never end).
thread_local bool t_in_job = false;
}  // namespace

void parallel_for_impl(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  if (t_in_job) {
    f(0, n);
    return;
  }
  // Division-first rounding: n may be close to INT64_MAX, where n + grain would overflow.
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>(n / grain + (n % grain != 0), num_threads() * 4);
  int64_t per = n / chunks + (n % chunks != 0);
  pool().run(chunks, [&](int64_t c) {
    int64_t b = c * per;  // at most n + chunks: no overflow
    if (b >= n) return;
    t_in_job = true;
    struct Reset {
      ~Reset() { t_in_job = false; }
    } reset;
    f(b, b + std::min(per, n - b));
  });
}

}  // namespace ember
