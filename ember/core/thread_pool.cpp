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
      ++generation_;
    }
    cv_.notify_all();
    work(job);
    std::unique_lock lk(mu_);
    job_ = nullptr;  // no worker joins from here on
    done_cv_.wait(lk, [&] { return job.done.load() == job.chunks && job.users == 0; });
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  struct Job {
    Job(const std::function<void(int64_t)>* b, int64_t n) : body(b), chunks(n) {}
    const std::function<void(int64_t)>* body;
    int64_t chunks;
    std::atomic<int64_t> next{0}, done{0};
    int users = 0;  // workers inside work(); guarded by mu_
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
      if (job.done.fetch_add(1) + 1 == job.chunks) {
        std::lock_guard lk(mu_);
        done_cv_.notify_all();
      }
    }
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      Job* job;
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return quit_ || (generation_ != seen && job_ != nullptr); });
        if (quit_) return;
        seen = generation_;
        job = job_;
        ++job->users;
      }
      work(*job);
      {
        std::lock_guard lk(mu_);
        --job->users;
      }
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
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  bool quit_ = false;
};

Pool& pool() {
  static Pool p(default_threads());
  return p;
}

}  // namespace

int num_threads() { return pool().size(); }
void set_num_threads(int n) { pool().resize(std::max(1, n)); }

void parallel_for_impl(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  // Division-first rounding: n may be close to INT64_MAX, where n + grain would overflow.
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>(n / grain + (n % grain != 0), num_threads() * 4);
  int64_t per = n / chunks + (n % chunks != 0);
  pool().run(chunks, [&](int64_t c) {
    int64_t b = c * per;  // at most n + chunks: no overflow
    if (b < n) f(b, b + std::min(per, n - b));
  });
}

}  // namespace ember
