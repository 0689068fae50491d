// ONNX shape and movement operators: Reshape, Transpose, Flatten, (Un)Squeeze, Concat, Split,
// Slice, Expand, Tile, Pad, Shape, Size, Constant(OfShape), Range, EyeLike, Trilu,
// Depth/SpaceToDepth. Shape arguments are read on the host: they decide output shapes.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ember/core/checked.h"
#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

namespace {

int64_t numel_of(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n = checked_mul(n, x, "[onnx] shape size");
  return n;
}

template <Backend B>
std::vector<RValue<B>> reshape_op(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  std::vector<int64_t> want = c.opset() >= 5 ? c.ints(1) : c.attr_ints("shape");
  const bool allowzero = c.attr_i("allowzero", 0) != 0;
  Dims out;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t d = want[i];
    if (d == 0 && !allowzero) {
      if (i >= static_cast<size_t>(x.rank())) c.fail("a 0 in shape copies a dim the input lacks");
      d = x.shape()[i];
    }
    if (d == -1) {
      if (infer >= 0) c.fail("shape has more than one -1");
      infer = static_cast<int64_t>(i);
      out.push_back(1);
      continue;
    }
    if (d < 0) c.fail("shape has a negative dim " + std::to_string(d));
    known = checked_mul(known, d, "[onnx] target shape size");
    out.push_back(d);
  }
  const int64_t n = x.shape().numel();
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      c.fail("cannot reshape " + x.shape().to_string() + " to " + Shape(out).to_string() +
             " with a -1");
    out[static_cast<size_t>(infer)] = n / known;
  }
  if (numel_of(out) != n)
    c.fail("cannot reshape " + x.shape().to_string() + " (" + std::to_string(n) + " elements) to " +
           Shape(out).to_string());
  return one(reshape(x, out));
}

template <Backend B>
std::vector<RValue<B>> transpose(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  const int64_t r = x.rank();
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != r)
    c.fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  Dims p;
  for (int64_t a : perm) p.push_back(norm_axis(c, a, r));
  return one(permute(x, p));
}

template <Backend B>
std::vector<RValue<B>> flatten(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t r = x.rank();
  int64_t axis = c.attr_i("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) c.fail("axis " + std::to_string(axis) + " out of range");
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= x.shape()[static_cast<size_t>(i)];
  return one(reshape(x, {a, b}));
}

template <Backend B>
std::vector<int64_t> axes_arg(const Ctx<B>& c, int since) {
  if (c.opset() >= since) return c.has(1) ? c.ints(1) : std::vector<int64_t>{};
  return c.attr_ints("axes");
}

template <Backend B>
std::vector<RValue<B>> squeeze(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  auto axes = axes_arg(c, 13);
  const int64_t r = x.rank();
  std::vector<bool> drop(static_cast<size_t>(r), false);
  if (axes.empty()) {
    for (int64_t i = 0; i < r; ++i)
      drop[static_cast<size_t>(i)] = x.shape()[static_cast<size_t>(i)] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t k = norm_axis(c, a, r);
      if (x.shape()[static_cast<size_t>(k)] != 1)
        c.fail("axis " + std::to_string(a) + " of " + x.shape().to_string() + " is not 1");
      drop[static_cast<size_t>(k)] = true;
    }
  }
  Dims out;
  for (int64_t i = 0; i < r; ++i)
    if (!drop[static_cast<size_t>(i)]) out.push_back(x.shape()[static_cast<size_t>(i)]);
  return one(reshape(x, out));
}

template <Backend B>
std::vector<RValue<B>> unsqueeze_op(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  auto axes = axes_arg(c, 13);
  const int64_t r = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> added(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    int64_t k = norm_axis(c, a, r);
    if (added[static_cast<size_t>(k)]) c.fail("axes repeat " + std::to_string(a));
    added[static_cast<size_t>(k)] = true;
  }
  Dims out;
  size_t j = 0;
  for (int64_t i = 0; i < r; ++i) out.push_back(added[static_cast<size_t>(i)] ? 1 : x.shape()[j++]);
  return one(reshape(x, out));
}

