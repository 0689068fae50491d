// The validator: every kernel is checked before a pass or a renderer sees it. A malformed
// kernel raises ValueError naming the kernel, the instruction (its index and dump) and what
// is wrong, e.g. "[kernel k] instruction 5 (%5:f32 = add %3, %4): operand types differ: f32
// and i32".
//
//   kernel::KernelBuilder kb("k");
//   kernel::Mem x = kb.buffer("x", kernel::ScalarType::F32, kernel::Access::Read);
//   kb.store(x, kb.global_id(0), kb.lit(kernel::ScalarType::F32, 1));
//   try { kernel::validate(kb.kernel()); } catch (const ValueError& e) { /* read-only */ }
#pragma once
#include <cstdint>

#include "ember/core/export.h"
#include "ember/kernel/ir.h"

namespace ember::kernel {

struct ValidateOptions {
  int64_t max_shared_bytes = 48 * 1024;  // what every CUDA GPU gives without opting in
  int max_workgroup_threads = 1024;
};

/// Throws ValueError when `k` is malformed: bad types or vector widths, operands undefined or
/// not visible from the use, unbalanced blocks, stores to read-only buffers, barriers in
/// divergent control flow, shared memory or workgroup over the limits.
EMBER_API void validate(const Kernel& k, const ValidateOptions& options = {});

}  // namespace ember::kernel
