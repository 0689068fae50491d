// ONNX neural-network operators: MatMul, Gemm, Conv, ConvTranspose, pooling, the
// normalizations, LRN and the two losses. Convolution and pooling go to the op table's
// spatial ops; ONNX's asymmetric and automatic paddings become an explicit Pad first.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/core/checked.h"
#include "ember/onnx/ops/context.h"
#include "ember/tensor/pool_indices.h"

namespace ember::onnx::detail {

namespace {

template <Backend B>
std::vector<RValue<B>> matmul(Ctx<B>& c) {
  Tn<B> a = c.in(0), b = c.in(1);
  const bool va = a.rank() == 1, vb = b.rank() == 1;
  if (va) a = reshape(a, {1, a.shape()[0]});
  if (vb) b = reshape(b, {b.shape()[0], 1});
  Tn<B> y = a.matmul(b);
  Dims d = dims_of(y);
  if (va) d.erase(d.size() - 2);
  if (vb) d.erase(d.size() - 1);
  return one(reshape(y, d));
}

template <Backend B>
std::vector<RValue<B>> gemm(Ctx<B>& c) {
  Tn<B> a = c.in(0), b = c.in(1);
  if (a.rank() != 2 || b.rank() != 2) c.fail("A and B must be 2-d");
  if (c.attr_i("transA", 0)) a = a.mT();
  if (c.attr_i("transB", 0)) b = b.mT();
  const double alpha = c.attr_f("alpha", 1.0), beta = c.attr_f("beta", 1.0);
  Tn<B> y = a.matmul(b);
  if (alpha != 1.0) y = y * alpha;
  if (c.has(2) && beta != 0.0) {
    Tn<B> bias = c.in(2);
    y = y + (beta == 1.0 ? bias : bias * beta);
  }
  return one(y);
}

/// Spatial attributes of a conv or pool node for input x with `k` kernel sizes.
struct SpatialAttrs {
  Dims kernel, stride, dilation, pad_begin, pad_end;
  bool symmetric() const { return pad_begin == pad_end; }
};

template <Backend B>
SpatialAttrs spatial_attrs(const Ctx<B>& c, const Tn<B>& x, const Dims& kernel,
                           bool transpose = false) {
  const size_t s = kernel.size();
  SpatialAttrs a;
  a.kernel = kernel;
  auto get = [&](const char* n, int64_t def) {
    auto v = c.attr_ints(n);
    if (v.empty()) v.assign(s, def);
    if (v.size() != s) c.fail(std::string(n) + " needs " + std::to_string(s) + " entries");
    return Dims(v.begin(), v.end());
  };
  a.stride = get("strides", 1);
  a.dilation = get("dilations", 1);
  auto pads = c.attr_ints("pads");
  if (pads.empty()) pads.assign(2 * s, 0);
  if (pads.size() != 2 * s) c.fail("pads needs " + std::to_string(2 * s) + " entries");
  a.pad_begin = Dims(pads.begin(), pads.begin() + static_cast<long>(s));
  a.pad_end = Dims(pads.begin() + static_cast<long>(s), pads.end());
  const std::string autopad = c.attr_s("auto_pad", "NOTSET");
  if (autopad == "VALID") {
    a.pad_begin = a.pad_end = Dims(s, 0);
  } else if ((autopad == "SAME_UPPER" || autopad == "SAME_LOWER") && !transpose) {
    for (size_t i = 0; i < s; ++i) {
      const int64_t in = x.shape()[2 + i];
      const int64_t out = (in + a.stride[i] - 1) / a.stride[i];
      const int64_t ext = (a.kernel[i] - 1) * a.dilation[i] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * a.stride[i] + ext - in);
      const int64_t small = total / 2, big = total - small;
      a.pad_begin[i] = autopad == "SAME_UPPER" ? small : big;
      a.pad_end[i] = autopad == "SAME_UPPER" ? big : small;
    }
  } else if (autopad != "NOTSET" && !transpose) {
    c.fail("auto_pad \"" + autopad + "\" is not supported");
  }
  return a;
}

template <Backend B>
Tn<B> pad_spatial(const Tn<B>& x, const Dims& begin, const Dims& end, double value) {
  OpAttrs a;
  a.dims = Dims(static_cast<size_t>(2 * x.rank()), 0);
  for (size_t i = 0; i < begin.size(); ++i) {
    a.dims[2 * (2 + i)] = begin[i];
    a.dims[2 * (2 + i) + 1] = end[i];
  }
  a.dim = static_cast<int64_t>(PadMode::Constant);
  a.scalar = Scalar(value);
  return op<B>(OpCode::Pad, std::move(a), {x});
}

/// [C] -> [1, C, 1, ...] for broadcasting against x.
template <Backend B>
Tn<B> per_channel(const Tn<B>& v, const Tn<B>& x) {
  Dims d(static_cast<size_t>(x.rank()), 1);
  d[1] = v.shape().numel();
  return reshape(v, d);
}

/// The kernel's spatial size of a conv weight, checked against the input x.
template <Backend B>
Dims conv_kernel(const Ctx<B>& c, const Tn<B>& x, const Tn<B>& w) {
  if (x.rank() < 3 || x.rank() > 5) c.fail("input must have 1 to 3 spatial dims");
  if (w.rank() != x.rank())
    c.fail("weight " + w.shape().to_string() + " and input " + x.shape().to_string() +
           " differ in rank");
  const Dims wd = dims_of(w);
  return Dims(wd.begin() + 2, wd.end());
}

template <Backend B>
std::vector<RValue<B>> conv(Ctx<B>& c) {
  auto [x, a] = conv_window(c, c.in(0), c.in(1), 0.0);
  Tn<B> y = op<B>(OpCode::Conv, std::move(a), {x, c.in(1)});
  if (c.has(2)) y = y + per_channel(c.in(2), y);
  return one(y);
}

template <Backend B>
std::vector<RValue<B>> conv_transpose(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const Tn<B>& w = c.in(1);
  const Dims kernel = conv_kernel(c, x, w);
  const size_t ns = kernel.size();
  SpatialAttrs s = spatial_attrs(c, x, kernel, true);
  const int64_t groups = c.attr_i("group", 1);
  auto outpad = c.attr_ints("output_padding");
  if (outpad.empty()) outpad.assign(ns, 0);
  if (outpad.size() != ns)
    c.fail("output_padding has " + std::to_string(outpad.size()) + " entries for " +
           std::to_string(ns) + " spatial dims");
  auto out_shape = c.attr_ints("output_shape");
  const std::string autopad = c.attr_s("auto_pad", "NOTSET");
  // The full (unpadded) output size per dim, then what pads / output_shape cut from it.
  Dims whole(ns);
  for (size_t i = 0; i < ns; ++i)
    whole[i] = checked_add(
        checked_add(checked_mul(x.shape()[2 + i] - 1, s.stride[i], "[onnx] output size"),
                    checked_mul(kernel[i] - 1, s.dilation[i], "[onnx] output size"),
                    "[onnx] output size"),
        checked_add(1, outpad[i], "[onnx] output size"), "[onnx] output size");
  if (!out_shape.empty() || autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
    if (out_shape.size() > ns)
      out_shape.erase(out_shape.begin(), out_shape.end() - static_cast<long>(ns));
    for (size_t i = 0; i < ns; ++i) {
      const int64_t want = out_shape.empty() ? x.shape()[2 + i] * s.stride[i] : out_shape[i];
      const int64_t total = whole[i] - want;  // < 0: zeros added at the end
      const bool lower = autopad == "SAME_LOWER";
      s.pad_begin[i] = total < 0 ? 0 : lower ? total - total / 2 : total / 2;
      s.pad_end[i] = total - s.pad_begin[i];
    }
  }
  // Run with no padding and output_padding, then crop pads from the full result.
  OpAttrs a;
  a.window.stride = s.stride;
  a.window.dilation = s.dilation;
  a.window.groups = groups;
  a.window.padding = Dims(ns, 0);
  a.window.output_padding = Dims(ns, 0);
  Tn<B> y = op<B>(OpCode::ConvTranspose, std::move(a), {x, w});
  // output_padding adds zeros-fed positions at the end: pad the result where needed.
  Dims extra_end(ns, 0);
  bool any_extra = false;
  for (size_t i = 0; i < ns; ++i) {
    extra_end[i] = whole[i] - y.shape()[2 + i] + std::max<int64_t>(0, -s.pad_end[i]);
    any_extra |= extra_end[i] != 0;
  }
  if (any_extra) y = pad_spatial(y, Dims(ns, 0), extra_end, 0.0);
  for (size_t i = 0; i < ns; ++i)
    y = slice_axis(y, static_cast<int64_t>(2 + i), s.pad_begin[i], whole[i] - s.pad_end[i], 1);
  if (c.has(2)) y = y + per_channel(c.in(2), y);
  return one(y);
}

/// MaxPool's Indices output: flat positions in the whole input (n, c and the spatial
/// position, row-major; storage_order 1 is column-major over the spatial dims).
template <Backend B, int D>
std::vector<RValue<B>> pool_with_indices_d(const Ctx<B>& c, const Tn<B>& x, const SpatialAttrs& s) {
  PoolOptions o;
  o.stride = s.stride;
  o.padding = s.pad_begin;
  o.dilation = s.dilation;
  o.ceil_mode = c.attr_i("ceil_mode", 0) != 0;
  auto [y, idx] = max_pool_with_indices(Tensor<B, D>(x.handle()), s.kernel, o);
  const Dims xd = dims_of(x);
  int64_t plane = 1;
  for (size_t i = 2; i < xd.size(); ++i) plane *= xd[i];
  Tn<B> i(idx.handle());
  if (c.attr_i("storage_order", 0) != 0) {
    if (D != 4) c.fail("storage_order 1 needs 2 spatial dims");
    const int64_t w = xd[3], h = xd[2];
    Tn<B> r = i / scalar_of(i, static_cast<double>(w));
    Tn<B> col = i - r * scalar_of(i, static_cast<double>(w));
    i = col * scalar_of(i, static_cast<double>(h)) + r;
  }
  std::vector<int64_t> base(static_cast<size_t>(xd[0] * xd[1]));
  for (size_t k = 0; k < base.size(); ++k) base[k] = static_cast<int64_t>(k) * plane;
  Dims bd(xd.size(), 1);
  bd[0] = xd[0];
  bd[1] = xd[1];
  Tn<B> b = reshape(int_tensor<B>(base, x.device()), bd);
  return {RValue<B>::of(Tn<B>(y.handle())), RValue<B>::of(i + b)};
}

template <Backend B>
std::vector<RValue<B>> pool_with_indices(const Ctx<B>& c, const Tn<B>& x, const SpatialAttrs& s) {
  if (!s.symmetric()) c.fail("the Indices output needs symmetric pads");
  if (x.rank() == 3) return pool_with_indices_d<B, 3>(c, x, s);
  if (x.rank() == 4) return pool_with_indices_d<B, 4>(c, x, s);
  return pool_with_indices_d<B, 5>(c, x, s);
}

template <Backend B, int D>
Tn<B> unpool_d(const Tn<B>& x, const Tn<B>& plane_idx, const Dims& size) {
  return Tn<B>(
      max_unpool(Tensor<B, D>(x.handle()), Tensor<B, D, Int>(plane_idx.handle()), size).handle());
}

template <Backend B>
std::vector<RValue<B>> max_unpool_op(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  if (x.rank() < 3 || x.rank() > 5) c.fail("input must have 1 to 3 spatial dims");
  auto k = c.attr_ints("kernel_shape");
  SpatialAttrs s = spatial_attrs(c, x, Dims(k.begin(), k.end()));
  const Dims xd = dims_of(x);
  // Indices are positions in the pooled input's size; output_shape only adds zeros at the end.
  Dims size, more;
  for (size_t i = 0; i < k.size(); ++i)
    size.push_back((xd[2 + i] - 1) * s.stride[i] + k[i] - s.pad_begin[i] - s.pad_end[i]);
  if (c.has(2)) {
    auto os = c.ints(2);
    if (os.size() != k.size() + 2)
      c.fail("output_shape needs " + std::to_string(k.size() + 2) + " sizes");
    for (size_t i = 0; i < k.size(); ++i) {
      if (os[2 + i] < size[i]) c.fail("output_shape is smaller than the unpooled size");
      more.push_back(os[2 + i] - size[i]);
    }
  }
  int64_t plane = 1;
  for (int64_t d : size) plane *= d;
  Tn<B> idx = c.in(1).cast(DType::I64);
  Tn<B> local = op<B>(OpCode::Remainder, {idx, scalar_of(idx, static_cast<double>(plane))});
  Tn<B> y = x.rank() == 3   ? unpool_d<B, 3>(x, local, size)
            : x.rank() == 4 ? unpool_d<B, 4>(x, local, size)
                            : unpool_d<B, 5>(x, local, size);
  if (!more.empty()) y = pad_spatial(y, Dims(more.size(), 0), more, 0.0);
  return one(y);
}

template <Backend B, bool Max>
std::vector<RValue<B>> pool(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  if (x.rank() < 3 || x.rank() > 5) c.fail("input must have 1 to 3 spatial dims");
  auto k = c.attr_ints("kernel_shape");
  if (static_cast<int64_t>(k.size()) != x.rank() - 2)
    c.fail("kernel_shape needs " + std::to_string(x.rank() - 2) + " entries");
  if (!is_float(x.dtype())) {  // integer pooling: exact through f64 (max) or the mean's f64
    const DType t = x.dtype();
    std::vector<RValue<B>> args{RValue<B>::of(x.cast(DType::F64))};
    Ctx<B> inner = c.with_inputs(std::move(args));
    auto out = pool<B, Max>(inner);
    out[0].t = Max ? out[0].t.cast(t) : out[0].t.unary(OpCode::Floor).cast(t);
    return out;
  }
  SpatialAttrs s = spatial_attrs(c, x, Dims(k.begin(), k.end()));
  if (Max && c.wants(1)) return pool_with_indices(c, x, s);
  const size_t ns = k.size();
  OpAttrs a;
  a.window.kernel = s.kernel;
  a.window.stride = s.stride;
  a.window.dilation = s.dilation;
  a.window.ceil_mode = c.attr_i("ceil_mode", 0) != 0;
  const bool include_pad = c.attr_i("count_include_pad", 0) != 0;
  if (!Max) {
    for (int64_t d : s.dilation)
      if (d != 1) c.fail("dilations are not supported for AveragePool");
    a.window.dilation = {};
  }
  bool sym = s.symmetric();
  for (size_t i = 0; i < ns && sym; ++i) sym = s.pad_begin[i] * 2 <= s.kernel[i];
  if (sym) {
    a.window.padding = s.pad_begin;
    a.window.count_include_pad = include_pad;
    return one(op<B>(Max ? OpCode::MaxPool : OpCode::AvgPool, std::move(a), {x}));
  }
  a.window.padding = Dims(ns, 0);
  if (Max) {
    x = pad_spatial(x, s.pad_begin, s.pad_end, -std::numeric_limits<double>::infinity());
    return one(op<B>(OpCode::MaxPool, std::move(a), {x}));
  }
  a.window.count_include_pad = true;
  Tn<B> sum = op<B>(OpCode::AvgPool, a, {pad_spatial(x, s.pad_begin, s.pad_end, 0.0)});
  if (include_pad) return one(sum);
  Tn<B> ones = pad_spatial(x.ones_like(), s.pad_begin, s.pad_end, 0.0);
  Tn<B> count = op<B>(OpCode::AvgPool, std::move(a), {ones});
  return one(sum / count);
}

template <Backend B, bool Max>
std::vector<RValue<B>> global_pool(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  Dims axes;
  for (int64_t i = 2; i < x.rank(); ++i) axes.push_back(i);
  return one(reduce(Max ? OpCode::Max : OpCode::Mean, x, axes, true));
}

template <Backend B>
std::vector<RValue<B>> batch_norm(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const double eps = c.attr_f("epsilon", 1e-5), momentum = c.attr_f("momentum", 0.9);
  Tn<B> scale = per_channel(c.in(1), x), bias = per_channel(c.in(2), x);
  Tn<B> mean = c.in(3), var = c.in(4);
  const bool training = c.opset() >= 14 ? c.attr_i("training_mode", 0) != 0 : c.wants(1);
  if (!training) {
    Tn<B> y = (x - per_channel(mean, x)) / (per_channel(var, x) + eps).sqrt() * scale + bias;
    return one(y);
  }
  Dims axes;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != 1) axes.push_back(i);
  Tn<B> bm = reduce(OpCode::Mean, x, axes, true);
  Tn<B> bv = reduce(OpCode::Mean, (x - bm) * (x - bm), axes, true);
  Tn<B> y = (x - bm) / (bv + eps).sqrt() * scale + bias;
  Tn<B> flat_m = reshape(bm, {x.shape()[1]}), flat_v = reshape(bv, {x.shape()[1]});
  Tn<B> rm = mean * momentum + flat_m * (1.0 - momentum);
  Tn<B> rv = var * momentum + flat_v * (1.0 - momentum);
  return {RValue<B>::of(y), RValue<B>::of(rm), RValue<B>::of(rv)};
}

