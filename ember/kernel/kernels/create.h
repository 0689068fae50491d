// Creation kernels written against the kernel IR: full, arange and the counter-based random
// fills (uniform, normal, bernoulli). The output is dense; element i of a random op is a pure
// function of (seed, i), the same function as the CPU backend's (ember/core/rng.h: splitmix64
// of seed ^ splitmix64(i), built from u32 halves so targets without 64-bit ints run it), so
// every backend draws the same numbers for the same seed.
//
//   kernel::CreateSpec s{OpCode::RandomNormal, DType::F32};
//   kernel::Kernel k = kernel::create_kernel(s);
//   // launch with (out, n, mean, std, seed_lo, seed_hi), any number of workgroups
//
// Parameters, in order (ix: i32, or i64 with `wide_index`; "value type": f64 for float
// outputs, i64 for int and bool outputs):
//  - full: out, n: ix, value: value type;
//  - arange: out, n: ix, start: value type, step: value type (out[i] = start + step * i);
//  - random_uniform: out, n: ix, low: f64, high: f64, seed_lo: u32, seed_hi: u32 (ints get
//    floor(low + (high - low) * u), u in [0, 1));
//  - random_normal: out, n: ix, mean: f64, std: f64, seed_lo: u32, seed_hi: u32;
//  - random_bernoulli: out, n: ix, p: f64, seed_lo: u32, seed_hi: u32 (1 where u < p).
// seed_lo and seed_hi are the low and high 32 bits of attrs.seed. Random numbers are computed
// in f64 (as on the CPU) and converted with the CPU backend's rules (ints saturate).
// Launch any number of workgroups: the kernel loops over the elements.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct CreateSpec {
  OpCode op = OpCode::Full;  // Full, Arange, RandomUniform, RandomNormal, RandomBernoulli
  DType dtype = DType::F32;  // of the output
  bool wide_index = false;   // i64 n
  int workgroup = 256;
};

/// The kernel (ValueError for an op that is not a creation op).
EMBER_API Kernel create_kernel(const CreateSpec& spec);

}  // namespace ember::kernel
