#include "ember/backends/cuda/compile_jobs.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>

namespace ember::cuda::detail {

namespace {

int worker_count() {
  if (const char* e = std::getenv("EMBER_CUDA_COMPILE_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return std::min(n, 64);
  }
  return std::clamp(int(std::thread::hardware_concurrency()), 1, 16);
}

// Workers start with the first job and live for the process (never joined: a compile still
// running at exit is abandoned with the process). Background compiles (the tuner's candidates)
// take at most three quarters of them, so a kernel a step waits for starts at once.
class Jobs {
 public:
  void submit(std::function<void()> job, bool background) {
    std::lock_guard lk(mu_);
    (background ? later_ : jobs_).push_back(std::move(job));
    if (idle_ == 0 && started_ < limit_) {
      ++started_;
      std::thread([this] { work(); }).detach();
    }
    cv_.notify_all();
  }

 private:
  bool may_run_later() const { return !later_.empty() && in_background_ < background_limit_; }
  void work() {
    std::unique_lock lk(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lk, [&] { return !jobs_.empty() || may_run_later(); });
      --idle_;
      bool background = jobs_.empty();
      auto& from = background ? later_ : jobs_;
      std::function<void()> job = std::move(from.front());
      from.pop_front();
      in_background_ += background;
      lk.unlock();
      job();  // a packaged task: its exception goes to the future
      lk.lock();
      if (background) {
        --in_background_;
        cv_.notify_all();  // a background job may wait for this slot
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_, later_;  // later_: background compiles
  int idle_ = 0, started_ = 0, in_background_ = 0;
  const int limit_ = worker_count();
  const int background_limit_ = std::max(1, limit_ - std::max(1, limit_ / 4));
};

Jobs& jobs() {
  static auto* j = new Jobs;  // never destroyed: detached workers use it until the exit
  return *j;
}

// EMBER_CUDA_COMPILE_LOG=1: each compile's times (ms since the first compile was queued).
bool log_compiles() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_CUDA_COMPILE_LOG");
    return e && *e && std::string_view(e) != "0";
  }();
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

}  // namespace ember::cuda::detail