template <Backend B>
std::vector<RValue<B>> instance_norm(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const double eps = c.attr_f("epsilon", 1e-5);
  Dims axes;
  for (int64_t i = 2; i < x.rank(); ++i) axes.push_back(i);
  Tn<B> m = reduce(OpCode::Mean, x, axes, true);
  Tn<B> v = reduce(OpCode::Mean, (x - m) * (x - m), axes, true);
  return one((x - m) / (v + eps).sqrt() * per_channel(c.in(1), x) + per_channel(c.in(2), x));
}

template <Backend B>
std::vector<RValue<B>> layer_norm(Ctx<B>& c) {
  const Tn<B>& x0 = c.in(0);
  const int64_t axis = norm_axis(c, c.attr_i("axis", -1), x0.rank());
  const double eps = c.attr_f("epsilon", 1e-5);
  const bool f32 = c.attr_i("stash_type", 1) == 1 && x0.dtype() != DType::F64;
  Tn<B> x = f32 ? x0.cast(DType::F32) : x0;
  Dims axes;
  for (int64_t i = axis; i < x.rank(); ++i) axes.push_back(i);
  Tn<B> m = reduce(OpCode::Mean, x, axes, true);
  Tn<B> d = x - m;
  Tn<B> inv = (reduce(OpCode::Mean, d * d, axes, true) + eps).rsqrt();
  Tn<B> y = (d * inv).cast(x0.dtype()) * c.in(1);
  if (c.has(2)) y = y + c.in(2);
  return {RValue<B>::of(y), RValue<B>::of(m.cast(f32 ? DType::F32 : x0.dtype())),
          RValue<B>::of(inv.cast(f32 ? DType::F32 : x0.dtype()))};
}

