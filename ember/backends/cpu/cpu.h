// The CPU backend: strided tensors over shared host buffers, multithreaded and vectorized
// kernels, matmul through BLAS when it is available and a portable kernel otherwise.
//
//   using ember::Cpu;
//   auto x = ember::Tensor<Cpu, 2>::ones({2, 3});
//
// Views (reshape of contiguous data, permute, expand, slice, flip) share the buffer and only
// change strides and offset; an op on a handle no one else holds may reuse its buffer.
#pragma once
#include <memory>
#include <vector>

#include "ember/backend/backend.h"
#include "ember/core/export.h"
#include "ember/fusion/program.h"

namespace ember {

/// A CPU tensor: a shared buffer seen through shape, strides (in elements, possibly 0 for
/// broadcast or negative for flip) and an offset.
struct EMBER_API CpuTensor {
  std::shared_ptr<std::byte[]> storage;
  TensorMeta meta;
  Dims strides;
  int64_t offset = 0;  // elements

  /// Row-major and dense from `raw()` on (dims of size 1 may have any stride).
  bool is_contiguous() const;
  template <class T>
  T* data() const {
    return reinterpret_cast<T*>(storage.get()) + offset;
  }
  std::byte* raw() const { return storage.get() + offset * size_of(meta.dtype); }
};

class EMBER_API Cpu {
 public:
  using Handle = CpuTensor;
  static std::string_view name() { return "cpu"; }
  static Device default_device() { return Device::cpu(); }
  static const TensorMeta& meta(const Handle& h) { return h.meta; }
  static Device device(const Handle&) { return Device::cpu(); }
  static Handle from_data(const TensorData& d, Device dev);
  static TensorData to_data(const Handle& h);
  static Handle run(const Op& op, std::span<Handle> in, const TensorMeta& out, Device dev);
  static bool supports(OpCode c);
  /// Fusion<Cpu> (EMBER_FUSION=1): every op Fusion records may join a program; a program of
  /// 2^17 elements or more whose inputs are dense or one element runs its steps on blocks of
  /// 16384 elements across the worker threads, so intermediates stay in cache; others run
  /// step by step (fused.cpp, docs/fusion.md).
  static bool can_fuse(const Op& op, std::span<const TensorMeta* const> in, const TensorMeta& out);
  static std::vector<CpuTensor> run_fused(const fusion::Program& p, std::span<CpuTensor> in,
                                          Device dev);
  /// Buffers allocated by the CPU backend and not yet freed (for leak tests).
  static int64_t live_buffers();
  static int64_t live_bytes();
  /// Returns cached free buffers to the system (see EMBER_CPU_CACHE_MB).
  static void empty_cache();
};

static_assert(Backend<Cpu>);

}  // namespace ember