template <Backend B>
std::vector<RValue<B>> concat(Ctx<B>& c) {
  std::vector<Tn<B>> parts;
  for (size_t k = 0; k < c.num_inputs(); ++k)
    if (c.has(k)) parts.push_back(c.in(k));
  if (parts.empty()) c.fail("needs at least one input");
  const int64_t axis = norm_axis(c, c.attr_i("axis", 0), parts[0].rank());
  // Zero-size parts with another rank are allowed by some exporters; drop empty ones.
  std::vector<Tn<B>> keep;
  for (const Tn<B>& p : parts)
    if (p.shape().numel() > 0 || parts.size() == 1) keep.push_back(p);
  if (keep.empty()) keep.push_back(parts[0]);
  if (keep.size() < parts.size() && keep.size() == 1 && keep[0].shape().numel() == 0) {
    // all empty: concatenated sizes along the axis
    Dims d = dims_of(parts[0]);
    int64_t n = 0;
    for (const Tn<B>& p : parts) n += p.shape()[static_cast<size_t>(axis)];
    d[static_cast<size_t>(axis)] = n;
    return one(full<B>(d, 0, parts[0].dtype(), parts[0].device()));
  }
  return one(cat<B>(keep, axis));
}

template <Backend B>
std::vector<RValue<B>> split(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t axis = norm_axis(c, c.attr_i("axis", 0), x.rank());
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  if (c.opset() >= 13 && c.has(1))
    sizes = c.ints(1);
  else if (c.opset() < 13)
    sizes = c.attr_ints("split");
  const int64_t outs = static_cast<int64_t>(c.num_outputs());
  if (sizes.empty()) {
    int64_t parts = c.has_attr("num_outputs") ? c.attr_i("num_outputs", outs) : outs;
    if (parts <= 0) c.fail("no outputs to split into");
    const int64_t each = (n + parts - 1) / parts;  // the last part may be smaller (opset 18)
    if (!c.has_attr("num_outputs") && n % parts != 0)
      c.fail("axis size " + std::to_string(n) + " does not split into " + std::to_string(parts) +
             " equal parts");
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(each, n - i * each));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.fail("split sizes must be >= 0");
    total += s;
  }
  if (total != n)
    c.fail("split sizes add up to " + std::to_string(total) + ", the axis has " +
           std::to_string(n));
  std::vector<RValue<B>> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(RValue<B>::of(slice_axis(x, axis, at, at + s, 1)));
    at += s;
  }
  return out;
}

template <Backend B>
std::vector<RValue<B>> slice(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  const int64_t r = x.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  } else {
    starts = c.ints(1);
    ends = c.ints(2);
    if (c.has(3)) axes = c.ints(3);
    if (c.has(4)) steps = c.ints(4);
  }
  if (starts.size() != ends.size()) c.fail("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = norm_axis(c, axes[i], r);
    if (steps[i] == 0) c.fail("a step is 0");
    const int64_t n = x.shape()[static_cast<size_t>(axis)];
    auto clampi = [](int64_t v, int64_t big) {  // INT64 extremes stand for "to the end"
      return std::clamp<int64_t>(v, -big - 1, big + 1);
    };
    x = slice_axis(x, axis, clampi(starts[i], n), clampi(ends[i], n), steps[i]);
  }
  return one(x);
}

template <Backend B>
std::vector<RValue<B>> expand_op(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  auto want = c.ints(1);
  Dims w(want.begin(), want.end());
  return one(expand(reshape(x, dims_of(x)), broadcast_dims(dims_of(x), w)));
}

template <Backend B>
std::vector<RValue<B>> tile(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  auto reps = c.ints(1);
  if (static_cast<int64_t>(reps.size()) != x.rank())
    c.fail("repeats has " + std::to_string(reps.size()) + " entries for rank " +
           std::to_string(x.rank()));
  // [d0, d1, ...] -> [1, d0, 1, d1, ...] expanded to [r0, d0, r1, d1, ...] -> [r0 d0, ...].
  Dims with_ones, expanded, out;
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] < 0) c.fail("repeats must be >= 0");
    const int64_t d = x.shape()[i];
    with_ones.push_back(1);
    with_ones.push_back(d);
    expanded.push_back(reps[i]);
    expanded.push_back(d);
    out.push_back(checked_mul(reps[i], d, "[onnx] output dim"));
  }
  if (reps.empty()) return one(x);
  return one(reshape(expand(reshape(x, with_ones), expanded), out));
}