template <Backend B>
std::vector<RValue<B>> group_norm(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t groups = c.attr_i("num_groups", 1);
  const double eps = c.attr_f("epsilon", 1e-5);
  const Dims d = dims_of(x);
  if (groups <= 0 || d[1] % groups != 0) c.fail("num_groups must divide the channels");
  Tn<B> g = reshape(x, {d[0], groups, x.shape().numel() / std::max<int64_t>(1, d[0] * groups)});
  Tn<B> m = reduce(OpCode::Mean, g, {2}, true);
  Tn<B> v = reduce(OpCode::Mean, (g - m) * (g - m), {2}, true);
  Tn<B> y = reshape((g - m) / (v + eps).sqrt(), d);
  Tn<B> scale = c.in(1), bias = c.in(2);
  if (scale.shape().numel() == groups && groups != d[1]) {  // opset 18: one per group
    const int64_t per = d[1] / groups;
    scale = reshape(expand(reshape(scale, {groups, 1}), {groups, per}), {d[1]});
    bias = reshape(expand(reshape(bias, {groups, 1}), {groups, per}), {d[1]});
  }
  return one(y * per_channel(scale, x) + per_channel(bias, x));
}

template <Backend B>
std::vector<RValue<B>> lrn(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t size = c.attr_i("size", 0);
  const double alpha = c.attr_f("alpha", 1e-4), beta = c.attr_f("beta", 0.75),
               bias = c.attr_f("bias", 1.0);
  if (size <= 0) c.fail("size must be > 0");
  const Dims d = dims_of(x);
  const int64_t n = d[0], ch = d[1], rest = x.shape().numel() / (n * ch);
  Tn<B> sq = reshape(x * x, {n, 1, ch, rest});
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  sq = pad_spatial(sq, {before, 0}, {after, 0}, 0.0);
  OpAttrs a;
  a.window.kernel = {size, 1};
  a.window.stride = {1, 1};
  a.window.padding = {0, 0};
  Tn<B> s = reshape(op<B>(OpCode::AvgPool, std::move(a), {sq}) * static_cast<double>(size), d);
  Tn<B> base = s * (alpha / static_cast<double>(size)) + bias;
  return one(x / op<B>(OpCode::Pow, {base, scalar_of(base, beta)}));
}

