#include "ember/backends/cuda/compile_jobs.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <sys/resource.h>
#include <unistd.h>

#include "ember/backends/cuda/env.h"
#include "ember/core/thread_pool.h"
#endif

namespace ember::cuda::detail {

namespace {

int worker_count() {
  if (const char* e = std::getenv("EMBER_CUDA_COMPILE_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return std::min(n, 64);
  }
  return std::clamp(available_cpus(), 1, 16);
}

// Workers start with the first job and live for the process (never joined: a compile still
// running at exit is abandoned with the process). Compiles a step waits for have workers of
// their own; background compiles (deferred tuning's candidates) run on at most half as many,
// at a lower scheduling priority, so that neither they nor the steps that go on while they
// compile wait for them.
class Jobs {
 public:
  void submit(std::function<void()> job, bool background) {
    std::lock_guard lk(mu_);
    Pool& p = background ? later_ : now_;
    p.queue.push_back(std::move(job));
    ++unfinished_;
    if (p.idle == 0 && p.started < p.limit) {
      ++p.started;
      std::thread([this, &p, background] { work(p, background); }).detach();
    }
    p.cv.notify_one();
  }
  // Waits until every job submitted so far has finished.
  void wait() {
    std::unique_lock lk(mu_);
    done_.wait(lk, [&] { return unfinished_ == 0; });
  }

 private:
  struct Pool {
    explicit Pool(int n) : limit(n) {}
    std::condition_variable cv;
    std::deque<std::function<void()>> queue;
    int idle = 0, started = 0;
    const int limit;
  };
  void work(Pool& p, bool background) {
#if defined(__linux__)
    if (background) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);  // this thread
#endif
    std::unique_lock lk(mu_);
    for (;;) {
      ++p.idle;
      p.cv.wait(lk, [&] { return !p.queue.empty(); });
      --p.idle;
      std::function<void()> job = std::move(p.queue.front());
      p.queue.pop_front();
      lk.unlock();
      job();  // a packaged task: its exception goes to the future
      lk.lock();
      if (--unfinished_ == 0) done_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable done_;
  Pool now_{worker_count()}, later_{std::max(1, worker_count() / 2)};
  int64_t unfinished_ = 0;
};

Jobs& jobs() {
  static auto* j = new Jobs;  // never destroyed: detached workers use it until the exit
  return *j;
}

// EMBER_CUDA_COMPILE_LOG=1: each compile's times (ms since the first compile was queued).
bool log_compiles() {
  static const bool on = env_switch("EMBER_CUDA_COMPILE_LOG");
  return on;
}

double now_ms() {
  using clock = std::chrono::steady_clock;
  static const clock::time_point t0 = clock::now();
  return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
}

}  // namespace

std::shared_future<std::shared_ptr<Module>> compile_async(std::string source, std::string name,
                                                          kernel::CudaCompileOptions options,
                                                          CuContext* ctx, bool background) {
  auto task = std::make_shared<std::packaged_task<std::shared_ptr<Module>()>>(
      [source = std::move(source), name = std::move(name), options = std::move(options), ctx,
       queued = now_ms()] {
        double start = now_ms();
        kernel::CudaBinary bin = kernel::compile_cuda(source, name, options);
        raw::set_current(ctx);
        auto m = std::make_shared<Module>(bin);
        if (log_compiles())
          std::fprintf(stderr, "[cuda compile] %s: queued %.1f ms, started %.1f, done %.1f%s\n",
                       name.c_str(), queued, start, now_ms(), bin.cached ? " (cached)" : "");
        return m;
      });
  std::shared_future<std::shared_ptr<Module>> f = task->get_future().share();
  jobs().submit([task] { (*task)(); }, background);
  return f;
}

void wait_for_compiles() { jobs().wait(); }

}  // namespace ember::cuda::detail
