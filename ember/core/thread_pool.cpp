#include "ember/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
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
  return std::max(1u, std::thread::hardware_concurrency());
}

// One job at a time (ops run one after another); workers take chunk indices from a counter.
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
    {
      std::lock_guard lk(mu_);
      body_ = &body;
      chunks_.store(chunks);
      next_.store(0);
      done_.store(0);
      ++generation_;
    }
    cv_.notify_all();
    work();
    std::unique_lock lk(mu_);
    done_cv_.wait(lk, [&] { return done_.load() == chunks_; });
    body_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void work() {
    for (int64_t c; (c = next_.fetch_add(1)) < chunks_;) {
      try {
        (*body_)(c);
      } catch (...) {  // the first error reaches the caller of run()
        std::lock_guard lk(mu_);
        if (!error_) error_ = std::current_exception();
      }
      if (done_.fetch_add(1) + 1 == chunks_) {
        std::lock_guard lk(mu_);
        done_cv_.notify_one();
      }
    }
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
      }
      work();
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
  const std::function<void(int64_t)>* body_ = nullptr;
  std::atomic<int64_t> chunks_{0}, next_{0}, done_{0};
  uint64_t generation_ = 0;
  bool quit_ = false;
  std::exception_ptr error_;
};

Pool& pool() {
  static Pool p(default_threads());
  return p;
}

}  // namespace

int num_threads() { return pool().size(); }
void set_num_threads(int n) { pool().resize(std::max(1, n)); }

void parallel_for_impl(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, num_threads() * 4);
  int64_t per = (n + chunks - 1) / chunks;
  pool().run(chunks, [&](int64_t c) {
    int64_t b = c * per, e = std::min(n, b + per);
    if (b < e) f(b, e);
  });
}

}  // namespace ember
