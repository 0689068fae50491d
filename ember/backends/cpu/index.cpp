// Indexing and assembly: cat, slice_assign, gather, scatter, index_select, index_add.
// Index values are data, so they are bounds-checked here and raise IndexError.
#include <cstring>

#include "ember/backends/cpu/elementwise.h"
#include "ember/backends/cpu/kernels.h"

namespace ember::cpu {

namespace {

[[noreturn]] void bad_index(const Op& op, int64_t i, int64_t n) {
  throw IndexError("[" + std::string(name(op.code)) + "] index " + std::to_string(i) +
                   " out of range for dim " + std::to_string(op.attrs.dim) + " of size " +
                   std::to_string(n));
}

// A tensor the op may write: the input itself when no one else holds it, else a copy.
CpuTensor writable_copy(CpuTensor& x, const TensorMeta& out) {
  if (reusable(x, out)) return x;
  CpuTensor o = empty(out);
  copy_into(x, o);
  return o;
}

// `t` seen through a slice along `dim`: [start, start + len).
CpuTensor narrow_view(CpuTensor t, int64_t dim, int64_t start, int64_t len) {
  if (len > 0) t.offset += start * t.strides[dim];
  t.meta.shape[dim] = len;
  return t;
}

std::vector<int64_t> read_indices(const CpuTensor& idx) {
  CpuTensor c = contiguous(idx);
  std::vector<int64_t> v(c.meta.shape.numel());
  convert_elements(c.raw(), c.meta.dtype, v.data(), DType::I64, v.size());
  return v;
}

// Walks the index tensor's positions; calls f(x_offset_without_dim, idx_value, pos_offsets).
template <class F>
void for_each_index(const Op& op, const CpuTensor& x, const CpuTensor& idx, const CpuTensor& third,
                    F f, bool serial) {
  int64_t dim = op.attrs.dim;
  Dims xs = x.strides;
  xs[dim] = 0;
  auto L = make_loop<3>(idx.meta.shape, {&xs, &idx.strides, &third.strides},
                        {x.offset, idx.offset, third.offset});
  int64_t s0 = L.inner(0), s1 = L.inner(1), s2 = L.inner(2);
  int64_t n = x.meta.shape[dim];
  dispatch_dtype(idx.meta.dtype, [&]<class I>() {
    if constexpr (std::is_same_v<I, int64_t> || std::is_same_v<I, int32_t>) {
      const I* ip = reinterpret_cast<const I*>(idx.storage.get());
      run_loop(
          L,
          [&](const std::array<int64_t, 3>& o, int64_t len) {
            for (int64_t i = 0; i < len; ++i) {
              int64_t k = ip[o[1] + i * s1];
              if (k < 0 || k >= n) bad_index(op, k, n);
              f(o[0] + i * s0 + k * x.strides[dim], o[2] + i * s2);
            }
          },
          serial ? INT64_MAX : kGrain);
    }
  });
}

// The rows index_select and index_add take along their dim, checked.
struct Rows {
  std::vector<int64_t> idx;
  Split p;
  int64_t m;
};
Rows index_rows(const Op& op, Inputs in) {
  Rows r{read_indices(in[1]), split_at(in[0].meta.shape, op.attrs.dim), 0};
  for (int64_t k : r.idx)
    if (k < 0 || k >= r.p.n) bad_index(op, k, r.p.n);
  r.m = static_cast<int64_t>(r.idx.size());
  return r;
}

// Cat, slice_assign and index_select only move bytes: one copy serves every element type.
CpuTensor index_bytes(const Op& op, Inputs in, const TensorMeta& out) {
  const OpAttrs& a = op.attrs;
  switch (op.code) {
    case OpCode::Cat: {
      CpuTensor o = empty(out);
      int64_t at = 0;
      for (auto& t : in) {
        int64_t len = t.meta.shape[a.dim];
        if (len > 0) copy_into(t, narrow_view(o, a.dim, at, len));
        at += len;
      }
      return o;
    }
    case OpCode::SliceAssign: {
      CpuTensor o = writable_copy(in[0], out);
      CpuTensor v = o;
      for (size_t i = 0; i < out.shape.rank(); ++i) {
        v.meta.shape[i] = in[1].meta.shape[i];
        if (v.meta.shape[i] > 0) v.offset += a.dims[i] * o.strides[i];
        if (v.meta.shape[i] > 1) v.strides[i] *= a.steps[i];  // as slice: huge steps of one
      }
      if (v.meta.shape.numel() > 0) copy_into(in[1], v);
      return o;
    }
    case OpCode::IndexSelect: {
      const Rows r = index_rows(op, in);
      const Split& p = r.p;
      const int64_t m = r.m;
      CpuTensor x = contiguous(in[0]);
      CpuTensor v = empty(out);
      int64_t es = size_of(out.dtype);
      if (out.shape.numel() == 0) return v;
      parallel_for(p.outer * m, std::max<int64_t>(1, kGrain / std::max<int64_t>(p.inner, 1)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t t = b; t < e; ++t) {
                       int64_t o = t / m, k = t % m;
                       std::memcpy(v.raw() + (t * p.inner) * es,
                                   x.raw() + ((o * p.n + r.idx[k]) * p.inner) * es, p.inner * es);
                     }
                   });
      return v;
    }
    default:
      throw Error("[" + std::string(name(op.code)) + "] not an index op");
  }
}

}  // namespace

