// The op switch, data transfer and the runtime lookup of the GPU op layer.
#include "ember/backends/gpu/backend.h"

#include <array>
#include <atomic>

#include "ember/core/error.h"

namespace ember::gpu {

namespace {
std::array<std::atomic<RuntimeLookup>, 16> g_lookups{};
}  // namespace

void set_runtime_lookup(DeviceKind kind, RuntimeLookup lookup) {
  g_lookups.at(size_t(kind)).store(lookup, std::memory_order_release);
}

Runtime& runtime_for(Device dev) {
  RuntimeLookup f = size_t(dev.kind) < g_lookups.size()
                        ? g_lookups[size_t(dev.kind)].load(std::memory_order_acquire)
                        : nullptr;
  if (!f) throw DeviceError("[gpu] no GPU runtime for device " + dev.to_string());
  return f(dev.index);
}

GpuTensor from_data(const TensorData& d, Runtime& rt) {
  GpuTensor t = empty({d.shape(), d.dtype()}, rt);
  if (!d.bytes().empty()) rt.upload(*t.storage, 0, d.bytes().data(), d.bytes().size());
  return t;
}

TensorData to_data(const GpuTensor& h) {
  auto d = TensorData::uninitialized(h.meta.shape, h.meta.dtype);
  Runtime& rt = runtime(h);
  GpuTensor c = contiguous(h);
  if (!d.bytes().empty())
    rt.download(d.bytes().data(), *c.storage, size_t(c.offset) * size_of(c.meta.dtype),
                d.bytes().size());
  else
    rt.synchronize();  // errors of queued work show here
  return d;
}

GpuTensor run(const Op& op, Inputs in, const TensorMeta& out, Runtime& d) {
  try {
    switch (info(op.code).family) {
      case OpFamily::Create:
        return create(op, out, d);
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
    // Name the op and the inputs once: the drivers' and compilers' errors know neither.
    std::string opname = "[" + std::string(ember::name(op.code)) + "]";
    std::string what = e.what();
    if (what.rfind(opname, 0) == 0) throw;
    throw DeviceError(opname + " on " + d.label() + " with inputs " + describe(in) + ": " + what);
  }
}

bool supports(OpCode c) {
  return c == OpCode::Softmax || c == OpCode::LogSoftmax || c == OpCode::LogSumExp ||
         c == OpCode::Gelu || c == OpCode::Silu || c == OpCode::LayerNorm || c == OpCode::RmsNorm;
}

}  // namespace ember::gpu