template <Backend B>
std::vector<RValue<B>> mvn(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  auto ax = c.attr_ints("axes", {0, 2, 3});
  Dims axes;
  for (int64_t a : ax) axes.push_back(norm_axis(c, a, x.rank()));
  Tn<B> m = reduce(OpCode::Mean, x, axes, true);
  Tn<B> v = reduce(OpCode::Mean, x * x, axes, true) - m * m;
  return one((x - m) / (v.sqrt() + 1e-9));
}

/// NegativeLogLikelihoodLoss on log-probabilities [N, C, d...] and targets [N, d...].
template <Backend B>
std::vector<RValue<B>> nll(const Ctx<B>& c, const Tn<B>& logp, const Tn<B>& target,
                           std::optional<Tn<B>> weight, const std::string& reduction,
                           std::optional<int64_t> ignore) {
  Tn<B> t = target.cast(DType::I64);
  Tn<B> valid = ignore ? op<B>(OpCode::NotEqual, {t, scalar_of(t, static_cast<double>(*ignore))})
                       : full<B>(dims_of(t), 1, DType::Bool, t.device());
  Tn<B> safe = where(valid, t, t.zeros_like());
  OpAttrs g;
  g.dim = 1;
  Tn<B> picked =
      reshape(op<B>(OpCode::Gather, std::move(g), {logp, unsqueeze(safe, 1)}), dims_of(t));
  Tn<B> w = weight ? reshape(op<B>(OpCode::IndexSelect,
                                   [] {
                                     OpAttrs a;
                                     a.dim = 0;
                                     return a;
                                   }(),
                                   {*weight, reshape(safe, {safe.shape().numel()})}),
                             dims_of(t))
                   : picked.ones_like();
  w = where(valid, w, w.zeros_like());
  Tn<B> loss = -picked * w;
  if (reduction == "none") return one(loss);
  if (reduction == "sum") return one(reduce(OpCode::Sum, loss, {}, false));
  if (reduction == "mean")
    return one(reduce(OpCode::Sum, loss, {}, false) / reduce(OpCode::Sum, w, {}, false));
  c.fail("reduction \"" + reduction + "\" is not none, sum or mean");
}