template <Backend B>
std::vector<RValue<B>> shape_op(Ctx<B>& c) {
  const RValue<B>& v = c.value(0);
  if (v.kind != Value::Kind::Tensor) c.fail("input must be a tensor");
  const Dims d = dims_of(v.t);
  const int64_t r = static_cast<int64_t>(d.size());
  int64_t start = c.attr_i("start", 0), end = c.attr_i("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<int64_t> out;
  for (int64_t i = start; i < end; ++i) out.push_back(d[static_cast<size_t>(i)]);
  return one(int_tensor<B>(out, c.device()));
}

template <Backend B>
std::vector<RValue<B>> size_op(Ctx<B>& c) {
  return one(full<B>({}, static_cast<double>(c.in(0).shape().numel()), DType::I64, c.device()));
}

template <Backend B>
std::vector<RValue<B>> constant_op(Ctx<B>& c) {
  if (const TensorData* t = c.attr_tensor("value")) return one(constant<B>(*t, c.device()));
  if (c.has_attr("value_float"))
    return one(full<B>({}, c.attr_f("value_float", 0), DType::F32, c.device()));
  if (c.has_attr("value_int"))
    return one(full<B>({}, static_cast<double>(c.attr_i("value_int", 0)), DType::I64, c.device()));
  if (c.has_attr("value_floats")) {
    auto v = c.attr_floats("value_floats");
    std::vector<float> f(v.begin(), v.end());
    return one(
        constant<B>(TensorData::from<float>(f, Shape{static_cast<int64_t>(f.size())}), c.device()));
  }
  if (c.has_attr("value_ints")) return one(int_tensor<B>(c.attr_ints("value_ints"), c.device()));
  c.fail("no supported value attribute (value, value_float(s), value_int(s))");
}

template <Backend B>
std::vector<RValue<B>> constant_of_shape(Ctx<B>& c) {
  auto shape = c.ints(0);
  Dims d(shape.begin(), shape.end());
  for (int64_t x : d)
    if (x < 0) c.fail("shape has a negative dim");
  if (const TensorData* t = c.attr_tensor("value")) {
    if (t->numel() != 1) c.fail("value must hold one element");
    Tn<B> v = constant<B>(*t, c.device());
    return one(expand(reshape(v, Dims(d.size(), 1)), d));
  }
  return one(full<B>(d, 0.0, DType::F32, c.device()));
}

template <Backend B>
std::vector<RValue<B>> range(Ctx<B>& c) {
  const Tn<B>& s = c.in(0);
  const DType t = s.dtype();
  auto scalar = [&](size_t k) {
    auto v = c.floats(k);
    if (v.size() != 1) c.fail("input " + std::to_string(k) + " must hold one value");
    return v[0];
  };
  const double start = scalar(0), limit = scalar(1), delta = scalar(2);
  if (delta == 0) c.fail("delta is 0");
  if (!std::isfinite(start) || !std::isfinite(delta) || std::isnan(limit))
    c.fail("start, limit and delta must be finite");
  const double count = std::max(0.0, std::ceil((limit - start) / delta));
  if (!(count <= 1e15)) c.fail("the range has too many elements");
  if (!is_float(t) && (std::abs(start) > 9e18 || std::abs(delta) > 9e18))
    c.fail("start or delta is outside int64");
  OpAttrs a;
  a.shape = {static_cast<int64_t>(count)};
  check_size(a.shape, t);
  if (is_float(t)) {
    a.scalar = Scalar(start);
    a.scalar2 = Scalar(delta);
  } else {
    a.scalar = Scalar(static_cast<int64_t>(start));
    a.scalar2 = Scalar(static_cast<int64_t>(delta));
  }
  a.dtype = t;
  return one(Tn<B>(
      apply<B>(Op{OpCode::Arange, std::move(a)}, std::span<typename B::Handle>(), c.device())));
}

template <Backend B>
std::vector<RValue<B>> eye_like(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  if (x.rank() != 2) c.fail("input must be 2-d");
  const DType t = c.attr_dtype("dtype", x.dtype());
  const int64_t rows = x.shape()[0], cols = x.shape()[1], k = c.attr_i("k", 0);
  std::vector<int64_t> r(static_cast<size_t>(rows)), q(static_cast<size_t>(cols));
  std::iota(r.begin(), r.end(), 0);
  std::iota(q.begin(), q.end(), -k);
  Tn<B> rr = reshape(int_tensor<B>(r, c.device()), {rows, 1});
  Tn<B> qq = reshape(int_tensor<B>(q, c.device()), {1, cols});
  return one(rr.eq(qq).cast(t));
}

template <Backend B>
std::vector<RValue<B>> trilu(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  if (x.rank() < 2) c.fail("input must be at least 2-d");
  const int64_t k = c.has(1) ? c.ints(1)[0] : 0;
  const bool upper = c.attr_i("upper", 1) != 0;
  const int64_t rows = x.shape()[static_cast<size_t>(x.rank() - 2)],
                cols = x.shape()[static_cast<size_t>(x.rank() - 1)];
  std::vector<int64_t> r(static_cast<size_t>(rows)), q(static_cast<size_t>(cols));
  std::iota(r.begin(), r.end(), 0);
  std::iota(q.begin(), q.end(), 0);
  Tn<B> rr = reshape(int_tensor<B>(r, c.device()), {rows, 1}) +
             scalar_of(int_tensor<B>({0}, c.device()), static_cast<double>(k));
  Tn<B> qq = reshape(int_tensor<B>(q, c.device()), {1, cols});
  Tn<B> keep = upper ? qq.ge(rr) : rr.ge(qq);  // upper: j - i >= k; lower: j - i <= k
  return one(where(keep, x, x.zeros_like()));
}

template <Backend B>
std::vector<RValue<B>> depth_to_space(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  if (x.rank() != 4) c.fail("input must be [N, C, H, W]");
  const int64_t b = c.attr_i("blocksize", 0);
  const Dims d = dims_of(x);
  const int64_t n = d[0], ch = d[1], h = d[2], w = d[3];
  if (b <= 0 || ch % (b * b) != 0) c.fail("blocksize must divide the channels into b*b groups");
  const int64_t oc = ch / (b * b);
  Tn<B> y;
  if (c.attr_s("mode", "DCR") == "DCR") {
    y = permute(reshape(x, {n, b, b, oc, h, w}), {0, 3, 4, 1, 5, 2});
  } else {
    y = permute(reshape(x, {n, oc, b, b, h, w}), {0, 1, 4, 2, 5, 3});
  }
  return one(reshape(y, {n, oc, h * b, w * b}));
}

template <Backend B>
std::vector<RValue<B>> space_to_depth(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  if (x.rank() != 4) c.fail("input must be [N, C, H, W]");
  const int64_t b = c.attr_i("blocksize", 0);
  const Dims d = dims_of(x);
  const int64_t n = d[0], ch = d[1], h = d[2], w = d[3];
  if (b <= 0 || h % b != 0 || w % b != 0) c.fail("blocksize must divide H and W");
  Tn<B> y = permute(reshape(x, {n, ch, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
  return one(reshape(y, {n, ch * b * b, h / b, w / b}));
}

template <Backend B>
std::vector<RValue<B>> pad(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t r = x.rank();
  std::vector<int64_t> pads;
  double value = 0;
  if (c.opset() < 11) {
    pads = c.attr_ints("pads");
    value = c.attr_f("value", 0.0);
  } else {
    pads = c.ints(1);
    if (c.has(2)) {
      auto v = c.floats(2);
      if (!v.empty()) value = v[0];
    }
  }
  std::vector<int64_t> axes;
  if (c.opset() >= 18 && c.has(3)) {
    for (int64_t a : c.ints(3)) axes.push_back(norm_axis(c, a, r));
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    c.fail("pads has " + std::to_string(pads.size()) + " entries for " +
           std::to_string(axes.size()) + " axes");
  const std::string mode = c.attr_s("mode", "constant");
  OpAttrs a;
  a.dims = Dims(static_cast<size_t>(2 * r), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    a.dims[static_cast<size_t>(2 * axes[i])] = pads[i];
    a.dims[static_cast<size_t>(2 * axes[i] + 1)] = pads[i + axes.size()];
  }
  // The padded sizes, checked here: pads come from the file and may sum past int64.
  for (int64_t d = 0; d < r; ++d) {
    const int64_t n = x.shape()[static_cast<size_t>(d)], lo = a.dims[static_cast<size_t>(2 * d)],
                  hi = a.dims[static_cast<size_t>(2 * d + 1)];
    if (lo < -n || hi < -n)
      c.fail("pads crop more than dim " + std::to_string(d) + " (" + std::to_string(n) + ") holds");
    checked_add(checked_add(n, lo, "[onnx] padded size"), hi, "[onnx] padded size");
  }
  if (mode == "constant")
    a.dim = static_cast<int64_t>(PadMode::Constant);
  else if (mode == "reflect")
    a.dim = static_cast<int64_t>(PadMode::Reflect);
  else if (mode == "edge")
    a.dim = static_cast<int64_t>(PadMode::Replicate);
  else if (mode == "wrap")
    a.dim = static_cast<int64_t>(PadMode::Circular);
  else
    c.fail("mode \"" + mode + "\" is not one of constant, reflect, edge, wrap");
  if (!is_float(x.dtype()) && !(std::abs(value) < 9e18))
    c.fail("constant value " + std::to_string(value) + " does not fit an integer");
  a.scalar = is_float(x.dtype()) ? Scalar(value) : Scalar(static_cast<int64_t>(value));
  return one(op<B>(OpCode::Pad, std::move(a), {x}));
}

template <Backend B>
std::vector<RValue<B>> dropout(Ctx<B>& c) {
  // Inference: the identity (the mask all true). Training mode with a ratio runs Bernoulli.
  const Tn<B>& x = c.in(0);
  bool training = false;
  if (c.opset() >= 12 && c.has(2)) training = c.ints(2)[0] != 0;
  double ratio = c.opset() >= 12 ? (c.has(1) ? c.floats(1)[0] : 0.5) : c.attr_f("ratio", 0.5);
  if (!training || ratio == 0) {
    std::vector<RValue<B>> out{RValue<B>::of(x)};
    if (c.wants(1)) out.push_back(RValue<B>::of(full<B>(dims_of(x), 1, DType::Bool, c.device())));
    return out;
  }
  OpAttrs a;
  a.shape = dims_of(x);
  a.scalar = Scalar(1.0 - ratio);
  a.dtype = DType::Bool;
  a.seed = static_cast<uint64_t>(c.attr_i("seed", 0));
  Tn<B> mask = Tn<B>(apply<B>(Op{OpCode::RandomBernoulli, std::move(a)},
                              std::span<typename B::Handle>(), c.device()));
  Tn<B> y = where(mask, x / (1.0 - ratio), x.zeros_like());
  return {RValue<B>::of(y), RValue<B>::of(mask)};
}

}  // namespace

template <Backend B>
void register_shape_ops(OpRegistry<B>& r) {
  r["Reshape"] = reshape_op<B>;
  r["Transpose"] = transpose<B>;
  r["Flatten"] = flatten<B>;
  r["Squeeze"] = squeeze<B>;
  r["Unsqueeze"] = unsqueeze_op<B>;
  r["Concat"] = concat<B>;
  r["Split"] = split<B>;
  r["Slice"] = slice<B>;
  r["Expand"] = expand_op<B>;
  r["Tile"] = tile<B>;
  r["Shape"] = shape_op<B>;
  r["Size"] = size_op<B>;
  r["Constant"] = constant_op<B>;
  r["ConstantOfShape"] = constant_of_shape<B>;
  r["Range"] = range<B>;
  r["EyeLike"] = eye_like<B>;
  r["Trilu"] = trilu<B>;
  r["DepthToSpace"] = depth_to_space<B>;
  r["SpaceToDepth"] = space_to_depth<B>;
  r["Pad"] = pad<B>;
  r["Dropout"] = dropout<B>;
}

template void register_shape_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_shape_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
