// Internal: what ember's GPU op implementations (ops.h) need of a device, written once for
// every GPU runtime: kernels of the kernel IR loaded under a 64-bit key packed from their spec
// (no hashing of strings, so a repeated op builds, renders and compiles nothing), launches of
// pointers and scalars, memory from the runtime's pool, copies and fills, and the GEMM and
// convolution each runtime brings (cuBLASLt and cuDNN on CUDA, kernels of the IR elsewhere).
// The CUDA runtime (backends/cuda/runtime.h) and the Vulkan one (backends/vulkan/host.cpp)
// implement it.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/backends/gpu/tensor.h"
#include "ember/core/small_vec.h"
#include "ember/kernel/ir.h"

namespace ember::gpu {

/// A kernel loaded on one device, with its parameter types for packing arguments.
struct Loaded {
  virtual ~Loaded() = default;
  int block[3] = {1, 1, 1};
  SmallVec<kernel::ScalarType, 24> params;  // Void for buffers
  std::string name;
};

/// One launch argument: a buffer parameter's device address or a scalar, converted to the
/// parameter's type by the runtime.
struct Arg {
  enum Kind : uint8_t { Int, Real, Address } kind;
  int64_t i;
  double f;
};

/// What a kernel key is made of; every field fits its bits.
enum class Kind : uint8_t {
  Elementwise,
  Reduce,
  Where,
  Copy,
  Fill,
  SeqReduce,
  Scan,
  Matmul,
  Index,
  Sort,
  Softmax,
  Spatial,
  Norm
};
constexpr uint64_t key(Kind kind, int op, DType a, DType b = DType::F32, int rank = 0,
                       bool dense = false, bool wide = false, int extra = 0) {
  return uint64_t(kind) | uint64_t(op) << 8 | uint64_t(a) << 24 | uint64_t(b) << 32 |
         uint64_t(rank) << 40 | uint64_t(dense) << 48 | uint64_t(wide) << 49 |
         uint64_t(extra) << 50;
}

/// A matrix operand of a GEMM: its leading dimension and whether it is column-major.
struct MatView {
  int64_t ld;
  bool col;
};
/// One (strided-batched) GEMM of matmul: c[batch] = a[batch] b[batch], row-major [m, n] output.
/// An epilogue (Fusion's, gpu::run_epilogue) adds a bias of n elements to every row, a residual
/// laid out like c (strides sc between batches) and then takes the relu, before c is written.
struct GemmCall {
  DType dtype;
  int64_t m, n, k;
  MatView va, vb;
  int64_t batch, sa, sb, sc;        // batch count and element strides between batches
  uint64_t bias = 0, residual = 0;  // device addresses; 0: none
  bool relu = false;
  bool has_epilogue() const { return bias || residual || relu; }
};

class EMBER_API Runtime {
 public:
  Runtime(DeviceKind kind, int index) : kind(kind), index(index) {}
  virtual ~Runtime();
  Runtime(const Runtime&) = delete;
  DeviceKind kind;
  int index;
  int multiprocessors = 1;  // compute units: launch sizes scale with it
  int subgroup = 32;        // lanes of a subgroup (8 to 128): workgroups hold whole ones

  /// "cuda", "vulkan": the backend's name in messages.
  virtual const char* backend() const = 0;
  /// "cuda:0", "vulkan:1".
  std::string label() const;

  /// The kernel under `k`, or nullptr if not loaded yet.
  const Loaded* find(uint64_t k);
  /// Compiles (through the kernel cache) and loads `kern` under `k`.
  const Loaded& load(uint64_t k, const kernel::Kernel& kern);
  /// The same for kernels named by a byte string (fused programs: their signature and layout).
  const Loaded* find(const std::string& k);
  const Loaded& load(const std::string& k, const kernel::Kernel& kern);

