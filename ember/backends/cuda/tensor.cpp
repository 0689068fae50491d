// CudaTensor, data transfer, the op switch and the registration with Dispatch.
#include <cstring>

#include "ember/backend/device_backend.h"
#include "ember/backends/cuda/ops.h"
#include "ember/core/error.h"
#include "ember/fusion/fusion.h"

namespace ember {

bool CudaTensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = meta.shape.rank(); i-- > 0;) {
    if (meta.shape[i] == 0) return true;
    if (meta.shape[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= meta.shape[i];
  }
  return true;
}

cuda::DevicePtr CudaTensor::ptr() const {
  if (!storage || !storage->ptr) return 0;
  return storage->ptr + static_cast<uint64_t>(offset * int64_t(size_of(meta.dtype)));
}

CudaTensor Cuda::from_data(const TensorData& d, Device dev) {
  if (dev.kind != DeviceKind::Cuda)
    throw DeviceError("[cuda] from_data for device " + dev.to_string());
  CudaTensor t = cuda::detail::empty({d.shape(), d.dtype()}, dev.index);
  if (!d.bytes().empty()) {
    auto& s = cuda::detail::device(dev.index);
    s.staging.upload(t.storage->ptr, d.bytes().data(), d.bytes().size(), s.s());
  }
  return t;
}

TensorData Cuda::to_data(const CudaTensor& h) {
  TensorData d(h.meta.shape, h.meta.dtype);
  auto& s = cuda::detail::device(h.device);
  CudaTensor c = cuda::detail::contiguous(h);
  if (!d.bytes().empty()) {
    s.staging.download(d.bytes().data(), c.ptr(), d.bytes().size(), s.s());
  } else {
    cuda::raw::stream_synchronize(s.s());  // errors of queued work show here
  }
  return d;
}

CudaTensor Cuda::run(const Op& op, std::span<CudaTensor> in, const TensorMeta& out, Device dev) {
  using namespace cuda::detail;
  try {
    switch (info(op.code).family) {
      case OpFamily::Create:
        return create(op, out, dev.index);
      case OpFamily::Unary:
      case OpFamily::Binary:
      case OpFamily::Compare:
        return elementwise(op, in, out);
      case OpFamily::Where:
        return where(in, out);
      case OpFamily::Cast:  // flag: a dense copy even in the same dtype (contiguous())
        if (op.attrs.flag && in[0].meta.dtype == out.dtype && !in[0].is_contiguous())
          return copy_strided(in[0]);
        return cast(in, out);
      case OpFamily::Reduce:
        return reduce(op, in, out);
      case OpFamily::Scan:
        return scan(op, in, out);
      case OpFamily::Movement:
        return movement(op, in, out);
      case OpFamily::Matmul:
        return matmul(op, in, out);
      case OpFamily::Index:
        return index(op, in, out);
      case OpFamily::Sort:
        return sort(op, in, out);
      case OpFamily::Composite:
        return composite(op, in, out);
      case OpFamily::Spatial:
        return spatial(op, in, out);
      default:
        not_implemented(op, in);
    }
  } catch (const MemoryError&) {
    throw;  // apply names the op and the output
  } catch (const Error& e) {
    // Name the op and the inputs once: the driver's and NVRTC's errors know neither.
    std::string opname = "[" + std::string(ember::name(op.code)) + "]";
    std::string what = e.what();
    if (what.rfind(opname, 0) == 0) throw;
    throw DeviceError(opname + " on cuda:" + std::to_string(dev.index) + " with inputs " +
                      describe(in) + ": " + what);
  }
}

bool Cuda::supports(OpCode c) {
  return c == OpCode::Softmax || c == OpCode::LogSoftmax || c == OpCode::LogSumExp ||
         c == OpCode::Gelu || c == OpCode::Silu || c == OpCode::LayerNorm || c == OpCode::RmsNorm;
}

namespace cuda {

/// Dispatch's backend for DeviceKind::Cuda, or nullptr where there is no usable GPU
/// (called by the registry in backend/dispatch.cpp, which is how ember_cuda gets linked in).
std::unique_ptr<DeviceBackend> make_device_backend() {
  int n = detail::device_count_cached();
  if (n <= 0) return nullptr;
  // Fused by default: Fusion runs ops at once when it is switched off (docs/fusion.md).
  return std::make_unique<DeviceBackendFor<Fusion<Cuda>>>(n);
}

}  // namespace cuda

}  // namespace ember
