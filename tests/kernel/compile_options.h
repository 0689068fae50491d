// Test helper: CUDA compile options for a compile into `cache`.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "ember/kernel/codegen/nvrtc.h"

// Options for a compile into `cache` (designated initializers would leave fields unnamed).
inline ember::kernel::CudaCompileOptions opts(ember::kernel::KernelCache* cache, int arch = 90,
                                              bool ptx = false,
                                              std::vector<std::string> extra = {}) {
  ember::kernel::CudaCompileOptions o;
  o.arch = arch;
  o.ptx = ptx;
  o.options = std::move(extra);
  o.cache = cache;
  return o;
}