template <class T>
CpuTensor index(const Op& op, Inputs in, const TensorMeta& out) {
  switch (op.code) {
    case OpCode::Gather: {
      CpuTensor o = empty(out);
      const T* xp = reinterpret_cast<const T*>(in[0].storage.get());
      T* op_ = reinterpret_cast<T*>(o.storage.get());
      for_each_index(
          op, in[0], in[1], o, [&](int64_t xo, int64_t oo) { op_[oo] = xp[xo]; }, false);
      return o;
    }
    case OpCode::Scatter: {
      CpuTensor o = writable_copy(in[0], out);
      CpuTensor ox = o;
      T* dp = reinterpret_cast<T*>(o.storage.get());
      const T* vp = reinterpret_cast<const T*>(in[2].storage.get());
      if (op.attrs.flag) {
        for_each_index(
            op, ox, in[1], in[2],
            [&](int64_t xo, int64_t vo) {
              if constexpr (std::is_same_v<T, bool>)
                dp[xo] = dp[xo] || vp[vo];
              else
                dp[xo] = static_cast<T>(wrap_add(compute_t<T>(dp[xo]), compute_t<T>(vp[vo])));
            },
            true);
      } else {
        for_each_index(
            op, ox, in[1], in[2], [&](int64_t xo, int64_t vo) { dp[xo] = vp[vo]; }, true);
      }
      return o;
    }
    case OpCode::IndexAdd: {
      const Rows r = index_rows(op, in);
      const Split& p = r.p;
      CpuTensor x = writable_copy(in[0], out);
      CpuTensor v = contiguous(in[2]);
      if (out.shape.numel() == 0) return x;
      T* xp = x.data<T>();
      const T* vp = v.data<T>();
      for (int64_t o = 0; o < p.outer; ++o)
        for (int64_t k = 0; k < r.m; ++k) {
          T* dst = xp + (o * p.n + r.idx[k]) * p.inner;
          const T* src = vp + (o * r.m + k) * p.inner;
          for (int64_t j = 0; j < p.inner; ++j) {
            if constexpr (std::is_same_v<T, bool>)
              dst[j] = dst[j] || src[j];
            else
              dst[j] = static_cast<T>(wrap_add(compute_t<T>(dst[j]), compute_t<T>(src[j])));
          }
        }
      return x;
    }
    default:
      return index_bytes(op, in, out);
  }
}

EMBER_CPU_DEFINE_KERNELS(Index, index)

}  // namespace ember::cpu
