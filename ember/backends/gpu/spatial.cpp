// The spatial family on [N, C, *spatial] tensors: pooling and its backward ops, interpolate
// (+ backward, atomic adds into an f32 accumulator for halves), unfold and fold from the kernel
// layer (spatial.h, interpolate.h), and conv, conv_transpose and conv_weight_grad through the
// runtime's vendor library (vendor_conv: cuDNN on CUDA) where it takes the case, else composed from
// Unfold/Fold and the runtime's GEMM (matmul.cpp), batched over groups and images; conv takes the
// direct kernel where a group has few input channels.
#include "ember/kernel/kernels/spatial.h"
#include "ember/backends/gpu/ops.h"
#include "ember/core/error.h"
#include "ember/kernel/kernels/interpolate.h"

namespace ember::gpu {

namespace {

constexpr int64_t kMaxI32 = 0x7fffffff;

Dims spatial_of(const Shape& s) {
  return Dims(std::span<const int64_t>(s.dims().data() + 2, s.rank() - 2));
}

// Whether some element count or offset of `t` needs 64-bit indices.
bool needs_wide(const GpuTensor& t) {
  int64_t reach = 0;
  for (size_t d = 0; d < t.meta.shape.rank(); ++d)
    reach += (std::max<int64_t>(t.meta.shape[d], 1) - 1) * std::abs(t.strides[d]);
  return t.meta.shape.numel() > kMaxI32 || reach > kMaxI32;
}
bool needs_wide(std::initializer_list<const GpuTensor*> ts, int64_t n = 0) {
  bool w = n > kMaxI32;
  for (const GpuTensor* t : ts) w = w || needs_wide(*t);
  return w;
}

// The geometry parameters of spatial.h: in*, out*, then (with a window) its four lists.
void geometry(Args& a, const Dims& in, const Dims& out, const Window* w) {
  for (int64_t v : in) a.i(v);
  for (int64_t v : out) a.i(v);
  if (!w) return;
  for (const Dims* l : {&w->kernel, &w->stride, &w->padding, &w->dilation})
    for (int64_t v : *l) a.i(v);
}
void strides(Args& a, const GpuTensor& t) {
  for (int64_t s : t.strides) a.i(s);
}

// The window positions per dim of `w` over `in` (floor mode: unfold, fold, conv).
Dims blocks(const Window& w, const Dims& in) {
  Dims o(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    o[i] = (in[i] + 2 * w.padding[i] - w.dilation[i] * (w.kernel[i] - 1) - 1) / w.stride[i] + 1;
  return o;
}

// A view of `t`'s storage with this shape and these strides (in elements, from t's offset).
GpuTensor view_of(const GpuTensor& t, Shape s, Dims st) {
  GpuTensor v = t;
  v.meta.shape = std::move(s);
  v.strides = std::move(st);
  return v;
}

// Unfold of x into `cols` (any layout of [N, C * K, L] given by out_strides).
void unfold_into(const GpuTensor& x, const GpuTensor& cols, const Dims& out_strides,
                 const Window& w, const Dims& out) {
  const Shape& xs = x.meta.shape;
  int r = static_cast<int>(xs.rank()) - 2;
  int64_t k = Shape(w.kernel).numel(), l = Shape(out).numel();
  int64_t n = xs[0] * xs[1] * k * l;
  if (n == 0) return;
  int64_t reach = 0;
  Dims cd{xs[0], xs[1] * k, l};
  for (int i = 0; i < 3; ++i) reach += (std::max<int64_t>(cd[i], 1) - 1) * out_strides[i];
  bool wide = needs_wide({&x}, std::max(n, reach));
  DType t = x.meta.dtype;
  Runtime& d = runtime(x);
  const Loaded& ld =
      kernel_for(d, key(Kind::Spatial, int(OpCode::Unfold), t, t, r, false, wide), [&] {
        kernel::UnfoldSpec s{t, r};
        s.wide_index = wide;
        return kernel::unfold_kernel(s);
      });
  Args a(ld);
  a.ptr(x.ptr()).ptr(cols.ptr()).i(n).i(xs[1]);
  geometry(a, spatial_of(xs), out, &w);
  strides(a, x);
  for (int64_t s : out_strides) a.i(s);
  a.launch(d, groups_for(d, n, 256));
}

// Fold of the columns `cols` ([N, C * K, L], any strides) into a new dense [N, C, *in].
GpuTensor fold(const GpuTensor& cols, const TensorMeta& out, const Window& w, const Dims& pos) {
  GpuTensor o = empty(out, runtime(cols));
  int64_t n = out.shape.numel();
  if (n == 0) return o;
  int r = static_cast<int>(out.shape.rank()) - 2;
  bool wide = needs_wide({&cols, &o});
  DType t = out.dtype;
  Runtime& d = runtime(cols);
  const Loaded& ld =
      kernel_for(d, key(Kind::Spatial, int(OpCode::Fold), t, t, r, false, wide), [&] {
        kernel::UnfoldSpec s{t, r};
        s.fold = true;
        s.wide_index = wide;
        return kernel::unfold_kernel(s);
      });
  Args a(ld);
  a.ptr(cols.ptr()).ptr(o.ptr()).i(n).i(out.shape[1]);
  geometry(a, spatial_of(out.shape), pos, &w);
  strides(a, cols);
  a.launch(d, groups_for(d, n, 256));
  return o;
}

GpuTensor pool(const Op& op, Inputs in, const TensorMeta& out) {
  GpuTensor o = empty(out, runtime(in[0]));
  int64_t n = out.shape.numel();
  if (n == 0) return o;
  OpCode c = op.code;
  const Window& w = op.attrs.window;
  bool adaptive = c == OpCode::AdaptiveAvgPool || c == OpCode::AdaptiveAvgPoolBackward;
  bool backward = c == OpCode::MaxPoolBackward || c == OpCode::AvgPoolBackward ||
                  c == OpCode::AdaptiveAvgPoolBackward;
  const GpuTensor& g = in[c == OpCode::MaxPoolBackward ? 1 : 0];
  // in: the image the window slides over; pos: the window positions (the forward op's output)
  Dims sin = backward ? spatial_of(out.shape) : spatial_of(in[0].meta.shape);
  Dims pos = backward ? spatial_of(g.meta.shape) : spatial_of(out.shape);
  if (c == OpCode::MaxPoolBackward) sin = spatial_of(in[0].meta.shape);
  int r = static_cast<int>(sin.size());
  DType t = out.dtype;
  bool pad = (c == OpCode::AvgPool || c == OpCode::AvgPoolBackward) && w.count_include_pad;
  std::initializer_list<const GpuTensor*> ts = {&in[0], &in[in.size() - 1], &o};
  bool wide = needs_wide(ts);
  Runtime& d = runtime(o);
  const Loaded& l = kernel_for(d, key(Kind::Spatial, int(c), t, t, r, pad, wide), [&] {
    kernel::PoolSpec s{c, t, r};
    s.count_include_pad = pad;
    s.wide_index = wide;
    return kernel::pool_kernel(s);
  });
  Args a(l);
  for (GpuTensor& x : in) a.ptr(x.ptr());
  a.ptr(o.ptr()).i(n).i(out.shape[1]);
  geometry(a, sin, pos, adaptive ? nullptr : &w);
  for (GpuTensor& x : in) strides(a, x);
  a.launch(d, groups_for(d, n, 256));
  return o;
}

GpuTensor interpolate(const Op& op, Inputs in, const TensorMeta& out) {
  bool backward = op.code == OpCode::InterpolateBackward;
  DType t = out.dtype, acc = backward ? kernel::interpolate_accumulator(t) : t;
  const GpuTensor& x = in[0];
  GpuTensor o = empty({out.shape, acc}, runtime(x));
  Runtime& d = runtime(x);
  int64_t n = backward ? x.meta.shape.numel() : out.shape.numel();
  if (backward && out.shape.numel() > 0) zero(o, size_t(out.shape.numel()) * size_of(acc));
  if (n > 0) {
    Dims sin = spatial_of(backward ? out.shape : x.meta.shape);
    Dims pos = spatial_of(backward ? x.meta.shape : out.shape);
    int r = static_cast<int>(sin.size());
    bool wide = needs_wide({&x, &o});
    int mode = int(op.attrs.interp) | (op.attrs.flag ? 4 : 0);
    const Loaded& l =
        kernel_for(d, key(Kind::Spatial, int(op.code), t, t, r, false, wide, mode), [&] {
          kernel::InterpolateSpec s{t, op.attrs.interp, r, op.attrs.flag, backward};
          s.wide_index = wide;
          return kernel::interpolate_kernel(s);
        });
    Args a(l);
    a.ptr(x.ptr()).ptr(o.ptr()).i(n).i(x.meta.shape[1]);
    geometry(a, sin, pos, nullptr);
    strides(a, x);
    a.launch(d, groups_for(d, n, 256));
  }
  if (acc == t) return o;
  return cast(std::span<GpuTensor>(&o, 1), out);
}

// One GEMM (batched over the leading dims) through the backend's matmul: a [.., m, k] x
// b [.., k, n] into a new dense [.., m, n] of `out_shape`.
GpuTensor gemm(GpuTensor a, GpuTensor b, const Shape& out_shape) {
  GpuTensor ab[2] = {std::move(a), std::move(b)};
  return matmul(Op{OpCode::Matmul, {}}, std::span<GpuTensor>(ab, 2),
                TensorMeta{out_shape, ab[0].meta.dtype});
}

// A direct conv pays where a group's input channels times taps are few (depthwise, RGB input):
// a GEMM with an inner size that small idles the tensor cores.
bool use_direct(int64_t cg, int64_t k) { return cg * k <= 32; }

GpuTensor conv_direct(const Op& op, const GpuTensor& x, const GpuTensor& wt,
                      const TensorMeta& out) {
  GpuTensor o = empty(out, runtime(x));
  int64_t n = out.shape.numel();
  if (n == 0) return o;
  int r = static_cast<int>(out.shape.rank()) - 2;
  DType t = out.dtype;
  bool wide = needs_wide({&x, &wt, &o});
  Runtime& d = runtime(x);
  const Loaded& l = kernel_for(d, key(Kind::Spatial, int(OpCode::Conv), t, t, r, true, wide), [&] {
    kernel::ConvSpec s{t, r};
    s.wide_index = wide;
    return kernel::conv_direct_kernel(s);
  });
  const Window& w = op.attrs.window;
  Args a(l);
  a.ptr(x.ptr()).ptr(wt.ptr()).ptr(o.ptr()).i(n);
  a.i(x.meta.shape[1]).i(out.shape[1]).i(w.groups);
  geometry(a, spatial_of(x.meta.shape), spatial_of(out.shape), &w);
  strides(a, x);
  strides(a, wt);
  a.launch(d, groups_for(d, n, 256));
  return o;
}

GpuTensor conv(const Op& op, Inputs in, const TensorMeta& out) {
  const Window& w = op.attrs.window;
  const GpuTensor& x0 = in[0];
  Runtime& dev = runtime(x0);
  const Shape& xs = x0.meta.shape;
  int64_t g = w.groups, nb = xs[0], c_in = xs[1], c_out = out.shape[1];
  int64_t cg = c_in / g, cog = c_out / g, k = Shape(w.kernel).numel();
  Dims pos = spatial_of(out.shape);
  int64_t l = Shape(pos).numel();
  if (out.shape.numel() == 0) return empty(out, dev);
  if (use_direct(cg, k)) return conv_direct(op, x0, in[1], out);
  GpuTensor wt = contiguous(in[1]);
  if (dev.has_vendor_conv()) {
    GpuTensor y = empty(out, dev);
    if (dev.vendor_conv(op, contiguous(x0), wt, y)) return y;
  }
  // w[grp] [cog, cg * K], the same for every image (batch stride 0)
  GpuTensor a = view_of(wt, Shape{1, g, cog, cg * k}, Dims{0, cog * cg * k, cg * k, 1});
  bool one = true;  // 1x1, stride 1, no padding: the columns are x itself
  for (size_t i = 0; i < w.kernel.size(); ++i)
    one = one && w.kernel[i] == 1 && w.stride[i] == 1 && w.padding[i] == 0;
  GpuTensor cols;
  if (one) {
    cols = contiguous(x0);
  } else {
    cols = empty({Shape{nb, c_in * k, l}, out.dtype}, dev);
    unfold_into(x0, cols, contiguous_strides(cols.meta.shape), w, pos);
  }
  GpuTensor b = view_of(cols, Shape{nb, g, cg * k, l}, Dims{c_in * k * l, cg * k * l, l, 1});
  GpuTensor y = gemm(a, b, Shape{nb, g, cog, l});
  y.meta.shape = out.shape;
  y.strides = contiguous_strides(out.shape);
  return y;
}

GpuTensor conv_transpose(const Op& op, Inputs in, const TensorMeta& out) {
  const Window& w = op.attrs.window;
  GpuTensor x = contiguous(in[0]);
  GpuTensor wt = contiguous(in[1]);
  Runtime& dev = runtime(x);
  const Shape& xs = x.meta.shape;
  int64_t g = w.groups, nb = xs[0], c_in = xs[1], c_out = out.shape[1];
  int64_t cg = c_in / g, cog = c_out / g, k = Shape(w.kernel).numel();
  Dims lx_dims = spatial_of(xs);
  int64_t lx = Shape(lx_dims).numel();
  if (out.shape.numel() == 0) return empty(out, dev);
  if (dev.has_vendor_conv()) {  // backward data where output_padding maps onto it
    GpuTensor y = empty(out, dev);
    if (dev.vendor_conv(op, x, wt, y)) return y;
  }
  // w[grp]^T [cog * K, cg] (column-major view of the row-major [cg, cog * K] block)
  GpuTensor a = view_of(wt, Shape{1, g, cog * k, cg}, Dims{0, cg * cog * k, 1, cog * k});
  GpuTensor b = view_of(x, Shape{nb, g, cg, lx}, Dims{c_in * lx, cg * lx, lx, 1});
  GpuTensor cols = gemm(a, b, Shape{nb, g, cog * k, lx});
  cols = view_of(cols, Shape{nb, c_out * k, lx}, Dims{c_out * k * lx, lx, 1});
  return fold(cols, out, w, lx_dims);
}

GpuTensor conv_weight_grad(const Op& op, Inputs in, const TensorMeta& out) {
  const Window& w = op.attrs.window;
  const GpuTensor& x = in[0];
  GpuTensor gy = contiguous(in[1]);
  Runtime& dev = runtime(x);
  const Shape& xs = x.meta.shape;
  int64_t g = w.groups, nb = xs[0], c_in = xs[1], c_out = out.shape[0];
  int64_t cg = c_in / g, cog = c_out / g, k = Shape(w.kernel).numel();
  Dims pos = spatial_of(gy.meta.shape);
  int64_t l = Shape(pos).numel(), nl = nb * l;
  if (out.shape.numel() == 0) return empty(out, dev);
  if (dev.has_vendor_conv()) {
    GpuTensor dw = empty(out, dev);
    if (dev.vendor_conv(op, contiguous(x), gy, dw)) return dw;
  }
  // Columns laid out [C_in * K, N, L] and gy as [C_out, N, L]: one GEMM per group over N * L.
  GpuTensor cols = empty({Shape{c_in * k, nb, l}, out.dtype}, dev);
  unfold_into(x, cols, Dims{l, nl, 1}, w, pos);
  GpuTensor gt = gy;
  if (nb > 1) gt = copy_strided(view_of(gy, Shape{c_out, nb, l}, Dims{l, c_out * l, 1}));
  GpuTensor a = view_of(gt, Shape{g, cog, nl}, Dims{cog * nl, nl, 1});
  GpuTensor b = view_of(cols, Shape{g, nl, cg * k}, Dims{cg * k * nl, 1, nl});
  GpuTensor dw = gemm(a, b, Shape{g, cog, cg * k});
  dw.meta.shape = out.shape;
  dw.strides = contiguous_strides(out.shape);
  return dw;
}

}  // namespace

GpuTensor spatial(const Op& op, Inputs in, const TensorMeta& out) {
  if (!is_float(out.dtype)) not_implemented(op, in, std::string(name(out.dtype)));
  switch (op.code) {
    case OpCode::Conv:
      return conv(op, in, out);
    case OpCode::ConvTranspose:
      return conv_transpose(op, in, out);
    case OpCode::ConvWeightGrad:
      return conv_weight_grad(op, in, out);
    case OpCode::Unfold: {
      GpuTensor o = empty(out, runtime(in[0]));
      unfold_into(in[0], o, contiguous_strides(out.shape), op.attrs.window,
                  blocks(op.attrs.window, spatial_of(in[0].meta.shape)));
      return o;
    }
    case OpCode::Fold:
      return fold(in[0], out, op.attrs.window, blocks(op.attrs.window, spatial_of(out.shape)));
    case OpCode::Interpolate:
    case OpCode::InterpolateBackward:
      return interpolate(op, in, out);
    case OpCode::MaxPool:
    case OpCode::MaxPoolBackward:
    case OpCode::AvgPool:
    case OpCode::AvgPoolBackward:
    case OpCode::AdaptiveAvgPool:
    case OpCode::AdaptiveAvgPoolBackward:
      return pool(op, in, out);
    default:
      not_implemented(op, in);
  }
}

}  // namespace ember::gpu
