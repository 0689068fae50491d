// Fusion<Cuda>: fused programs as one generated kernel each (kernel/kernels/fused.h), loaded
// once per signature and layout, with outputs written into inputs that only the program holds.
#include <algorithm>

#include "ember/backends/cuda/ops.h"
#include "ember/core/error.h"
#include "ember/fusion/fusion.h"
#include "ember/kernel/codegen/cuda.h"
#include "ember/kernel/kernels/elementwise.h"
#include "ember/kernel/kernels/fused.h"

namespace ember {

using fusion::detail::count;
using fusion::detail::Counter;

bool Cuda::can_fuse(const Op& op, std::span<const TensorMeta* const> in, const TensorMeta& out) {
  // More dims than the kernels take stay eager, so the op itself raises its error at once.
  if (out.shape.rank() > 8) return false;
  if (op.code == OpCode::Full) return true;
  if (in.empty()) return false;
  if (fusion::elementwise_composite(op.code)) return is_float(in[0]->dtype);
  return kernel::fused_step_supported(op.code, in[0]->dtype, out.dtype);
}

std::vector<CudaTensor> Cuda::run_fused(const fusion::Program& p, std::span<CudaTensor> in,
                                        Device dev) {
  using namespace cuda::detail;
  const Shape& s = p.shape;
  int64_t n = s.numel();
  std::vector<CudaTensor> outs;
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
      outs.push_back(empty(m, dev.index));
    }
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

  DeviceState& d = cuda::detail::device(dev.index);
  std::string key = p.signature();
  key += '|';
  key += L.key();
  const Loaded* l = d.find(key);
  if (l) {
    count(Counter::PlanHits);
  } else {
    kernel::Kernel k = kernel::fused_kernel(p, L);
    if (fusion::dumping()) fusion::dump(kernel::render_cuda(k));
    l = &d.load(key, k);
    count(Counter::PlansCompiled);
  }
  Args a(*l);
  for (const CudaTensor& t : in) a.ptr(t.ptr());
  for (const CudaTensor& t : outs) a.ptr(t.ptr());
  a.i(n);
  if (!L.dense) {
    for (int64_t x : c.shape) a.i(x);
    for (size_t j = 0; j < in.size(); ++j)
      for (int64_t x : c.strides[j]) a.i(x);
  }
  for (size_t k = 0; k < p.constants.size(); ++k) {
    const Scalar& v = p.constants[k];
    if (v.is_int)
      a.i(v.i);  // exact for 64-bit integers; converted for float parameters
    else
      a.f(v.f);
  }
  a.launch(d, L.dense ? groups_for(d, (n + w - 1) / w, 256) : groups_for(d, n, 256));
  count(Counter::KernelLaunches);
  return outs;
}

}  // namespace ember
