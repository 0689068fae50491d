// ONNX reductions (Reduce*, ArgMax/ArgMin), scans (CumSum), softmax-like normalizations
// (Softmax, LogSoftmax, Hardmax) and TopK.
#include <algorithm>
#include <numeric>

#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

namespace {

/// The axes a Reduce* node reduces over, normalized; empty = none (noop) or all, as `all`.
template <Backend B>
Dims reduce_axes(const Ctx<B>& c, int64_t rank, bool axes_as_input, bool& all) {
  std::vector<int64_t> axes;
  bool given = false;
  if (axes_as_input) {
    if (c.has(1)) {
      axes = c.ints(1);
      given = true;
    }
  } else if (c.has_attr("axes")) {
    axes = c.attr_ints("axes");
    given = true;
  }
  all = false;
  if (!given || axes.empty()) {
    if (axes_as_input && c.attr_i("noop_with_empty_axes", 0) != 0) return {};
    all = true;
    Dims d;
    for (int64_t i = 0; i < rank; ++i) d.push_back(i);
    return d;
  }
  Dims d;
  for (int64_t a : axes) d.push_back(norm_axis(c, a, rank));
  std::sort(d.begin(), d.end());
  return d;
}

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <Backend B, Red R, int AxesInputSince>
std::vector<RValue<B>> reduce_op(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  const bool keep = c.attr_i("keepdims", 1) != 0;
  bool all = false;
  Dims axes = reduce_axes(c, x.rank(), c.opset() >= AxesInputSince, all);
  if (axes.empty()) {
    // noop_with_empty_axes: the input itself, but the L-norms etc. still apply elementwise.
    switch (R) {
      case Red::L1:
        return one(x.unary(OpCode::Abs));
      case Red::SumSquare:
        return one(x * x);
      case Red::LogSum:
        return one(x.log());
      case Red::LogSumExp:
        return one(x);
      case Red::L2:
        return one(x.unary(OpCode::Abs));
      default:
        return one(x);
    }
  }
  if (x.rank() == 0) return one(x);
  auto sum = [&](const Tn<B>& t) { return reduce(OpCode::Sum, t, axes, keep); };
  switch (R) {
    case Red::Sum:
      return one(sum(x));
    case Red::Mean:
      if (!is_float(x.dtype())) {
        int64_t n = 1;
        for (int64_t a : axes) n *= x.shape()[static_cast<size_t>(a)];
        return one(sum(x) / scalar_of(x, static_cast<double>(n)));
      }
      return one(reduce(OpCode::Mean, x, axes, keep));
    case Red::Max:
      return one(reduce(OpCode::Max, x, axes, keep));
    case Red::Min:
      return one(reduce(OpCode::Min, x, axes, keep));
    case Red::Prod:
      return one(reduce(OpCode::Prod, x, axes, keep));
    case Red::L1:
      return one(sum(x.unary(OpCode::Abs)));
    case Red::L2: {
      if (!is_float(x.dtype())) {
        Tn<B> f = x.cast(DType::F64);
        return one(reduce(OpCode::Sum, f * f, axes, keep).sqrt().cast(x.dtype()));
      }
      return one(sum(x * x).sqrt());
    }
    case Red::LogSum:
      return one(sum(x).log());
    case Red::SumSquare:
      return one(sum(x * x));
    case Red::LogSumExp: {
      Tn<B> m = reduce(OpCode::Max, x, axes, true);
      Tn<B> safe = where(m.isinf(), m.zeros_like(), m);
      Tn<B> s = reduce(OpCode::Sum, (x - safe).exp(), axes, true).log() + safe;
      if (!keep) {
        Dims out;
        for (int64_t i = 0; i < x.rank(); ++i)
          if (std::find(axes.begin(), axes.end(), i) == axes.end())
            out.push_back(x.shape()[static_cast<size_t>(i)]);
        s = reshape(s, out);
      }
      return one(s);
    }
  }
  return one(x);
}

template <Backend B, OpCode C>
std::vector<RValue<B>> arg_op(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  const int64_t axis = norm_axis(c, c.attr_i("axis", 0), x.rank());
  const bool keep = c.attr_i("keepdims", 1) != 0;
  const bool last = c.attr_i("select_last_index", 0) != 0;
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  if (last) x = x.flip({axis});
  OpAttrs a;
  a.dims = {axis};
  a.flag = keep;
  Tn<B> idx = op<B>(C, std::move(a), {x});
  if (last) idx = scalar_of(idx, static_cast<double>(n - 1)) - idx;
  return one(idx);
}

template <Backend B>
std::vector<RValue<B>> cumsum(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  const auto ax = c.ints(1);
  if (ax.size() != 1) c.fail("axis must hold one value");
  const int64_t axis = norm_axis(c, ax[0], x.rank());
  const bool exclusive = c.attr_i("exclusive", 0) != 0, reverse = c.attr_i("reverse", 0) != 0;
  if (reverse) x = x.flip({axis});
  Tn<B> y = x.with_dim(OpCode::CumSum, axis);
  if (exclusive) y = y - x;
  if (reverse) y = y.flip({axis});
  return one(y);
}

/// Softmax-like ops: opset < 13 flattens to [prod(dims < axis), prod(dims >= axis)] and
/// normalizes each row; from 13 on they normalize along one axis (default -1).
template <Backend B, class F>
std::vector<RValue<B>> normalize_op(Ctx<B>& c, F f) {
  Tn<B> x = c.in(0);
  const int64_t rank = x.rank();
  if (rank == 0) return one(f(reshape(x, {1}), 0).reshape(Shape{}));
  if (c.opset() >= 13) return one(f(x, norm_axis(c, c.attr_i("axis", -1), rank)));
  const int64_t axis = norm_axis(c, c.attr_i("axis", 1), rank);
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? rows : cols) *= x.shape()[static_cast<size_t>(i)];
  Tn<B> y = f(reshape(x, {rows, cols}), 1);
  return one(reshape(y, dims_of(x)));
}

