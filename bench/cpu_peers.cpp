// The native peers of cpu_bench: raw OpenBLAS sgemm (ember's matmul is its own GEMM unless
// ember is built with EMBER_BLAS=ON), oneDNN sgemm when built with it, and the
// memory-bandwidth references ("copy").
//
// "copy/<op>/<size>" is std::memcpy between two preallocated, already-touched buffers, moving
// the same number of bytes (read + written) as the op: a memcpy of n bytes reads n and writes
// n, so the reference for an op that moves B bytes copies B / 2 bytes. It runs on ember's own
// thread pool (one chunk per thread), so it differs from ember's kernel only in the loop.
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu_bench.h"
#include "ember/core/thread_pool.h"

#ifdef EMBER_BENCH_OPENBLAS
#include <cblas.h>
#endif
#ifdef EMBER_BENCH_ONEDNN
#include <dnnl.h>
#endif

namespace bench {

namespace {

using benchmark::State;

void copy_bytes(State& st, int64_t moved) {
  const int64_t n = moved / 2;
  std::unique_ptr<std::byte[]> src(new std::byte[n]), dst(new std::byte[n]);
  std::memset(src.get(), 1, n);  // touch every page before timing
  std::memset(dst.get(), 0, n);
  const int64_t per_thread = (n + ember::num_threads() - 1) / ember::num_threads();
  for (auto _ : st) {
    ember::parallel_for(n, per_thread, [&](int64_t b, int64_t e) {
      std::memcpy(dst.get() + b, src.get() + b, e - b);
    });
    benchmark::ClobberMemory();
  }
  set_bytes(st, 2.0 * n);
}

[[maybe_unused]] std::vector<float> random_matrix(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> m(n * n);
  for (auto& v : m) v = u(rng);
  return m;
}

#ifdef EMBER_BENCH_OPENBLAS
void openblas_matmul(State& st, int64_t n) {
  auto a = random_matrix(n, 1), b = random_matrix(n, 2);
  std::vector<float> c(n * n);
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::ClobberMemory();
  }
  set_flop(st, 2.0 * n * n * n);
}
#endif

#ifdef EMBER_BENCH_ONEDNN
void onednn_matmul(State& st, int64_t n) {
  auto a = random_matrix(n, 1), b = random_matrix(n, 2);
  std::vector<float> c(n * n);
  for (auto _ : st) {
    // dnnl_sgemm is row-major.
    if (dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n) !=
        dnnl_success) {
      st.SkipWithError("dnnl_sgemm failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  set_flop(st, 2.0 * n * n * n);
}
#endif

template <class... Args>
void reg(const std::string& name, benchmark::TimeUnit unit, Args&&... args) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<Args>(args)...)
      ->UseRealTime()
      ->Unit(unit);
}

}  // namespace

void register_copy_benchmarks() {
  constexpr int64_t kF32 = sizeof(float);
  reg("copy/add/" + std::to_string(kElems >> 20) + "M", benchmark::kMillisecond, copy_bytes,
      3 * kF32 * kElems);
  reg("copy/sum/" + std::to_string(kSumElems >> 20) + "M", benchmark::kMillisecond, copy_bytes,
      kF32 * kSumElems);
}

void register_blas_benchmarks() {
  using benchmark::kMillisecond;
#ifdef EMBER_BENCH_OPENBLAS
  benchmark::AddCustomContext("openblas_threads", std::to_string(openblas_get_num_threads()));
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  for (int64_t n : kMatmulSizes)
    reg("openblas/matmul/" + std::to_string(n), kMillisecond, openblas_matmul, n);
#endif
#ifdef EMBER_BENCH_ONEDNN
  for (int64_t n : kMatmulSizes)
    reg("onednn/matmul/" + std::to_string(n), kMillisecond, onednn_matmul, n);
#endif
}

}  // namespace bench
