// Fusion's switches and counters (docs/fusion.md). In the environment: EMBER_FUSION=0 runs
// every op at once (one kernel per op); EMBER_FUSION=1 also wraps Dispatch's cpu in Fusion (GPUs
// are fused by default); EMBER_FUSION_DUMP=stderr (or a file path) writes each program that
// runs and each kernel generated for one.
//
//   ember::fusion::set_enabled(false);        // the same as EMBER_FUSION=0, from now on
//   ember::fusion::set_enabled(true);
//   ember::fusion::reset_stats();
//   ...
//   ember::fusion::Stats s = ember::fusion::stats();   // s.programs, s.kernel_launches, ...
#pragma once
#include <cstdint>
#include <string>

#include "ember/core/export.h"

namespace ember::fusion {

/// Whether Fusion decorators record ops (true unless EMBER_FUSION is 0/off or set_enabled).
EMBER_API bool enabled();
EMBER_API void set_enabled(bool on);
/// Whether matmuls wait for the elementwise ops that follow them, so that a backend that can
/// (CUDA) runs a bias, a residual add and a relu as the GEMM's epilogue (true unless
/// EMBER_FUSION_EPILOGUES is 0/off or set_epilogues; only with fusion enabled).
EMBER_API bool epilogues();
EMBER_API void set_epilogues(bool on);
/// Whether Dispatch wraps the CPU backend in Fusion too (EMBER_FUSION=1/on/all). Read once,
/// when the device registry is built.
EMBER_API bool cpu_requested();
/// Steps a program may hold before it is flushed (EMBER_FUSION_MAX_STEPS, default 64).
EMBER_API int max_steps();
/// Distinct input tensors a program may read (8 inputs: about the widest real chain).
inline constexpr int kMaxInputs = 8;

/// Counters since the start or the last reset_stats(), over every device.
struct Stats {
  int64_t recorded = 0;          // ops recorded instead of run
  int64_t flushes = 0;           // programs closed (by reads, other ops, shape changes, bounds)
  int64_t programs = 0;          // programs that ran (one or more steps with a live output)
  int64_t fused_steps = 0;       // ops in those programs (constants not counted)
  int64_t dead_steps = 0;        // recorded ops nobody needed: never run
  int64_t kernel_launches = 0;   // programs run as one generated kernel
  int64_t replayed_ops = 0;      // ops of programs run op by op (backends without fused kernels)
  int64_t outputs = 0;           // values written by programs
  int64_t buffers_reused = 0;    // outputs written into an input's buffer
  int64_t plans_compiled = 0;    // fused kernels generated and compiled (or read from disk)
  int64_t plan_hits = 0;         // programs whose kernel was already loaded
  int64_t fallbacks = 0;         // programs whose kernel failed, replayed op by op instead
  int64_t reductions = 0;        // reductions run as the end of a program (its prologue fused)
  int64_t matmuls_deferred = 0;  // matmuls recorded to wait for an epilogue
  int64_t epilogues = 0;         // matmuls that ran steps of the next program as their epilogue
  int64_t epilogue_steps = 0;    // the steps they ran
};
EMBER_API Stats stats();
EMBER_API void reset_stats();

/// Where programs and generated kernels are written: "" (nowhere), "stderr", or a file path
/// (appended). Initially $EMBER_FUSION_DUMP.
EMBER_API void set_dump(const std::string& target);
EMBER_API bool dumping();
/// Writes `text` to the dump target (nothing when not dumping).
EMBER_API void dump(const std::string& text);

namespace detail {
enum class Counter {
  Recorded,
  Flushes,
  Programs,
  FusedSteps,
  DeadSteps,
  KernelLaunches,
  ReplayedOps,
  Outputs,
  BuffersReused,
  PlansCompiled,
  PlanHits,
  Fallbacks,
  Reductions,
  MatmulsDeferred,
  Epilogues,
  EpilogueSteps
};
EMBER_API void count(Counter c, int64_t n = 1);
}  // namespace detail

}  // namespace ember::fusion