template <Backend B>
std::vector<RValue<B>> softmax(Ctx<B>& c) {
  return normalize_op(
      c, [](const Tn<B>& x, int64_t axis) { return x.with_dim(OpCode::Softmax, axis); });
}
template <Backend B>
std::vector<RValue<B>> log_softmax(Ctx<B>& c) {
  return normalize_op(
      c, [](const Tn<B>& x, int64_t axis) { return x.with_dim(OpCode::LogSoftmax, axis); });
}
template <Backend B>
std::vector<RValue<B>> hardmax(Ctx<B>& c) {
  return normalize_op(c, [](const Tn<B>& x, int64_t axis) {
    OpAttrs a;
    a.dims = {axis};
    a.flag = true;
    Tn<B> idx = op<B>(OpCode::ArgMax, std::move(a), {x});  // first maximum
    Dims shape = dims_of(x);
    const int64_t n = shape[static_cast<size_t>(axis)];
    Dims ar(static_cast<size_t>(x.rank()), 1);
    ar[static_cast<size_t>(axis)] = n;
    std::vector<int64_t> r(static_cast<size_t>(n));
    std::iota(r.begin(), r.end(), 0);
    Tn<B> pos = reshape(int_tensor<B>(r, x.device()), ar);
    return pos.eq(idx).cast(x.dtype());
  });
}

template <Backend B>
std::vector<RValue<B>> topk(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  int64_t k = 0;
  if (c.opset() >= 10) {
    auto kv = c.ints(1);
    if (kv.size() != 1) c.fail("k must hold one value");
    k = kv[0];
  } else {
    k = c.attr_i("k", 0);
  }
  const int64_t axis = norm_axis(c, c.attr_i("axis", -1), x.rank());
  const bool largest = c.attr_i("largest", 1) != 0;
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  if (k < 0 || k > n)
    c.fail("k = " + std::to_string(k) + " is outside [0, " + std::to_string(n) + "]");
  // A stable sort keeps equal values in index order, as ONNX asks; descending for largest.
  OpAttrs a;
  a.dim = axis;
  a.flag = largest;
  Tn<B> order = op<B>(OpCode::ArgSort, std::move(a), {x});
  Tn<B> idx = slice_axis(order, axis, 0, k, 1);
  OpAttrs g;
  g.dim = axis;
  Tn<B> vals = op<B>(OpCode::Gather, std::move(g), {x, idx});
  return {RValue<B>::of(vals), RValue<B>::of(idx)};
}

}  // namespace

template <Backend B>
void register_reduce_ops(OpRegistry<B>& r) {
  r["ReduceSum"] = reduce_op<B, Red::Sum, 13>;
  r["ReduceMean"] = reduce_op<B, Red::Mean, 18>;
  r["ReduceMax"] = reduce_op<B, Red::Max, 18>;
  r["ReduceMin"] = reduce_op<B, Red::Min, 18>;
  r["ReduceProd"] = reduce_op<B, Red::Prod, 18>;
  r["ReduceL1"] = reduce_op<B, Red::L1, 18>;
  r["ReduceL2"] = reduce_op<B, Red::L2, 18>;
  r["ReduceLogSum"] = reduce_op<B, Red::LogSum, 18>;
  r["ReduceLogSumExp"] = reduce_op<B, Red::LogSumExp, 18>;
  r["ReduceSumSquare"] = reduce_op<B, Red::SumSquare, 18>;
  r["ArgMax"] = arg_op<B, OpCode::ArgMax>;
  r["ArgMin"] = arg_op<B, OpCode::ArgMin>;
  r["CumSum"] = cumsum<B>;
  r["Softmax"] = softmax<B>;
  r["LogSoftmax"] = log_softmax<B>;
  r["Hardmax"] = hardmax<B>;
  r["TopK"] = topk<B>;
}

template void register_reduce_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_reduce_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