  /// Storage of `bytes` from the pool (0 gives a storage without memory). Throws MemoryError.
  virtual std::shared_ptr<Storage> allocate(size_t bytes) = 0;
  /// Queues `l` on `groups` workgroups (groups <= 0: nothing).
  virtual void launch(const Loaded& l, std::span<const Arg> args, int64_t groups) = 0;
  /// Queues a copy of `bytes` between storages (byte offsets), in order with the launches.
  virtual void copy(const Storage& src, size_t src_offset, const Storage& dst, size_t dst_offset,
                    size_t bytes) = 0;
  /// Queues filling `count` elements of `size` bytes (1, 2 or 4) at byte `offset` of `dst` with
  /// the low bytes of `pattern`.
  virtual void fill(const Storage& dst, size_t offset, uint32_t pattern, int size,
                    size_t count) = 0;
  /// Host to device after the queued work (the source may be reused when this returns).
  virtual void upload(const Storage& dst, size_t offset, const void* src, size_t bytes) = 0;
  /// Device to host after the queued work; returns when the data are there.
  virtual void download(void* dst, const Storage& src, size_t offset, size_t bytes) = 0;
  /// Waits for the queued work (its errors show here).
  virtual void synchronize() = 0;
  /// Milliseconds one call of `launches` takes on the device (after a warm-up call).
  virtual double time_ms(const std::function<void()>& launches) = 0;
  /// The device's name and architecture as the tuner's file names them.
  virtual std::string tuner_device() const = 0;
  virtual std::filesystem::path tuner_file() const = 0;
  /// c = a b for one GemmCall (`shapes` names the op's operands for errors). The default: a
  /// simple kernel of the IR.
  virtual void gemm(const GemmCall& g, Address a, Address b, Address c, const std::string& shapes);
  /// Whether gemm() runs `g`, whose epilogue is set, on these addresses (the default kernel has
  /// no epilogue: false).
  virtual bool gemm_epilogue(const GemmCall&, Address, Address, Address) { return false; }
  /// The source `kern` is compiled from here (CUDA C++, GLSL), for dumps.
  virtual std::string render(const kernel::Kernel& kern) const = 0;
  /// Whether `l`'s compile has finished (or failed): its launch would not wait for it.
  virtual bool ready(const Loaded&) const { return true; }
  /// Whether kernels compile in the background (CUDA), so the tuner can launch the
  /// heuristic's kernel while the candidates compile (launch_tuned).
  virtual bool compiles_async() const { return false; }
  /// Runs a conv-family op on the vendor's library (cuDNN on CUDA) when it takes the case;
  /// false otherwise. has_vendor_conv: whether there is one to ask.
  virtual bool has_vendor_conv() const { return false; }
  virtual bool vendor_conv(const Op&, const GpuTensor&, const GpuTensor&, const GpuTensor&) {
    return false;
  }

 protected:
  /// Compiles `kern` for this device.
  virtual std::unique_ptr<Loaded> compile(const kernel::Kernel& kern) = 0;

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, std::unique_ptr<Loaded>> kernels_;
  std::unordered_map<std::string, std::unique_ptr<Loaded>> named_;
};

/// While one lives on a thread, kernel launches through Args only get their kernels compiling
/// (at low priority where the runtime compiles in the background) and are recorded here
/// instead of queued: the tuner starts its candidates' compiles this way.
class EMBER_API CompileProbe {
 public:
  CompileProbe();
  ~CompileProbe();
  CompileProbe(const CompileProbe&) = delete;
  /// The probe active on this thread, or nullptr.
  static CompileProbe* active();
  std::vector<const Loaded*> kernels;

 private:
  CompileProbe* outer_;
};

/// The runtime of a tensor.
inline Runtime& runtime(const GpuTensor& t) { return *t.runtime; }

/// The kernel under `k`, built by `build()` the first time.
template <class F>
const Loaded& kernel_for(Runtime& d, uint64_t k, F&& build) {
  if (const Loaded* l = d.find(k)) return *l;
  return d.load(k, build());
}

/// Arguments of one launch, in the order of the kernel's parameters.
class EMBER_API Args {
 public:
  explicit Args(const Loaded& l) : l_(l) {}
  Args& ptr(Address p) { return push({Arg::Address, static_cast<int64_t>(p), 0}); }
  Args& i(int64_t v) { return push({Arg::Int, v, 0}); }
  Args& f(double v) { return push({Arg::Real, 0, v}); }
  /// Launches `groups` workgroups on the device's queue.
  void launch(Runtime& d, int64_t groups);

  static constexpr int kMaxArgs = 160;

 private:
  Args& push(Arg a);
  const Loaded& l_;
  Arg args_[kMaxArgs];
  int n_ = 0;
};

/// The bytes of a scalar argument as parameter type `t` takes it (8 bytes at most; ints
/// saturate from reals, reals convert from ints).
uint64_t pack(const Arg& a, kernel::ScalarType t);

/// Workgroups for a grid-stride loop over `n` items of `per_group` each.
int64_t groups_for(const Runtime& d, int64_t n, int64_t per_group);

/// An uninitialized dense tensor on `d`.
EMBER_API GpuTensor empty(const TensorMeta& meta, Runtime& d);
/// A dense copy of `t` (t itself when it is contiguous).
EMBER_API GpuTensor contiguous(const GpuTensor& t);
/// Strides of `t` broadcast to `shape` (0 where broadcast).
Dims broadcast_strides(const GpuTensor& t, const Shape& shape);
/// Whether `t` may be overwritten as the output `out` (sole owner, same meta, dense).
bool reusable(const GpuTensor& t, const TensorMeta& out);
/// Fills `bytes` of `t`'s storage from its offset with zeros.
void zero(const GpuTensor& t, size_t bytes);

/// A shape and operands' strides with size-1 dims dropped and mergeable dims merged.
struct Collapsed {
  Dims shape;
  std::vector<Dims> strides;  // one per operand, in the order given
  int64_t numel = 1;
  bool wide = false;  // some index or offset needs 64 bits
};
Collapsed collapse(const Shape& shape, std::span<const Dims* const> strides);

[[noreturn]] void not_implemented(const Op& op, std::span<const GpuTensor> in,
                                  const std::string& what = "");
std::string describe(std::span<const GpuTensor> in);

}  // namespace ember::gpu
