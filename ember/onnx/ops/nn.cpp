// ONNX neural-network operators: MatMul, Gemm, Conv, ConvTranspose, pooling, the
// normalizations, LRN and the two losses. Convolution and pooling go to the op table's
// spatial ops; ONNX's asymmetric and automatic paddings become an explicit Pad first.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/onnx/ops/context.h"
#include "ember/tensor/pool_indices.h"

namespace ember::onnx::detail {

namespace {

std::vector<RValue> one(Tn t) { return {RValue::of(std::move(t))}; }

std::vector<RValue> matmul(Ctx& c) {
  Tn a = c.in(0), b = c.in(1);
  const bool va = a.rank() == 1, vb = b.rank() == 1;
  if (va) a = reshape(a, {1, a.shape()[0]});
  if (vb) b = reshape(b, {b.shape()[0], 1});
  Tn y = a.matmul(b);
  Dims d = dims_of(y);
  if (va) d.erase(d.size() - 2);
  if (vb) d.erase(d.size() - 1);
  return one(reshape(y, d));
}

std::vector<RValue> gemm(Ctx& c) {
  Tn a = c.in(0), b = c.in(1);
  if (a.rank() != 2 || b.rank() != 2) c.fail("A and B must be 2-d");
  if (c.attr_i("transA", 0)) a = a.mT();
  if (c.attr_i("transB", 0)) b = b.mT();
  const double alpha = c.attr_f("alpha", 1.0), beta = c.attr_f("beta", 1.0);
  Tn y = a.matmul(b);
  if (alpha != 1.0) y = y * alpha;
  if (c.has(2) && beta != 0.0) {
    Tn bias = c.in(2);
    y = y + (beta == 1.0 ? bias : bias * beta);
  }
  return one(y);
}

/// Spatial attributes of a conv or pool node for input x with `k` kernel sizes.
struct SpatialAttrs {
  Dims kernel, stride, dilation, pad_begin, pad_end;
  bool symmetric() const { return pad_begin == pad_end; }
};

SpatialAttrs spatial_attrs(const Ctx& c, const Tn& x, const Dims& kernel, bool transpose = false) {
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

Tn pad_spatial(const Tn& x, const Dims& begin, const Dims& end, double value) {
  OpAttrs a;
  a.dims = Dims(static_cast<size_t>(2 * x.rank()), 0);
  for (size_t i = 0; i < begin.size(); ++i) {
    a.dims[2 * (2 + i)] = begin[i];
    a.dims[2 * (2 + i) + 1] = end[i];
  }
  a.dim = static_cast<int64_t>(PadMode::Constant);
  a.scalar = Scalar(value);
  return op(OpCode::Pad, std::move(a), {x});
}

std::vector<RValue> conv(Ctx& c) {
  Tn x = c.in(0);
  const Tn& w = c.in(1);
  if (x.rank() < 3 || x.rank() > 5) c.fail("input must have 1 to 3 spatial dims");
  const Dims wd = dims_of(w);
  Dims kernel(wd.begin() + 2, wd.end());
  SpatialAttrs s = spatial_attrs(c, x, kernel);
  OpAttrs a;
  a.window.stride = s.stride;
  a.window.dilation = s.dilation;
  a.window.groups = c.attr_i("group", 1);
  if (s.symmetric()) {
    a.window.padding = s.pad_begin;
  } else {
    x = pad_spatial(x, s.pad_begin, s.pad_end, 0.0);
    a.window.padding = Dims(kernel.size(), 0);
  }
  Tn y = op(OpCode::Conv, std::move(a), {x, w});
  if (c.has(2)) {
    Dims bd(static_cast<size_t>(y.rank()), 1);
    bd[1] = c.in(2).shape()[0];
    y = y + reshape(c.in(2), bd);
  }
  return one(y);
}

std::vector<RValue> conv_transpose(Ctx& c) {
  const Tn& x = c.in(0);
  const Tn& w = c.in(1);
  if (x.rank() < 3 || x.rank() > 5) c.fail("input must have 1 to 3 spatial dims");
  const Dims wd = dims_of(w);
  Dims kernel(wd.begin() + 2, wd.end());
  const size_t ns = kernel.size();
  SpatialAttrs s = spatial_attrs(c, x, kernel, true);
  const int64_t groups = c.attr_i("group", 1);
  auto outpad = c.attr_ints("output_padding");
  if (outpad.empty()) outpad.assign(ns, 0);
  auto out_shape = c.attr_ints("output_shape");
  const std::string autopad = c.attr_s("auto_pad", "NOTSET");
  // The full (unpadded) output size per dim, then what pads / output_shape cut from it.
  Dims full(ns);
  for (size_t i = 0; i < ns; ++i)
    full[i] = (x.shape()[2 + i] - 1) * s.stride[i] + (kernel[i] - 1) * s.dilation[i] + 1 + outpad[i];
  if (!out_shape.empty() || autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
    if (out_shape.size() > ns) out_shape.erase(out_shape.begin(), out_shape.end() - static_cast<long>(ns));
    for (size_t i = 0; i < ns; ++i) {
      const int64_t want = out_shape.empty() ? x.shape()[2 + i] * s.stride[i] : out_shape[i];
      const int64_t total = full[i] - want;  // < 0: zeros added at the end
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
  Tn y = op(OpCode::ConvTranspose, std::move(a), {x, w});
  // output_padding adds zeros-fed positions at the end: pad the result where needed.
  Dims extra_end(ns, 0);
  bool any_extra = false;
  for (size_t i = 0; i < ns; ++i) {
    extra_end[i] = full[i] - y.shape()[2 + i] + std::max<int64_t>(0, -s.pad_end[i]);
    any_extra |= extra_end[i] != 0;
  }
  if (any_extra) y = pad_spatial(y, Dims(ns, 0), extra_end, 0.0);
  for (size_t i = 0; i < ns; ++i)
    y = slice_axis(y, static_cast<int64_t>(2 + i), s.pad_begin[i], full[i] - s.pad_end[i], 1);
  if (c.has(2)) {
    Dims bd(static_cast<size_t>(y.rank()), 1);
    bd[1] = c.in(2).shape()[0];
    y = y + reshape(c.in(2), bd);
  }
  return one(y);
}

/// MaxPool's Indices output: flat positions in the whole input (n, c and the spatial
/// position, row-major; storage_order 1 is column-major over the spatial dims).
template <int D>
std::vector<RValue> pool_with_indices_d(const Ctx& c, const Tn& x, const SpatialAttrs& s) {
  PoolOptions o;
  o.stride = s.stride;
  o.padding = s.pad_begin;
  o.dilation = s.dilation;
  o.ceil_mode = c.attr_i("ceil_mode", 0) != 0;
  auto [y, idx] = max_pool_with_indices(Tensor<Dispatch, D>(x.handle()), s.kernel, o);
  const Dims xd = dims_of(x);
  int64_t plane = 1;
  for (size_t i = 2; i < xd.size(); ++i) plane *= xd[i];
  Tn i(idx.handle());
  if (c.attr_i("storage_order", 0) != 0) {
    if (D != 4) c.fail("storage_order 1 needs 2 spatial dims");
    const int64_t w = xd[3], h = xd[2];
    Tn r = i / scalar_of(i, static_cast<double>(w));
    Tn col = i - r * scalar_of(i, static_cast<double>(w));
    i = col * scalar_of(i, static_cast<double>(h)) + r;
  }
  std::vector<int64_t> base(static_cast<size_t>(xd[0] * xd[1]));
  for (size_t k = 0; k < base.size(); ++k) base[k] = static_cast<int64_t>(k) * plane;
  Dims bd(xd.size(), 1);
  bd[0] = xd[0];
  bd[1] = xd[1];
  Tn b = reshape(int_tensor(base, x.device()), bd);
  return {RValue::of(Tn(y.handle())), RValue::of(i + b)};
}

std::vector<RValue> pool_with_indices(const Ctx& c, const Tn& x, const SpatialAttrs& s) {
  if (!s.symmetric()) c.fail("the Indices output needs symmetric pads");
  if (x.rank() == 3) return pool_with_indices_d<3>(c, x, s);
  if (x.rank() == 4) return pool_with_indices_d<4>(c, x, s);
  return pool_with_indices_d<5>(c, x, s);
}

template <int D>
Tn unpool_d(const Tn& x, const Tn& plane_idx, const Dims& size) {
  return Tn(max_unpool(Tensor<Dispatch, D>(x.handle()), Tensor<Dispatch, D, Int>(plane_idx.handle()),
                       size)
                .handle());
}

std::vector<RValue> max_unpool_op(Ctx& c) {
  const Tn& x = c.in(0);
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
    if (os.size() != k.size() + 2) c.fail("output_shape needs " + std::to_string(k.size() + 2) + " sizes");
    for (size_t i = 0; i < k.size(); ++i) {
      if (os[2 + i] < size[i]) c.fail("output_shape is smaller than the unpooled size");
      more.push_back(os[2 + i] - size[i]);
    }
  }
  int64_t plane = 1;
  for (int64_t d : size) plane *= d;
  Tn idx = c.in(1).cast(DType::I64);
  Tn local = op(OpCode::Remainder, {idx, scalar_of(idx, static_cast<double>(plane))});
  Tn y = x.rank() == 3   ? unpool_d<3>(x, local, size)
         : x.rank() == 4 ? unpool_d<4>(x, local, size)
                         : unpool_d<5>(x, local, size);
  if (!more.empty()) y = pad_spatial(y, Dims(more.size(), 0), more, 0.0);
  return one(y);
}

template <bool Max>
std::vector<RValue> pool(Ctx& c) {
  Tn x = c.in(0);
  if (x.rank() < 3 || x.rank() > 5) c.fail("input must have 1 to 3 spatial dims");
  auto k = c.attr_ints("kernel_shape");
  if (static_cast<int64_t>(k.size()) != x.rank() - 2)
    c.fail("kernel_shape needs " + std::to_string(x.rank() - 2) + " entries");
  if (!is_float(x.dtype())) {  // integer pooling: exact through f64 (max) or the mean's f64
    const DType t = x.dtype();
    std::vector<RValue> args{RValue::of(x.cast(DType::F64))};
    Ctx inner = c.with_inputs(std::move(args));
    auto out = pool<Max>(inner);
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
    return one(op(Max ? OpCode::MaxPool : OpCode::AvgPool, std::move(a), {x}));
  }
  a.window.padding = Dims(ns, 0);
  if (Max) {
    x = pad_spatial(x, s.pad_begin, s.pad_end, -std::numeric_limits<double>::infinity());
    return one(op(OpCode::MaxPool, std::move(a), {x}));
  }
  a.window.count_include_pad = true;
  Tn sum = op(OpCode::AvgPool, a, {pad_spatial(x, s.pad_begin, s.pad_end, 0.0)});
  if (include_pad) return one(sum);
  Tn ones = pad_spatial(x.ones_like(), s.pad_begin, s.pad_end, 0.0);
  Tn count = op(OpCode::AvgPool, std::move(a), {ones});
  return one(sum / count);
}

template <bool Max>
std::vector<RValue> global_pool(Ctx& c) {
  const Tn& x = c.in(0);
  Dims axes;
  for (int64_t i = 2; i < x.rank(); ++i) axes.push_back(i);
  return one(reduce(Max ? OpCode::Max : OpCode::Mean, x, axes, true));
}

/// [C] -> [1, C, 1, ...] for broadcasting against x.
Tn per_channel(const Tn& v, const Tn& x) {
  Dims d(static_cast<size_t>(x.rank()), 1);
  d[1] = v.shape().numel();
  return reshape(v, d);
}

std::vector<RValue> batch_norm(Ctx& c) {
  const Tn& x = c.in(0);
  const double eps = c.attr_f("epsilon", 1e-5), momentum = c.attr_f("momentum", 0.9);
  Tn scale = per_channel(c.in(1), x), bias = per_channel(c.in(2), x);
  Tn mean = c.in(3), var = c.in(4);
  const bool training = c.opset() >= 14 ? c.attr_i("training_mode", 0) != 0 : c.wants(1);
  if (!training) {
    Tn y = (x - per_channel(mean, x)) / (per_channel(var, x) + eps).sqrt() * scale + bias;
    return one(y);
  }
  Dims axes;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != 1) axes.push_back(i);
  Tn bm = reduce(OpCode::Mean, x, axes, true);
  Tn bv = reduce(OpCode::Mean, (x - bm) * (x - bm), axes, true);
  Tn y = (x - bm) / (bv + eps).sqrt() * scale + bias;
  Tn flat_m = reshape(bm, {x.shape()[1]}), flat_v = reshape(bv, {x.shape()[1]});
  Tn rm = mean * momentum + flat_m * (1.0 - momentum);
  Tn rv = var * momentum + flat_v * (1.0 - momentum);
  return {RValue::of(y), RValue::of(rm), RValue::of(rv)};
}

std::vector<RValue> instance_norm(Ctx& c) {
  const Tn& x = c.in(0);
  const double eps = c.attr_f("epsilon", 1e-5);
  Dims axes;
  for (int64_t i = 2; i < x.rank(); ++i) axes.push_back(i);
  Tn m = reduce(OpCode::Mean, x, axes, true);
  Tn v = reduce(OpCode::Mean, (x - m) * (x - m), axes, true);
  return one((x - m) / (v + eps).sqrt() * per_channel(c.in(1), x) + per_channel(c.in(2), x));
}

std::vector<RValue> layer_norm(Ctx& c) {
  const Tn& x0 = c.in(0);
  const int64_t axis = norm_axis(c, c.attr_i("axis", -1), x0.rank());
  const double eps = c.attr_f("epsilon", 1e-5);
  const bool f32 = c.attr_i("stash_type", 1) == 1 && x0.dtype() != DType::F64;
  Tn x = f32 ? x0.cast(DType::F32) : x0;
  Dims axes;
  for (int64_t i = axis; i < x.rank(); ++i) axes.push_back(i);
  Tn m = reduce(OpCode::Mean, x, axes, true);
  Tn d = x - m;
  Tn inv = (reduce(OpCode::Mean, d * d, axes, true) + eps).rsqrt();
  Tn y = (d * inv).cast(x0.dtype()) * c.in(1);
  if (c.has(2)) y = y + c.in(2);
  return {RValue::of(y), RValue::of(m.cast(f32 ? DType::F32 : x0.dtype())),
          RValue::of(inv.cast(f32 ? DType::F32 : x0.dtype()))};
}

std::vector<RValue> group_norm(Ctx& c) {
  const Tn& x = c.in(0);
  const int64_t groups = c.attr_i("num_groups", 1);
  const double eps = c.attr_f("epsilon", 1e-5);
  const Dims d = dims_of(x);
  if (groups <= 0 || d[1] % groups != 0) c.fail("num_groups must divide the channels");
  Tn g = reshape(x, {d[0], groups, x.shape().numel() / std::max<int64_t>(1, d[0] * groups)});
  Tn m = reduce(OpCode::Mean, g, {2}, true);
  Tn v = reduce(OpCode::Mean, (g - m) * (g - m), {2}, true);
  Tn y = reshape((g - m) / (v + eps).sqrt(), d);
  Tn scale = c.in(1), bias = c.in(2);
  if (scale.shape().numel() == groups && groups != d[1]) {  // opset 18: one per group
    const int64_t per = d[1] / groups;
    scale = reshape(expand(reshape(scale, {groups, 1}), {groups, per}), {d[1]});
    bias = reshape(expand(reshape(bias, {groups, 1}), {groups, per}), {d[1]});
  }
  return one(y * per_channel(scale, x) + per_channel(bias, x));
}

std::vector<RValue> lrn(Ctx& c) {
  const Tn& x = c.in(0);
  const int64_t size = c.attr_i("size", 0);
  const double alpha = c.attr_f("alpha", 1e-4), beta = c.attr_f("beta", 0.75),
               bias = c.attr_f("bias", 1.0);
  if (size <= 0) c.fail("size must be > 0");
  const Dims d = dims_of(x);
  const int64_t n = d[0], ch = d[1], rest = x.shape().numel() / (n * ch);
  Tn sq = reshape(x * x, {n, 1, ch, rest});
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  sq = pad_spatial(sq, {before, 0}, {after, 0}, 0.0);
  OpAttrs a;
  a.window.kernel = {size, 1};
  a.window.stride = {1, 1};
  a.window.padding = {0, 0};
  Tn s = reshape(op(OpCode::AvgPool, std::move(a), {sq}) * static_cast<double>(size), d);
  Tn base = s * (alpha / static_cast<double>(size)) + bias;
  return one(x / op(OpCode::Pow, {base, scalar_of(base, beta)}));
}

std::vector<RValue> mvn(Ctx& c) {
  const Tn& x = c.in(0);
  auto ax = c.attr_ints("axes", {0, 2, 3});
  Dims axes;
  for (int64_t a : ax) axes.push_back(norm_axis(c, a, x.rank()));
  Tn m = reduce(OpCode::Mean, x, axes, true);
  Tn v = reduce(OpCode::Mean, x * x, axes, true) - m * m;
  return one((x - m) / (v.sqrt() + 1e-9));
}

/// NegativeLogLikelihoodLoss on log-probabilities [N, C, d...] and targets [N, d...].
std::vector<RValue> nll(const Ctx& c, const Tn& logp, const Tn& target, std::optional<Tn> weight,
                        const std::string& reduction, std::optional<int64_t> ignore) {
  Tn t = target.cast(DType::I64);
  Tn valid = ignore ? op(OpCode::NotEqual, {t, scalar_of(t, static_cast<double>(*ignore))})
                    : full(dims_of(t), 1, DType::Bool, t.device());
  Tn safe = where(valid, t, t.zeros_like());
  OpAttrs g;
  g.dim = 1;
  Tn picked = reshape(op(OpCode::Gather, std::move(g), {logp, unsqueeze(safe, 1)}), dims_of(t));
  Tn w = weight ? reshape(op(OpCode::IndexSelect, [] {
                                OpAttrs a;
                                a.dim = 0;
                                return a;
                              }(),
                              {*weight, reshape(safe, {safe.shape().numel()})}),
                          dims_of(t))
                : picked.ones_like();
  w = where(valid, w, w.zeros_like());
  Tn loss = -picked * w;
  if (reduction == "none") return one(loss);
  if (reduction == "sum") return one(reduce(OpCode::Sum, loss, {}, false));
  if (reduction == "mean")
    return one(reduce(OpCode::Sum, loss, {}, false) / reduce(OpCode::Sum, w, {}, false));
  c.fail("reduction \"" + reduction + "\" is not none, sum or mean");
}

std::optional<int64_t> ignore_index(const Ctx& c) {
  if (!c.has_attr("ignore_index")) return std::nullopt;
  return c.attr_i("ignore_index", 0);
}

std::vector<RValue> nll_loss(Ctx& c) {
  return nll(c, c.in(0), c.in(1), c.opt(2), c.attr_s("reduction", "mean"), ignore_index(c));
}

std::vector<RValue> softmax_ce(Ctx& c) {
  Tn logp = c.in(0).with_dim(OpCode::LogSoftmax, 1);
  auto out = nll(c, logp, c.in(1), c.opt(2), c.attr_s("reduction", "mean"), ignore_index(c));
  out.push_back(RValue::of(logp));
  return out;
}

}  // namespace

std::vector<RValue> conv_op(Ctx c) { return conv(c); }

void register_nn_ops(OpRegistry& r) {
  r["MatMul"] = matmul;
  r["Gemm"] = gemm;
  r["Conv"] = conv;
  r["ConvTranspose"] = conv_transpose;
  r["MaxPool"] = pool<true>;
  r["AveragePool"] = pool<false>;
  r["MaxUnpool"] = max_unpool_op;
  r["GlobalAveragePool"] = global_pool<false>;
  r["GlobalMaxPool"] = global_pool<true>;
  r["BatchNormalization"] = batch_norm;
  r["InstanceNormalization"] = instance_norm;
  r["LayerNormalization"] = layer_norm;
  r["GroupNormalization"] = group_norm;
  r["LRN"] = lrn;
  r["MeanVarianceNormalization"] = mvn;
  r["NegativeLogLikelihoodLoss"] = nll_loss;
  r["SoftmaxCrossEntropyLoss"] = softmax_ce;
}

}  // namespace ember::onnx::detail
