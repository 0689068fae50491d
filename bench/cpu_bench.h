// Shared by cpu_bench.cpp (ember) and cpu_peers.cpp (native peers): the problem sizes and
// the per-iteration work counters. bench/peer_torch_cpu.py uses the same sizes and names.
//
// Benchmark names are "<who>/<op>/<size>": who is ember's backend ("cpu", "dispatch") or a
// peer ("openblas", "onednn", "copy"); bench/merge_bench.py pairs rows by "<op>/<size>".
#pragma once
#include <cstdint>

#include <benchmark/benchmark.h>

namespace bench {

inline constexpr int64_t kTiny = 16;            // per-op overhead
inline constexpr int64_t kElems = 16 << 20;     // add, exp: 16M floats
inline constexpr int64_t kSumElems = 64 << 20;  // full sum: 64M floats
inline constexpr int64_t kSoftmaxRows = 4096, kSoftmaxCols = 1024;
inline constexpr int64_t kSquare = 4096;  // sum_dim and transpose copy: [4096, 4096]
inline constexpr int64_t kMatmulSizes[] = {1024, 2048};

// Work per iteration, read by merge_bench.py to turn the median time into a rate. Exactly one
// is set per benchmark: "flop" (GFLOP/s), "bytes" moved = read + written (GB/s), or "ops"
// (microseconds per op).
inline void set_flop(benchmark::State& st, double flop) { st.counters["flop"] = flop; }
inline void set_bytes(benchmark::State& st, double bytes) { st.counters["bytes"] = bytes; }
inline void set_ops(benchmark::State& st, double ops) { st.counters["ops"] = ops; }

// The native peers (cpu_peers.cpp). Registration order is run order; main() keeps everything
// that calls OpenBLAS last, so OpenBLAS's still-spinning worker threads never overlap a
// bandwidth benchmark.
void register_copy_benchmarks();
void register_blas_benchmarks();

}  // namespace bench
