// The CUDA backend: strided tensors in device memory from a caching pool, kernels generated
// from the kernel IR (compiled with NVRTC once and cached), matmul through cuBLASLt, convs
// through cuDNN where it is found. Every op is queued on the device's stream; to_data waits
// for it. Nothing is linked against CUDA: the driver, NVRTC, cuBLASLt and cuDNN are opened at
// run time, so programs start everywhere.
//
//   using ember::Cuda;
//   if (ember::cuda::available()) {
//     auto x = ember::Tensor<Cuda, 2>::ones({2, 3}, ember::Device::parse("cuda:0"));
//   }
//
// Through Dispatch the devices are "cuda:0" ... "cuda:N-1" (ember::available_devices()).
// Views (reshape of contiguous data, permute, expand, slice, flip) share the buffer and only
// change strides and offset; an op on a handle no one else holds may reuse its buffer.
// Convs run on cuDNN (libcudnn.so.9, loaded at run time) where it is found and takes the case,
// else on unfold + GEMM; EMBER_CUDNN=0 turns cuDNN off:
//
//   std::string why;
//   int version = ember::cuda::cudnn_version(&why);     // e.g. 91400; 0: why says why
//   int64_t runs = ember::cuda::cudnn_conv_calls();     // conv-family ops cuDNN ran so far
//   auto c = ember::cuda::cudnn_choice_stats();          // algorithms from disk / searched
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/backend/backend.h"
#include "ember/backend/device_memory.h"
#include "ember/backends/cuda/pool.h"
#include "ember/backends/gpu/tensor.h"
#include "ember/core/export.h"
#include "ember/fusion/program.h"

namespace ember {

class DeviceBackend;

namespace cuda {
/// Runs the ops Fusion still holds for the device (docs/fusion.md), then waits for every op
/// queued on it.
EMBER_API void synchronize(int device = 0);
/// Whether f32 matmuls may use TF32 tensor cores (faster, 10-bit mantissa inputs). Off by
/// default: f32 matmul is exact f32.
EMBER_API void set_allow_tf32(bool on);
EMBER_API bool allow_tf32();
/// The cuDNN version conv, conv_transpose and conv_weight_grad run on (e.g. 91400 for 9.14.0),
/// or 0 where they take unfold + GEMM instead: no libcudnn.so.9, one older than 9.0, or
/// `EMBER_CUDNN=0`; `why` says which. Needs no GPU.
EMBER_API int cudnn_version(std::string* why = nullptr);
/// How many conv-family ops ran through cuDNN in this process (the others took the direct
/// kernel or unfold + GEMM: cases cuDNN does not take fall back to them).
EMBER_API int64_t cudnn_conv_calls();
/// Where cuDNN's algorithm choices came from: stored on disk by an earlier process (beside the
/// compiled kernels; nothing is searched then) or searched for in this one (and stored).
struct CudnnChoiceStats {
  int64_t from_disk = 0, searched = 0;
};
EMBER_API CudnnChoiceStats cudnn_choice_stats();
/// Drops this process's cuDNN plans and the choices it holds in memory, as a new process
/// starts without them: the next conv of each shape takes its choice from disk or searches.
EMBER_API void forget_cudnn_plans();
/// What the devices' command queues did (docs/fusion.md, "Graph replay"): batches submitted and
/// the commands in them, batches captured as CUDA graphs and replayed, kernel nodes whose
/// scalar arguments were patched for a replay, and captures given up (not one node a launch).
struct GraphStats {
  int64_t batches = 0, commands = 0, captured = 0, replayed = 0, patched_nodes = 0,
          uncapturable = 0;
};
EMBER_API GraphStats graph_stats();
EMBER_API void reset_graph_stats();
/// Turns graph replay on or off at run time (EMBER_CUDA_GRAPHS=0 turns it off at start).
/// Off, every queued command is launched on its own.
EMBER_API void set_graphs(bool on);
/// Dispatch's backend for cuda:0..N-1, or nullptr where no GPU is usable (the factory that
/// backends/cuda/register.cpp registers; registering it by hand is not needed).
EMBER_API std::unique_ptr<DeviceBackend> make_device_backend();
}  // namespace cuda

/// A CUDA tensor: device storage seen through shape, strides and an offset (gpu/tensor.h).
using CudaTensor = GpuTensor;

class EMBER_API Cuda {
 public:
  using Handle = CudaTensor;
  static std::string_view name() { return "cuda"; }
  static Device default_device() { return {DeviceKind::Cuda, 0}; }
  static const TensorMeta& meta(const Handle& h) { return h.meta; }
  static Device device(const Handle& h) { return {DeviceKind::Cuda, h.device}; }
  static Handle from_data(const TensorData& d, Device dev);
  static TensorData to_data(const Handle& h);
  static Handle run(const Op& op, std::span<Handle> in, const TensorMeta& out, Device dev);
  /// Softmax, LogSoftmax, LogSumExp, Gelu, Silu, LayerNorm and RmsNorm run as one kernel
  /// each; other composites decompose.
  static bool supports(OpCode c);
  /// Submits the device's queued commands to its stream (not waited for).
  static void flush(Device dev);
  /// Calls `f` with the tensor's device address and the device's stream, its queued commands
  /// submitted first and the stream held for `f` alone (backend/device_memory.h). Throws
  /// ValueError for a view that is not contiguous.
  static void with_device_memory(const Handle& h, const DeviceMemoryFn& f);
  /// Fusion<Cuda>: whether a validated elementwise op may join a fused program, and a program
  /// run as one generated kernel (fused.cpp; docs/fusion.md).
  static bool can_fuse(const Op& op, std::span<const TensorMeta* const> in, const TensorMeta& out);
  static std::vector<CudaTensor> run_fused(const fusion::Program& p, std::span<CudaTensor> in,
                                           Device dev);
  /// Fusion<Cuda>'s matmul epilogues: a bias, a residual and a relu that a program adds to the
  /// product `mm` of `ab` run inside the cuBLASLt GEMM (gpu/epilogue.cpp).
  static std::optional<std::vector<CudaTensor>> run_epilogue(const Op& mm, std::span<CudaTensor> ab,
                                                             const fusion::Program& p, int product,
                                                             std::span<CudaTensor> in, Device dev);
};

static_assert(Backend<Cuda>);

}  // namespace ember
