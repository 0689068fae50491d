// Internal: NVRTC compiles on worker threads. A kernel is compiled when an op first needs it;
// its launch waits in the device's command queue (queue.h) while the host goes on recording
// the rest of the step, so a first step's kernels compile side by side instead of one after
// another. EMBER_CUDA_COMPILE_THREADS caps the workers (default: the host's cores, at most 16).
#pragma once
#include <future>
#include <memory>
#include <string>

#include "ember/backends/cuda/driver.h"
#include "ember/kernel/codegen/nvrtc.h"

namespace ember::cuda::detail {

/// Compiles `source` (entry point `name`, through the kernel cache) and loads it into `ctx` on a
/// worker thread; the future holds the module or the error (NVRTC's log, the driver's). A
/// `background` compile (a tuning candidate nothing waits for yet) runs on a worker of lower
/// priority, of which there are half as many.
std::shared_future<std::shared_ptr<Module>> compile_async(std::string source, std::string name,
                                                          kernel::CudaCompileOptions options,
                                                          CuContext* ctx, bool background = false);

/// Blocks until every compile queued so far has finished (a benchmark times its steady steps
/// after the JIT's).
void wait_for_compiles();

}  // namespace ember::cuda::detail
