// CpuTensor storage, data transfer, and the kernel lookup of Cpu::run.
#include <cstdlib>
#include <cstring>

#include "ember/backends/cpu/allocator.h"
#include "ember/backends/cpu/gemm.h"
#include "ember/backends/cpu/kernels.h"

namespace ember {

bool CpuTensor::is_contiguous() const { return is_dense(meta.shape, strides); }

namespace cpu {

CpuTensor empty(const TensorMeta& meta) {
  auto bytes = static_cast<size_t>(byte_size(meta.shape, size_of(meta.dtype), "cpu"));
  return CpuTensor{allocate(bytes), meta, contiguous_strides(meta.shape), 0};
}

Dims broadcast_strides(const CpuTensor& t, const Shape& shape) {
  return ember::broadcast_strides(t.meta.shape, t.strides, shape);
}

bool reusable(const CpuTensor& t, const TensorMeta& out) {
  return t.storage.use_count() == 1 && t.meta == out && t.is_contiguous();
}

namespace {
constexpr int64_t kTile = 32;

// dst[i, j] = src[i, j] over the last two loop dims in kTile x kTile tiles, for copies whose
// source and destination run along different dims (transposes): both stay in cache.
template <class E>
void copy_tiled(const Loop<2>& L, E* d, const E* s) {
  size_t r = L.shape.size();
  int64_t rows = L.shape[r - 2], cols = L.shape[r - 1];
  int64_t dr = L.strides[0][r - 2], dc = L.strides[0][r - 1];
  int64_t sr = L.strides[1][r - 2], sc = L.strides[1][r - 1];
  int64_t outer = 1;
  for (size_t k = 0; k + 2 < r; ++k) outer *= L.shape[k];
  int64_t tiles_r = (rows + kTile - 1) / kTile, tiles_c = (cols + kTile - 1) / kTile;
  parallel_for(outer * tiles_r * tiles_c, 16, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / (tiles_r * tiles_c), tr = (t / tiles_c) % tiles_r, tc = t % tiles_c;
      int64_t od = L.base[0], os = L.base[1], rem = o;
      for (size_t k = r - 2; k-- > 0;) {
        int64_t i = rem % L.shape[k];
        rem /= L.shape[k];
        od += i * L.strides[0][k];
        os += i * L.strides[1][k];
      }
      int64_t i1 = std::min(rows, (tr + 1) * kTile), j1 = std::min(cols, (tc + 1) * kTile);
      if constexpr (sizeof(E) == 4) {
        if (dc == 1 && sr == 1) {  // a 2-d transpose: the source's columns are contiguous
          const int64_t i0 = tr * kTile, j0 = tc * kTile;
          transpose_into(s + os + i0 + j0 * sc, sc, j1 - j0, i1 - i0, d + od + i0 * dr + j0, dr);
          continue;
        }
      }
      for (int64_t i = tr * kTile; i < i1; ++i)
        for (int64_t j = tc * kTile; j < j1; ++j) d[od + i * dr + j * dc] = s[os + i * sr + j * sc];
    }
  });
}

template <class E>
void copy_elems(const CpuTensor& src, const CpuTensor& dst) {
  auto L = make_loop<2>(dst.meta.shape, {&dst.strides, &src.strides}, {dst.offset, src.offset});
  E* d = reinterpret_cast<E*>(dst.storage.get());
  const E* s = reinterpret_cast<const E*>(src.storage.get());
  int64_t sd = L.inner(0), ss = L.inner(1);
  size_t r = L.shape.size();
  if (r >= 2 && ss != 1 && std::abs(L.strides[1][r - 2]) == 1 && L.shape[r - 1] >= kTile &&
      L.shape[r - 2] >= kTile) {
    copy_tiled(L, d, s);
    return;
  }
  run_loop(L, [&](const std::array<int64_t, 2>& o, int64_t n) {
    if (sd == 1 && ss == 1) {
      std::memcpy(d + o[0], s + o[1], n * sizeof(E));
    } else if (sd == 1 && ss == 0) {  // a broadcast value (an expanded view): a fill
      std::fill(d + o[0], d + o[0] + n, s[o[1]]);
    } else {
      for (int64_t i = 0; i < n; ++i) d[o[0] + i * sd] = s[o[1] + i * ss];
    }
  });
}
}  // namespace

void copy_into(const CpuTensor& src, const CpuTensor& dst) {
  switch (size_of(src.meta.dtype)) {
    case 8:
      copy_elems<uint64_t>(src, dst);
      break;
    case 4:
      copy_elems<uint32_t>(src, dst);
      break;
    case 2:
      copy_elems<uint16_t>(src, dst);
      break;
    default:
      copy_elems<uint8_t>(src, dst);
      break;
  }
}

namespace {
constexpr std::string_view kFamilyNames[kNumOpFamilies] = {
    "Create", "Unary", "Binary",   "Compare", "Where",  "Cast",    "Reduce",
    "Scan",   "Sort",  "Movement", "Index",   "Matmul", "Spatial", "Composite"};

[[noreturn]] void no_kernel(const Op& op, OpFamily f, DType t) {
  throw DTypeError("[" + std::string(name(op.code)) + "] this program has no cpu kernel of the " +
                   std::string(kFamilyNames[static_cast<int>(f)]) + " family for " +
                   std::string(name(t)) + " (its EMBER_CPU_KERNELS table leaves it out)");
}
}  // namespace

CpuTensor run_kernel(const Op& op, Inputs in, const TensorMeta& out) {
  const OpFamily f = info(op.code).family;
  // The type a family's kernels are made for: the output's for ops without a data input.
  const DType t = in.empty() || f == OpFamily::Where ? out.dtype : in[0].meta.dtype;
  Kernel k = kernel_table().at[static_cast<int>(f)][static_cast<int>(t)];
  if (!k) no_kernel(op, f, t);
  return k(op, in, out);
}

CpuTensor cast_to(const CpuTensor& t, DType dt) {
  if (t.meta.dtype == dt) return t;
  CpuTensor in[1] = {t};
  return run_kernel(Op{OpCode::Cast, {}}, Inputs(in), TensorMeta{t.meta.shape, dt});
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
  auto d = TensorData::uninitialized(h.meta.shape, h.meta.dtype);
  if (!d.bytes().empty()) std::memcpy(d.bytes().data(), c.raw(), d.bytes().size());
  return d;
}

int64_t Cpu::live_buffers() { return cpu::live_buffers(); }
int64_t Cpu::live_bytes() { return cpu::live_bytes(); }
void Cpu::empty_cache() { cpu::empty_cache(); }

bool Cpu::supports(OpCode c) { return cpu::has_composite_kernel(c); }

CpuTensor Cpu::run(const Op& op, std::span<CpuTensor> in, const TensorMeta& out, Device) {
  return cpu::run_kernel(op, in, out);
}

}  // namespace ember
