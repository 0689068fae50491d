// Fused composites: softmax, log_softmax (along any dim) and logsumexp (over any dims) in one
// kernel each (ember/kernel/kernels/softmax.h). The input is seen as [outer, size, inner]
// in place when its strides allow, else copied (reduced dims moved last for logsumexp).
// Rows along the last dim take a workgroup each, holding up to 16 elements a thread in
// registers; along an inner dim, a thread per row walks it with coalesced loads.
// layer_norm and rms_norm are one kernel each too (ember/kernel/kernels/norm.h), over rows of
// the normalized dims (norm() below). On large problems the workgroup, vector path and layout
// are tuned once per shape bucket among valid alternatives (tune.h).
#include <algorithm>
#include <string>
#include <vector>

#include "ember/backend/apply.h"
#include "ember/backends/gpu/backend.h"
#include "ember/backends/gpu/tune.h"
#include "ember/kernel/kernels/norm.h"
#include "ember/kernel/kernels/softmax.h"
#include "ember/ops/decompose.h"

namespace ember::gpu {

namespace {

constexpr int64_t kMaxI32 = 0x7fffffff;

// The single stride of dims [b, e) of t seen as one dim, if they merge (size-1 dims skipped).
bool merged_stride(const GpuTensor& t, size_t b, size_t e, int64_t& stride) {
  stride = 1;
  e = std::min(e, t.meta.shape.rank());
  int64_t expect = 0;
  bool any = false;
  for (size_t i = e; i-- > b;) {
    int64_t n = t.meta.shape[i];
    if (n == 1) continue;
    if (!any) {
      stride = t.strides[i];
      expect = stride * n;
      any = true;
    } else {
      if (t.strides[i] != expect) return false;
      expect *= n;
    }
  }
  return true;
}

// t as [outer, size, inner] with dims [first, last] in the middle: strides, or false.
bool view3(const GpuTensor& t, size_t first, size_t last, int64_t st[3]) {
  return merged_stride(t, 0, first, st[0]) && merged_stride(t, first, last + 1, st[1]) &&
         merged_stride(t, last + 1, t.meta.shape.rank(), st[2]);
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

int log2_of(int64_t p) {
  int l = 0;
  while ((int64_t(1) << l) < p) ++l;
  return l;
}

// The heuristic launch of a row kernel (softmax family, norms) as a row_code: a thread per row
// unless `group`; else a workgroup per row holding the row in registers, as up to 8 16-byte
// vectors a thread where the rows allow vectors (`vec_ok`; rows up to 8 * 1024 vectors are read
// once), else as scalars; workgroups of at least `min_vec` / `min_scalar` threads.
int64_t row_heuristic(bool group, bool vec_ok, int64_t size, int64_t vw, int64_t min_vec,
                      int64_t min_scalar) {
  if (!group) return row_code(false, false, 256);
  if (vec_ok) {
    int64_t vecs = size / vw;
    int64_t wg = std::clamp<int64_t>(pow2_at_least((vecs + 3) / 4), min_vec, 1024);
    if ((vecs + wg - 1) / wg <= 8) return row_code(true, true, wg);
  }
  return row_code(true, false,
                  std::clamp<int64_t>(pow2_at_least((size + 7) / 8), min_scalar, 1024));
}

std::string row_key(const char* family, OpCode op, DType t, int64_t rows, int64_t size, int flags,
                    bool wide) {
  return std::string(family) + "." + std::string(name(op)) + "/" + std::string(name(t)) + "/r" +
         std::to_string(log2_bucket(rows)) + "/s" + std::to_string(log2_bucket(size)) + "/f" +
         std::to_string(flags) + (wide ? "/w" : "");
}

// layer_norm and rms_norm: x as [rows, size] with size the normalized dims, in place when
// those dims are dense and the leading ones merge into one row stride (0 for broadcast rows),
// else copied. Rows of a few elements take a thread each, longer ones a workgroup that holds
// the row in registers (16-byte vectors where the layout allows).
GpuTensor norm(const Op& op, Inputs in, const TensorMeta& out) {
  const bool layer = op.code == OpCode::LayerNorm;
  GpuTensor x = in[0];
  const Shape& s = x.meta.shape;
  const size_t rank = s.rank(), first = static_cast<size_t>(op.attrs.dim);
  int64_t rows = 1, size = 1;
  for (size_t d = 0; d < rank; ++d) (d < first ? rows : size) *= s[d];
  Runtime& d = runtime(x);
  GpuTensor o = empty(out, d);
  if (out.shape.numel() == 0) return o;
  // A few very long rows: the decomposition's split reductions use the whole GPU (reduce.cpp).
  if (rows * 4 <= int64_t(d.multiprocessors) && size >= (int64_t(1) << 20))
    return decompose<Ops>(op, in, out);
  int64_t row_stride = 0, elem_stride = 1;
  if (!merged_stride(x, first, rank, elem_stride) || elem_stride != 1 ||
      !merged_stride(x, 0, first, row_stride)) {
    x = copy_strided(x);
    row_stride = size;
  }
  GpuTensor gamma = contiguous(in[1]);
  GpuTensor beta = layer ? contiguous(in[2]) : GpuTensor{};
  DType t = x.meta.dtype;
  bool wide = rows * size > kMaxI32 || int64_t(x.storage->bytes / size_of(t)) > kMaxI32;
  bool group = size > 32 || rows < int64_t(d.multiprocessors) * 64;
  int64_t vw = kernel::norm_vector_width(t);
  bool vec_ok = size % vw == 0 && (rows == 1 || row_stride % vw == 0) && x.offset % vw == 0 &&
                gamma.offset % vw == 0 && (!layer || beta.offset % vw == 0);
  int64_t min_wg = std::max<int64_t>(32, d.subgroup);  // a whole subgroup at least
  int64_t heuristic = row_heuristic(group, vec_ok, size, vw, min_wg, min_wg);
  auto launch = [&](int64_t code) {
    RowConfig c = row_config(code, size, vw);
    uint64_t k = key(Kind::Norm, int(op.code), t, t, c.group ? log2_of(c.wg) : 0, c.group, wide,
                     int(c.items) | int(c.vec) << 5);
    const Loaded& l = kernel_for(d, k, [&] {
      kernel::NormSpec ns;
      ns.op = op.code;
      ns.dtype = t;
      ns.layout = c.group ? kernel::NormSpec::GroupPerRow : kernel::NormSpec::ThreadPerRow;
      ns.items = static_cast<int>(c.items);
      ns.wide_index = wide;
      ns.workgroup = static_cast<int>(c.wg);
      ns.vector = c.vec;
      return kernel::norm_kernel(ns);
    });
    Args a(l);
    a.ptr(x.ptr()).ptr(gamma.ptr());
    if (layer) a.ptr(beta.ptr());
    a.ptr(o.ptr()).i(rows).i(size).i(row_stride).f(op.attrs.scalar.f);
    a.launch(d, c.group ? std::min<int64_t>(rows, int64_t(d.multiprocessors) * (2048 / c.wg))
                        : groups_for(d, rows, 256));
  };
  int ls = log2_bucket(size);
  std::vector<int64_t> cands = row_candidates(heuristic, ls, vw, vec_ok, min_wg, ls <= 6);
  launch_tuned(d, row_key("norm", op.code, t, rows, size, int(vec_ok), wide), cands, rows * size,
               launch);
  return o;
}

}  // namespace

GpuTensor composite(const Op& op, Inputs in, const TensorMeta& out) {
  // One pass instead of the decomposition's five.
  if (op.code == OpCode::Gelu || op.code == OpCode::Silu) return elementwise(op, in, out);
  if (op.code == OpCode::LayerNorm || op.code == OpCode::RmsNorm) return norm(op, in, out);
  if (op.code != OpCode::Softmax && op.code != OpCode::LogSoftmax && op.code != OpCode::LogSumExp)
    not_implemented(op, in);
  GpuTensor x = in[0];
  const Shape& s = x.meta.shape;
  size_t rank = s.rank();
  // The dims reduced along: [first, last] after moving them together (logsumexp).
  size_t first = 0, last = 0;
  if (op.code != OpCode::LogSumExp) {
    first = last = static_cast<size_t>(op.attrs.dim);
  } else {
    std::vector<bool> red(rank, op.attrs.dims.empty());
    for (int64_t d : op.attrs.dims) red[d] = true;
    // The reduced dims of more than one element; a block of them stays in place.
    first = last = rank;
    for (size_t d = 0; d < rank; ++d)
      if (red[d] && s[d] != 1) {
        if (first == rank) first = d;
        last = d;
      }
    bool block = true;
    for (size_t d = first; d < rank && d <= last; ++d) block = block && (red[d] || s[d] == 1);
    if (!block) {  // kept dims first, reduced ones last: the output's order is unchanged
      Dims order;
      for (size_t d = 0; d < rank; ++d)
        if (!red[d]) order.push_back(d);
      first = order.size();
      for (size_t d = 0; d < rank; ++d)
        if (red[d]) order.push_back(d);
      GpuTensor p = x;
      for (size_t i = 0; i < rank; ++i) {
        p.strides[i] = x.strides[order[i]];
        p.meta.shape[i] = s[order[i]];
      }
      x = p;
      last = rank - 1;
    }
  }
  const Shape& xs = x.meta.shape;
  int64_t outer = 1, size = 1, inner = 1;
  for (size_t d = 0; d < xs.rank(); ++d) (d < first ? outer : d <= last ? size : inner) *= xs[d];
  // A few very long rows: a workgroup a row would leave the GPU idle, while the
  // decomposition's reductions split the rows across it (reduce.cpp).
  if (outer * inner * 4 <= int64_t(runtime(x).multiprocessors) && size >= (int64_t(1) << 20))
    return decompose<Ops>(op, in, out);
  int64_t st[3];
  if (!view3(x, first, last, st)) {
    x = copy_strided(x);
    view3(x, first, last, st);
  }
  Runtime& d = runtime(x);
  GpuTensor o = empty(out, d);
  int64_t rows = outer * inner;
  if (out.shape.numel() == 0) return o;
  DType t = x.meta.dtype;
  bool wide = xs.numel() > kMaxI32 || out.shape.numel() > kMaxI32 ||
              int64_t(x.storage->bytes / size_of(t)) > kMaxI32;
  bool group = size > 64 && (inner == 1 || rows < int64_t(d.multiprocessors) * 64);
  // Dense rows: 16-byte vectors held in registers.
  int64_t vw = kernel::softmax_vector_width(t);
  bool vec_ok = inner == 1 && st[1] == 1 && size % vw == 0 && (outer == 1 || st[0] % vw == 0) &&
                x.offset % vw == 0;
  int64_t heuristic = row_heuristic(group, vec_ok, size, vw, std::max<int64_t>(64, d.subgroup),
                                    std::max<int64_t>(128, d.subgroup));
  auto launch = [&](int64_t code) {
    RowConfig c = row_config(code, size, vw);
    uint64_t k = key(Kind::Softmax, int(op.code), t, t, c.group ? log2_of(c.wg) : 0, c.group, wide,
                     int(c.items) | int(c.vec) << 5);
    const Loaded& l = kernel_for(d, k, [&] {
      kernel::SoftmaxSpec ss;
      ss.op = op.code;
      ss.dtype = t;
      ss.layout = c.group ? kernel::SoftmaxSpec::GroupPerRow : kernel::SoftmaxSpec::ThreadPerRow;
      ss.items = static_cast<int>(c.items);
      ss.wide_index = wide;
      ss.workgroup = static_cast<int>(c.wg);
      ss.vector = c.vec;
      return kernel::softmax_kernel(ss);
    });
    Args a(l);
    a.ptr(x.ptr()).ptr(o.ptr()).i(outer).i(size).i(inner).i(st[0]).i(st[1]).i(st[2]);
    a.launch(d, c.group ? std::min<int64_t>(rows, int64_t(d.multiprocessors) * 32)
                        : groups_for(d, rows, 256));
  };
  // Along an inner dim a thread per row reads neighbouring elements; along the last dim it
  // can pay for short rows only.
  int ls = log2_bucket(size);
  std::vector<int64_t> cands =
      row_candidates(heuristic, ls, vw, vec_ok, vec_ok ? 64 : 128, inner > 1 || ls <= 8);
  launch_tuned(d,
               row_key("softmax", op.code, t, rows, size, int(vec_ok) | int(inner > 1) << 1, wide),
               cands, rows * size, launch);
  return o;
}

}  // namespace ember::gpu
