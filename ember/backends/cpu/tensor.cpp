// CpuTensor storage, data transfer, and the op switch.
#include <atomic>
#include <cstring>

#include "ember/backends/cpu/kernels.h"

namespace ember {

bool CpuTensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = meta.shape.rank(); i-- > 0;) {
    if (meta.shape[i] == 0) return true;
    if (meta.shape[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= meta.shape[i];
  }
  return true;
}

namespace cpu {

namespace {
std::atomic<int64_t> g_live_buffers{0};
std::atomic<int64_t> g_live_bytes{0};

// Counts buffers alive; the count lives with the buffer's single allocation.
template <class T>
struct CountingAllocator {
  using value_type = T;
  CountingAllocator() = default;
  template <class U>
  CountingAllocator(const CountingAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) {
    ++g_live_buffers;
    g_live_bytes += static_cast<int64_t>(n * sizeof(T));
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) {
    --g_live_buffers;
    g_live_bytes -= static_cast<int64_t>(n * sizeof(T));
    std::allocator<T>().deallocate(p, n);
  }
  friend bool operator==(const CountingAllocator&, const CountingAllocator&) { return true; }
};
}  // namespace

CpuTensor empty(const TensorMeta& meta) {
  size_t bytes = static_cast<size_t>(meta.shape.numel()) * size_of(meta.dtype);
  return CpuTensor{std::allocate_shared_for_overwrite<std::byte[]>(CountingAllocator<std::byte>(), bytes),
                   meta, contiguous_strides(meta.shape), 0};
}

Dims broadcast_strides(const CpuTensor& t, const Shape& shape) {
  const Shape& s = t.meta.shape;
  size_t off = shape.rank() - s.rank();
  Dims st(shape.rank(), 0);
  for (size_t i = 0; i < s.rank(); ++i) st[off + i] = s[i] == 1 ? 0 : t.strides[i];
  return st;
}

bool reusable(const CpuTensor& t, const TensorMeta& out) {
  return t.storage.use_count() == 1 && t.meta == out && t.is_contiguous();
}

namespace {
template <class E>
void copy_elems(const CpuTensor& src, const CpuTensor& dst) {
  auto L = make_loop<2>(dst.meta.shape, {&dst.strides, &src.strides}, {dst.offset, src.offset});
  E* d = reinterpret_cast<E*>(dst.storage.get());
  const E* s = reinterpret_cast<const E*>(src.storage.get());
  int64_t sd = L.inner(0), ss = L.inner(1);
  run_loop(L, [&](const std::array<int64_t, 2>& o, int64_t n) {
    if (sd == 1 && ss == 1) {
      std::memcpy(d + o[0], s + o[1], n * sizeof(E));
    } else {
      for (int64_t i = 0; i < n; ++i) d[o[0] + i * sd] = s[o[1] + i * ss];
    }
  });
}
}  // namespace

void copy_into(const CpuTensor& src, const CpuTensor& dst) {
  switch (size_of(src.meta.dtype)) {
    case 8: copy_elems<uint64_t>(src, dst); break;
    case 4: copy_elems<uint32_t>(src, dst); break;
    case 2: copy_elems<uint16_t>(src, dst); break;
    default: copy_elems<uint8_t>(src, dst); break;
  }
}

CpuTensor contiguous(const CpuTensor& t) {
  if (t.is_contiguous()) return t;
  CpuTensor out = empty(t.meta);
  copy_into(t, out);
  return out;
}

}  // namespace cpu

CpuTensor Cpu::from_data(const TensorData& d, Device) {
  CpuTensor t = cpu::empty({d.shape(), d.dtype()});
  if (!d.bytes().empty()) std::memcpy(t.storage.get(), d.bytes().data(), d.bytes().size());
  return t;
}

TensorData Cpu::to_data(const CpuTensor& h) {
  CpuTensor c = cpu::contiguous(h);
  TensorData d(h.meta.shape, h.meta.dtype);
  if (!d.bytes().empty()) std::memcpy(d.bytes().data(), c.raw(), d.bytes().size());
  return d;
}

int64_t Cpu::live_buffers() { return cpu::g_live_buffers.load(); }
int64_t Cpu::live_bytes() { return cpu::g_live_bytes.load(); }

bool Cpu::supports(OpCode c) { return cpu::has_composite_kernel(c); }

CpuTensor Cpu::run(const Op& op, std::span<CpuTensor> in, const TensorMeta& out, Device) {
  using namespace cpu;
  switch (info(op.code).family) {
    case OpFamily::Create: return create(op, out);
    case OpFamily::Unary: return unary(op, in, out);
    case OpFamily::Binary:
    case OpFamily::Compare: return binary(op, in, out);
    case OpFamily::Where: return where(in, out);
    case OpFamily::Cast: return cast(in, out);
    case OpFamily::Reduce: return reduce(op, in, out);
    case OpFamily::Scan: return scan(op, in, out);
    case OpFamily::Sort: return argsort(op, in, out);
    case OpFamily::Movement: return movement(op, in, out);
    case OpFamily::Index: return index(op, in, out);
    case OpFamily::Matmul: return matmul(in, out);
    case OpFamily::Composite: return composite(op, in, out);
  }
  throw Error("[" + std::string(ember::name(op.code)) + "] not supported by the cpu backend");
}

}  // namespace ember