template <Backend B>
std::optional<int64_t> ignore_index(const Ctx<B>& c) {
  if (!c.has_attr("ignore_index")) return std::nullopt;
  return c.attr_i("ignore_index", 0);
}

template <Backend B>
std::vector<RValue<B>> nll_loss(Ctx<B>& c) {
  return nll(c, c.in(0), c.in(1), c.opt(2), c.attr_s("reduction", "mean"), ignore_index(c));
}

template <Backend B>
std::vector<RValue<B>> softmax_ce(Ctx<B>& c) {
  Tn<B> logp = c.in(0).with_dim(OpCode::LogSoftmax, 1);
  auto out = nll(c, logp, c.in(1), c.opt(2), c.attr_s("reduction", "mean"), ignore_index(c));
  out.push_back(RValue<B>::of(logp));
  return out;
}

}  // namespace

template <Backend B>
std::pair<Tn<B>, OpAttrs> conv_window(const Ctx<B>& c, Tn<B> x, const Tn<B>& w, double pad) {
  const Dims kernel = conv_kernel(c, x, w);
  SpatialAttrs s = spatial_attrs(c, x, kernel);
  OpAttrs a;
  a.window.stride = s.stride;
  a.window.dilation = s.dilation;
  a.window.groups = c.attr_i("group", 1);
  const Dims none(kernel.size(), 0);
  if (s.symmetric() && (pad == 0 || s.pad_begin == none)) {
    a.window.padding = s.pad_begin;
  } else {
    x = pad_spatial(x, s.pad_begin, s.pad_end, pad);
    a.window.padding = none;
  }
  return {x, a};
}
template std::pair<Tn<Dispatch>, OpAttrs> conv_window<Dispatch>(const Ctx<Dispatch>&, Tn<Dispatch>,
                                                                const Tn<Dispatch>&, double);
