// Fusion on a GPU runtime: fused programs as one generated kernel each (kernel/kernels/fused.h),
// loaded once per signature and layout, with outputs written into inputs that only the program
// holds. A program ending in a sum, max or min computes its steps as the reduction reads them.
#include <algorithm>

#include "ember/backends/gpu/ops.h"
#include "ember/core/error.h"
#include "ember/fusion/fusion.h"
#include "ember/kernel/kernels/elementwise.h"
#include "ember/kernel/kernels/fused.h"

namespace ember::gpu {

using fusion::detail::count;
using fusion::detail::Counter;

namespace {

// Whether a fused reduction of `s` over `dims` (empty: all) takes a workgroup per result: the
// innermost dim that is not 1 is reduced, and rows are long enough to share.
bool per_workgroup(const Shape& s, const Dims& dims, int64_t size) {
  size_t inner = s.rank();
  while (inner > 0 && s[inner - 1] == 1) --inner;
  if (inner == 0 || size < 32) return false;
  return dims.empty() || std::find(dims.begin(), dims.end(), int64_t(inner - 1)) != dims.end();
}

}  // namespace

bool can_fuse(const Op& op, std::span<const TensorMeta* const> in, const TensorMeta& out) {
  // More dims than the kernels take stay eager, so the op itself raises its error at once.
  if (out.shape.rank() > 8) return false;
  if (op.code == OpCode::Full) return true;
  if (in.empty()) return false;
  if (info(op.code).family == OpFamily::Reduce) {
    if (in.size() != 1 || !fusion::reduction_fusible(op, *in[0]) || in[0]->shape.rank() > 8)
      return false;
    const Shape& s = in[0]->shape;
    int64_t n = s.numel(), results = out.shape.numel();
    if (n == 0) return false;
    int64_t size = n / results;
    if (per_workgroup(s, op.attrs.dims, size))  // few results of long rows: the split reduction
      return !(size >= 4096 && results < 1024);
    return size <= 128 || results >= 16384;  // a thread a result: short rows or many of them
  }
  if (fusion::elementwise_composite(op.code)) return is_float(in[0]->dtype);
  return kernel::fused_step_supported(op.code, in[0]->dtype, out.dtype);
}

namespace {

// The kernel of `p` for layout L: loaded, or generated, compiled and loaded.
const Loaded& fused_loaded(Runtime& d, const fusion::Program& p, const kernel::FusedLayout& L) {
  std::string key = p.signature();
  key += '|';
  key += L.key();
  if (const Loaded* l = d.find(key)) {
    count(Counter::PlanHits);
    return *l;
  }
  kernel::Kernel k = kernel::fused_kernel(p, L);
  if (fusion::dumping()) fusion::dump(d.render(k));
  count(Counter::PlansCompiled);
  return d.load(key, k);
}

void constant_args(Args& a, const fusion::Program& p) {
  for (const Scalar& v : p.constants) {
    if (v.is_int)
      a.i(v.i);  // exact for 64-bit integers; converted for float parameters
    else
      a.f(v.f);
  }
}

// A program ending in a reduction (fused.h): the elements as [kept dims, reduced dims], each
// part merged on its own; a workgroup per result when the innermost dim is reduced.
void run_reduction(const fusion::Program& p, std::span<GpuTensor> in,
                   std::span<const GpuTensor> outs, const GpuTensor& result, Runtime& d) {
  const Shape& s = p.shape;
  const size_t rank = s.rank();
  std::vector<char> red(rank, p.reduction->op.attrs.dims.empty());
  for (int64_t d : p.reduction->op.attrs.dims) red[size_t(d)] = 1;
  // Operands: the inputs' broadcast strides, then (with outputs) the outputs' dense strides.
  std::vector<Dims> st;
  for (const GpuTensor& t : in) st.push_back(broadcast_strides(t, s));
  if (!outs.empty()) st.push_back(contiguous_strides(s));
  auto part = [&](bool reduced) {
    Dims shape;
    std::vector<Dims> strides(st.size());
    for (size_t d = 0; d < rank; ++d) {
      if (bool(red[d]) != reduced) continue;
      shape.push_back(s[d]);
      for (size_t j = 0; j < st.size(); ++j) strides[j].push_back(st[j][d]);
    }
    std::vector<const Dims*> sp;
    for (const Dims& x : strides) sp.push_back(&x);
    return collapse(Shape(shape), std::span<const Dims* const>(sp.data(), sp.size()));
  };
  Collapsed k = part(false), r = part(true);
  int64_t results = k.numel, size = r.numel;
  kernel::FusedLayout L;
  L.kept = static_cast<int>(k.shape.size());
  L.reduced = static_cast<int>(r.shape.size());
  if (L.kept + L.reduced > 8)
    throw DeviceError("[fusion] more than 8 dims after merging: " + s.to_string());
  int64_t reach = 0;
  for (size_t j = 0; j < st.size(); ++j) {
    int64_t rj = 0;
    for (size_t d = 0; d < k.shape.size(); ++d) rj += (k.shape[d] - 1) * std::abs(k.strides[j][d]);
    for (size_t d = 0; d < r.shape.size(); ++d) rj += (r.shape[d] - 1) * std::abs(r.strides[j][d]);
    reach = std::max(reach, rj);
  }
  L.wide_index = s.numel() > 0x7fffffff || reach > 0x7fffffff;
  L.per_workgroup = per_workgroup(s, p.reduction->op.attrs.dims, size);
  size_t args = in.size() + outs.size() + 3 + size_t(L.kept + L.reduced) * (1 + st.size()) +
                p.constants.size();
  if (args > 160) throw ValueError("[fusion] a program of " + std::to_string(args) + " arguments");

  const Loaded& l = fused_loaded(d, p, L);
  Args a(l);
  for (const GpuTensor& t : in) a.ptr(t.ptr());
  for (const GpuTensor& t : outs) a.ptr(t.ptr());
  a.ptr(result.ptr()).i(results).i(size);
  for (int64_t x : k.shape) a.i(x);
  for (int64_t x : r.shape) a.i(x);
  for (size_t j = 0; j < st.size(); ++j) {
    for (int64_t x : k.strides[j]) a.i(x);
    for (int64_t x : r.strides[j]) a.i(x);
  }
  constant_args(a, p);
  a.launch(d, L.per_workgroup ? std::min<int64_t>(results, int64_t(d.multiprocessors) * 16)
                              : groups_for(d, results, 256));
  count(Counter::KernelLaunches);
}

}  // namespace

std::vector<GpuTensor> run_fused(const fusion::Program& p, std::span<GpuTensor> in, Runtime& d) {
  const Shape& s = p.shape;
  int64_t n = s.numel();
  std::vector<GpuTensor> outs;
  std::vector<char> claimed(in.size(), 0);
  int w = 8;
  for (size_t o = 0; o < p.outputs.size(); ++o) {
    TensorMeta m{s, p.steps[p.outputs[o]].dtype};
    w = std::min(w, kernel::vector_width(m.dtype));
    size_t j = 0;
    while (j < in.size() && (claimed[j] || !reusable(in[j], m))) ++j;
    if (j < in.size()) {
      claimed[j] = 1;
      outs.push_back(in[j]);  // a copy: the kernel still reads it, element for element
      count(Counter::BuffersReused);
    } else {
      outs.push_back(empty(m, d));
    }
  }
  if (p.reduction) {
    GpuTensor result = empty(p.reduction->out, d);
    if (n > 0) run_reduction(p, in, outs, result, d);
    outs.push_back(result);
    return outs;
  }
  if (n == 0) return outs;

  std::vector<Dims> st(in.size());
  std::vector<const Dims*> sp(in.size());
  for (size_t j = 0; j < in.size(); ++j) {
    st[j] = broadcast_strides(in[j], s);
    sp[j] = &st[j];
  }
  Collapsed c = collapse(s, std::span<const Dims* const>(sp.data(), sp.size()));
  kernel::FusedLayout L;
  L.wide_index = c.wide;
  L.dense = c.shape.size() == 1;
  for (size_t j = 0; j < in.size(); ++j)
    if (c.strides[j][0] != 0) w = std::min(w, kernel::vector_width(in[j].meta.dtype));
  for (size_t j = 0; j < in.size() && L.dense; ++j) {
    if (c.strides[j][0] == 0) {
      L.scalar_inputs |= 1u << j;
      continue;
    }
    L.dense = c.strides[j][0] == 1 && in[j].offset % w == 0;
  }
  if (L.dense) {
    L.width = w;
  } else {
    L.scalar_inputs = 0;
    L.rank = static_cast<int>(c.shape.size());
    if (L.rank > 8) throw DeviceError("[fusion] more than 8 dims after merging: " + s.to_string());
  }
  size_t args = in.size() + outs.size() + 1 + p.constants.size() +
                (L.dense ? 0 : size_t(L.rank) * (1 + in.size()));
  if (args > 160) throw ValueError("[fusion] a program of " + std::to_string(args) + " arguments");

  Args a(fused_loaded(d, p, L));
  for (const GpuTensor& t : in) a.ptr(t.ptr());
  for (const GpuTensor& t : outs) a.ptr(t.ptr());
  a.i(n);
  if (!L.dense) {
    for (int64_t x : c.shape) a.i(x);
    for (size_t j = 0; j < in.size(); ++j)
      for (int64_t x : c.strides[j]) a.i(x);
  }
  constant_args(a, p);
  a.launch(d, L.dense ? groups_for(d, (n + w - 1) / w, 256) : groups_for(d, n, 256));
  count(Counter::KernelLaunches);
  return outs;
}

}  // namespace ember::gpu
