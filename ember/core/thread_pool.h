// The CPU worker pool. `parallel_for` splits [0, n) into chunks of at least `grain` items
// and runs them on the pool and the calling thread; small ranges run inline, so tiny ops
// pay nothing for threading. Workers poll briefly for the next job before they sleep, so back
// to back ops do not pay a thread wake-up each.
//
//   parallel_for(n, 1 << 15, [&](int64_t begin, int64_t end) { /* items [begin, end) */ });
//   set_num_threads(2);   // EMBER_NUM_THREADS sets the default
//   int cpus = available_cpus();  // the default without it
#pragma once
#include <cstdint>
#include <functional>

#include "ember/core/export.h"

namespace ember {

/// The CPUs this process may run on: those of its affinity mask (`taskset`, a container's
/// cpuset), at most its cgroup CPU quota (`docker --cpus`) rounded up, at least 1. The pool's
/// default size when `EMBER_NUM_THREADS` is unset: more threads than CPUs only take turns.
EMBER_API int available_cpus();
EMBER_API int num_threads();
EMBER_API void set_num_threads(int n);

EMBER_API void parallel_for_impl(int64_t n, int64_t grain,
                                 const std::function<void(int64_t, int64_t)>& f);

template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= grain || num_threads() == 1) {  // n near INT64_MAX is fine: no rounding here
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  parallel_for_impl(n, grain, std::function<void(int64_t, int64_t)>(std::ref(f)));
}

}  // namespace ember