template std::pair<Tn<Autodiff<Dispatch>>, OpAttrs> conv_window<Autodiff<Dispatch>>(
    const Ctx<Autodiff<Dispatch>>&, Tn<Autodiff<Dispatch>>, const Tn<Autodiff<Dispatch>>&, double);

template <Backend B>
void register_nn_ops(OpRegistry<B>& r) {
  r["MatMul"] = matmul<B>;
  r["Gemm"] = gemm<B>;
  r["Conv"] = conv<B>;
  r["ConvTranspose"] = conv_transpose<B>;
  r["MaxPool"] = pool<B, true>;
  r["AveragePool"] = pool<B, false>;
  r["MaxUnpool"] = max_unpool_op<B>;
  r["GlobalAveragePool"] = global_pool<B, false>;
  r["GlobalMaxPool"] = global_pool<B, true>;
  r["BatchNormalization"] = batch_norm<B>;
  r["InstanceNormalization"] = instance_norm<B>;
  r["LayerNormalization"] = layer_norm<B>;
  r["GroupNormalization"] = group_norm<B>;
  r["LRN"] = lrn<B>;
  r["MeanVarianceNormalization"] = mvn<B>;
  r["NegativeLogLikelihoodLoss"] = nll_loss<B>;
  r["SoftmaxCrossEntropyLoss"] = softmax_ce<B>;
}

template void register_nn_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_nn_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
