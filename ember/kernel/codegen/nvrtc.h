// NVRTC, loaded at run time: CUDA C++ source to an sm_XX cubin, or PTX for an architecture
// this NVRTC cannot build a cubin for (the driver compiles that PTX for the GPU). Results go
// through a KernelCache keyed by source, options, architecture and NVRTC version, so a
// second process start compiles nothing.
//
//   kernel::KernelBuilder kb("one");
//   kernel::Mem out = kb.buffer("out", kernel::ScalarType::F32, kernel::Access::Write);
//   kb.store(out, kb.global_id(0), kb.lit(kernel::ScalarType::F32, 1));
//   if (kernel::nvrtc_available()) {
//     kernel::CudaCompileOptions o;
//     o.arch = 90;
//     kernel::CudaBinary bin = kernel::compile_cuda(kb.finish(), o);
//     // bin.format == kernel::CudaBinary::Cubin, bin.data: the sm_90 cubin
//   }
//
// NVRTC is looked for as $EMBER_NVRTC, libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so and in
// /usr/local/cuda/lib64.
#pragma once
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/kernel/cache.h"
#include "ember/kernel/ir.h"

namespace ember::kernel {

struct CudaCompileOptions {
  int arch = 90;                     // compute capability * 10 (sm_90: 90)
  bool ptx = false;                  // PTX even where a cubin could be built
  std::vector<std::string> options;  // extra NVRTC options
  KernelCache* cache = nullptr;      // nullptr: KernelCache::global()
};

struct CudaBinary {
  enum Format : uint8_t { Cubin, Ptx };
  std::string kernel;  // the entry point
  Format format = Cubin;
  int arch = 0;            // what it was built for (compute_XX for PTX)
  std::vector<char> data;  // cubin bytes, or PTX text with its terminating 0
  bool cached = false;     // found in the cache: nothing was compiled
};

/// Whether NVRTC can be loaded; `why` says why not.
EMBER_API bool nvrtc_available(std::string* why = nullptr);
/// NVRTC's version as major * 1000 + minor * 10 (13.0: 13000); throws DeviceError when absent.
EMBER_API int nvrtc_version();
/// The architectures this NVRTC builds cubins for (e.g. 75 ... 120).
EMBER_API std::vector<int> nvrtc_architectures();

/// Compiles CUDA source defining `extern "C"` entry point `kernel`. Throws DeviceError when
/// NVRTC is missing and ValueError with NVRTC's log when compilation fails.
EMBER_API CudaBinary compile_cuda(const std::string& source, const std::string& kernel,
                                  const CudaCompileOptions& options = {});
/// render_cuda + compile_cuda.
EMBER_API CudaBinary compile_cuda(const Kernel& k, const CudaCompileOptions& options = {});

}  // namespace ember::kernel
