// Shape and dtype rules, one per op family, with the validation every user-facing op gets.
#include <algorithm>
#include <vector>

#include "ember/core/checked.h"
#include "ember/core/error.h"
#include "ember/ops/op.h"

namespace ember {

namespace {

using Metas = std::span<const TensorMeta* const>;

std::string tag(const Op& op) {  // appends: GCC 12's -Wrestrict misfires on "[" + std::string
  std::string t = "[";
  t.append(name(op.code)).append("] ");
  return t;
}

std::string shapes_of(Metas in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) s += (i ? ", " : "") + in[i]->shape.to_string();
  return s;
}

bool accepts(Accepts a, DType t) {
  switch (a) {
    case Accepts::Float:
      return is_float(t);
    case Accepts::Numeric:
      return is_float(t) || is_int(t);
    case Accepts::Integer:
      return is_int(t);
    case Accepts::Bool:
      return is_bool(t);
    default:
      return true;
  }
}

std::string_view accepts_name(Accepts a) {
  switch (a) {
    case Accepts::Float:
      return "a float";
    case Accepts::Numeric:
      return "a numeric";
    case Accepts::Integer:
      return "an integer";
    case Accepts::Bool:
      return "a bool";
    default:
      return "any";
  }
}

void check_same_dtype(const Op& op, Metas in, size_t first) {
  for (size_t i = first + 1; i < in.size(); ++i)
    if (in[i]->dtype != in[first]->dtype)
      throw DTypeError(tag(op) + "element types differ: " + std::string(name(in[first]->dtype)) +
                       " and " + std::string(name(in[i]->dtype)) + " (shapes " + shapes_of(in) +
                       ")");
}

void check_index_dtype(const Op& op, const TensorMeta& m) {
  if (m.dtype != DType::I64 && m.dtype != DType::I32)
    throw DTypeError(tag(op) + "indices must be i64 or i32, got " + std::string(name(m.dtype)));
}

void check_shape_values(const Op& op, const Dims& s) {
  for (int64_t d : s)
    if (d < 0) throw ValueError(tag(op) + "negative dim in shape " + Shape(s).to_string());
}

int64_t wrap(const Op& op, int64_t dim, size_t rank) {
  return wrap_dim(dim, static_cast<int64_t>(rank), name(op.code));
}

// Wraps every dim, rejects repeats; empty `dims` stays empty (= all dims).
void normalize_dims(const Op& op, Dims& dims, size_t rank) {
  std::vector<bool> seen(std::max<size_t>(rank, 1));
  for (auto& d : dims) {
    d = wrap(op, d, rank);
    if (seen[d]) throw IndexError(tag(op) + "dim " + std::to_string(d) + " given twice");
    seen[d] = true;
  }
}

TensorMeta reduce_rule(Op& op, const TensorMeta& x) {
  auto& a = op.attrs;
  bool arg = op.code == OpCode::ArgMax || op.code == OpCode::ArgMin;
  if (arg && a.dims.size() != 1)
    throw ValueError(tag(op) + "takes exactly one dim, got " + std::to_string(a.dims.size()));
  normalize_dims(op, a.dims, x.shape.rank());
  if (x.shape.rank() == 0) a.dims.clear();  // a scalar reduces to itself
  bool all = a.dims.empty();
  Dims out;
  for (size_t i = 0; i < x.shape.rank(); ++i) {
    bool reduced = all || std::find(a.dims.begin(), a.dims.end(), int64_t(i)) != a.dims.end();
    // No max over nothing; logsumexp, whose decomposition starts with a max, agrees on every
    // backend, fused or not.
    if (reduced && x.shape[i] == 0 &&
        (op.code == OpCode::Max || op.code == OpCode::Min || op.code == OpCode::LogSumExp || arg))
      throw ValueError(tag(op) + "cannot reduce over a zero-size dim of " + x.shape.to_string());
    if (!reduced)
      out.push_back(x.shape[i]);
    else if (a.flag)
      out.push_back(1);
  }
  DType dt = op.code == OpCode::ArgMax || op.code == OpCode::ArgMin ? DType::I64 : x.dtype;
  return {Shape(out), dt};
}

void normalize_slice(Op& op, const Shape& s) {
  auto& a = op.attrs;
  size_t r = s.rank();
  if (a.dims.size() > r || a.ends.size() != a.dims.size() ||
      (a.steps.size() != a.dims.size() && !a.steps.empty()))
    throw ShapeError(tag(op) + "slice of " + std::to_string(a.dims.size()) +
                     " ranges does not fit shape " + s.to_string());
  if (a.steps.empty()) a.steps.resize(a.dims.size(), 1);
  while (a.dims.size() < r) {  // trailing dims: the whole range
    a.dims.push_back(0);
    a.ends.push_back(s[a.dims.size() - 1]);
    a.steps.push_back(1);
  }
  for (size_t i = 0; i < r; ++i) {
    int64_t n = s[i];
    if (a.steps[i] <= 0)
      throw ValueError(tag(op) + "step must be positive, got " + std::to_string(a.steps[i]));
    auto clamp = [n](int64_t v) { return std::clamp(v < 0 ? v + n : v, int64_t{0}, n); };
    a.dims[i] = clamp(a.dims[i]);
    a.ends[i] = std::max(a.dims[i], clamp(a.ends[i]));
  }
}

Shape slice_shape(const OpAttrs& a) {
  Dims d(a.dims.size());
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = (a.ends[i] - a.dims[i]) / a.steps[i] + ((a.ends[i] - a.dims[i]) % a.steps[i] != 0);
  return Shape(d);
}

TensorMeta movement_rule(Op& op, const TensorMeta& x) {
  auto& a = op.attrs;
  const Shape& s = x.shape;
  switch (op.code) {
    case OpCode::Reshape: {
      int64_t known = 1, infer_at = -1;
      for (size_t i = 0; i < a.shape.size(); ++i) {
        if (a.shape[i] == -1 && infer_at < 0) {
          infer_at = static_cast<int64_t>(i);
        } else if (a.shape[i] < 0) {
          throw ValueError(tag(op) + "bad target shape " + Shape(a.shape).to_string());
        } else {
          known = checked_mul(known, a.shape[i],
                              tag(op) + "target shape " + Shape(a.shape).to_string());
        }
      }
      if (infer_at >= 0) {
        if (known == 0 || s.numel() % known != 0)
          throw ShapeError(tag(op) + "cannot reshape " + s.to_string() + " into " +
                           Shape(a.shape).to_string());
        a.shape[infer_at] = s.numel() / known;
      }
      if (byte_size(Shape(a.shape), 1, name(op.code)) != s.numel())
        throw ShapeError(tag(op) + "cannot reshape " + s.to_string() + " (" +
                         std::to_string(s.numel()) + " elements) into " +
                         Shape(a.shape).to_string());
      return {Shape(a.shape), x.dtype};
    }
    case OpCode::Permute: {
      if (a.dims.size() != s.rank())
        throw ShapeError(tag(op) + "order has " + std::to_string(a.dims.size()) + " dims, tensor " +
                         s.to_string());
      normalize_dims(op, a.dims, s.rank());
      Dims out(s.rank());
      for (size_t i = 0; i < out.size(); ++i) out[i] = s[a.dims[i]];
      return {Shape(out), x.dtype};
    }
    case OpCode::Expand: {
      if (a.shape.size() < s.rank())
        throw ShapeError(tag(op) + "cannot expand " + s.to_string() + " to fewer dims " +
                         Shape(a.shape).to_string());
      size_t off = a.shape.size() - s.rank();
      for (size_t i = 0; i < a.shape.size(); ++i) {
        int64_t from = i < off ? 1 : s[i - off];
        if (a.shape[i] == -1 && i >= off) a.shape[i] = from;
        if (a.shape[i] < 0 || (from != 1 && from != a.shape[i]))
          throw ShapeError(tag(op) + "cannot expand " + s.to_string() + " to " +
                           Shape(a.shape).to_string());
      }
      return {Shape(a.shape), x.dtype};
    }
    case OpCode::Slice:
      normalize_slice(op, s);
      return {slice_shape(a), x.dtype};
    default:  // Flip
      normalize_dims(op, a.dims, s.rank());
      return x;
  }
}

TensorMeta index_rule(Op& op, Metas in) {
  auto& a = op.attrs;
  const TensorMeta& x = *in[0];
  const Shape& s = x.shape;
  switch (op.code) {
    case OpCode::Cat: {
      if (in.empty()) throw ValueError(tag(op) + "needs at least one tensor");
      check_same_dtype(op, in, 0);
      a.dim = wrap(op, a.dim, s.rank());
      Dims out = s.dims();
      for (size_t i = 1; i < in.size(); ++i) {
        const Shape& t = in[i]->shape;
        bool ok = t.rank() == s.rank();
        for (size_t d = 0; ok && d < s.rank(); ++d)
          ok = d == static_cast<size_t>(a.dim) || t[d] == s[d];
        if (!ok)
          throw ShapeError(tag(op) + "shapes differ outside dim " + std::to_string(a.dim) + ": " +
                           shapes_of(in));
        out[a.dim] = checked_add(out[a.dim], t[a.dim],
                                 tag(op) + "output size along dim " + std::to_string(a.dim));
      }
      return {Shape(out), x.dtype};
    }
    case OpCode::SliceAssign: {
      check_same_dtype(op, in, 0);
      normalize_slice(op, s);
      Shape want = slice_shape(a);
      if (in[1]->shape != want)
        throw ShapeError(tag(op) + "values " + in[1]->shape.to_string() +
                         " do not fill the slice " + want.to_string() + " of " + s.to_string());
      return x;
    }
    case OpCode::Gather: {
      check_index_dtype(op, *in[1]);
      a.dim = wrap(op, a.dim, s.rank());
      const Shape& is = in[1]->shape;
      bool ok = is.rank() == s.rank();
      for (size_t d = 0; ok && d < s.rank(); ++d) ok = d == size_t(a.dim) || is[d] <= s[d];
      if (!ok)
        throw ShapeError(tag(op) + "indices " + is.to_string() + " do not fit " + s.to_string() +
                         " along dim " + std::to_string(a.dim));
      return {is, x.dtype};
    }
    case OpCode::Scatter: {
      check_index_dtype(op, *in[1]);
      if (in[2]->dtype != x.dtype)
        throw DTypeError(tag(op) + "values are " + std::string(name(in[2]->dtype)) +
                         ", tensor is " + std::string(name(x.dtype)));
      a.dim = wrap(op, a.dim, s.rank());
      const Shape& is = in[1]->shape;
      bool ok = is.rank() == s.rank() && in[2]->shape == is;
      for (size_t d = 0; ok && d < s.rank(); ++d) ok = d == size_t(a.dim) || is[d] <= s[d];
      if (!ok)
        throw ShapeError(tag(op) +
                         "indices and values must have one shape that fits the "
                         "tensor: " +
                         shapes_of(in));
      return x;
    }
    case OpCode::IndexSelect:
    case OpCode::IndexAdd: {
      check_index_dtype(op, *in[1]);
      a.dim = wrap(op, a.dim, s.rank());
      if (in[1]->shape.rank() != 1)
        throw ShapeError(tag(op) + "indices must be 1-d, got " + in[1]->shape.to_string());
      Dims out = s.dims();
      if (s.rank() > 0) out[a.dim] = in[1]->shape[0];
      if (op.code == OpCode::IndexSelect) return {Shape(out), x.dtype};
      if (in[2]->dtype != x.dtype)
        throw DTypeError(tag(op) + "values are " + std::string(name(in[2]->dtype)) +
                         ", tensor is " + std::string(name(x.dtype)));
      if (in[2]->shape != Shape(out))
        throw ShapeError(tag(op) + "values must be " + Shape(out).to_string() + ", got " +
                         in[2]->shape.to_string());
      return x;
    }
    default:
      throw Error(tag(op) + "no index rule");
  }
}

// int_matmul's and int_conv's operands: 8-bit integers, i8 or u8 each.
void check_8bit_operands(const Op& op, Metas in) {
  for (const TensorMeta* t : in)
    if (t->dtype != DType::I8 && t->dtype != DType::U8)
      throw DTypeError(tag(op) + "takes i8 or u8 operands, got " + std::string(name(in[0]->dtype)) +
                       " " + in[0]->shape.to_string() + " and " + std::string(name(in[1]->dtype)) +
                       " " + in[1]->shape.to_string());
}

TensorMeta matmul_rule(const Op& op, Metas in) {
  const Shape &a = in[0]->shape, &b = in[1]->shape;
  if (op.code == OpCode::IntMatmul)
    check_8bit_operands(op, in);
  else
    check_same_dtype(op, in, 0);
  if (a.rank() < 2 || b.rank() < 2)
    throw ShapeError(tag(op) + "needs rank >= 2, got lhs " + a.to_string() + ", rhs " +
                     b.to_string());
  if (a[a.rank() - 1] != b[b.rank() - 2])
    throw ShapeError(tag(op) + "inner dims differ: lhs " + a.to_string() + ", rhs " +
                     b.to_string());
  Shape ba(std::span<const int64_t>(a.dims().data(), a.rank() - 2));
  Shape bb(std::span<const int64_t>(b.dims().data(), b.rank() - 2));
  Shape out = broadcast_shapes(ba, bb, name(op.code));
  out.dims().push_back(a[a.rank() - 2]);
  out.dims().push_back(b[b.rank() - 1]);
  return {out, op.code == OpCode::IntMatmul ? DType::I32 : in[0]->dtype};
}

// ---- spatial ops: [N, C, *spatial] with 1 to 3 spatial dims ----------------------------

std::string list_str(const Dims& d) { return Shape(d).to_string(); }

// A per-dim list: empty takes `def` in every dim, one entry is repeated; otherwise r entries.
void fill_list(const Op& op, Dims& v, size_t r, const Dims& def, const char* what, int64_t min) {
  if (v.empty())
    v = def;
  else if (v.size() == 1 && r > 1)
    v = Dims(r, v[0]);
  if (v.size() != r)
    throw ValueError(tag(op) + what + " " + list_str(v) + " has " + std::to_string(v.size()) +
                     " entries for " + std::to_string(r) + " spatial dims");
  for (int64_t d : v)
    if (d < min)
      throw ValueError(tag(op) + what + " must be " + (min > 0 ? "positive" : "non-negative") +
                       ", got " + list_str(v));
}

size_t spatial_rank(const Op& op, const Shape& s, const char* what = "input") {
  if (s.rank() < 3 || s.rank() > 5)
    throw ShapeError(tag(op) + "needs " + what +
                     " [N, C, *spatial] with 1 to 3 spatial dims, got " + s.to_string());
  return s.rank() - 2;
}

// Normalizes the window for r spatial dims; `pool`: the stride defaults to the kernel.
void normalize_window(Op& op, size_t r, bool pool) {
  Window& w = op.attrs.window;
  if (w.kernel.empty()) throw ValueError(tag(op) + "needs a kernel size");
  fill_list(op, w.kernel, r, {}, "kernel", 1);
  fill_list(op, w.stride, r, pool ? w.kernel : Dims(r, 1), "stride", 1);
  fill_list(op, w.padding, r, Dims(r, 0), "padding", 0);
  fill_list(op, w.dilation, r, Dims(r, 1), "dilation", 1);
  if (op.code == OpCode::ConvTranspose)
    fill_list(op, w.output_padding, r, Dims(r, 0), "output_padding", 0);
  else
    w.output_padding.clear();
  bool conv = op.code == OpCode::Conv || op.code == OpCode::ConvTranspose ||
              op.code == OpCode::ConvWeightGrad || op.code == OpCode::IntConv;
  if (!conv && w.groups != 1)
    throw ValueError(tag(op) + "takes no groups, got " + std::to_string(w.groups));
  if (w.groups < 1)
    throw ValueError(tag(op) + "groups must be positive, got " + std::to_string(w.groups));
  bool pooling = op.code == OpCode::MaxPool || op.code == OpCode::MaxPoolBackward ||
                 op.code == OpCode::AvgPool || op.code == OpCode::AvgPoolBackward;
  if (!pooling) w.ceil_mode = false;
  if (op.code != OpCode::AvgPool && op.code != OpCode::AvgPoolBackward) w.count_include_pad = true;
  if (pooling) {
    for (size_t i = 0; i < r; ++i)
      if (w.padding[i] > w.kernel[i] / 2)
        throw ValueError(tag(op) + "padding " + list_str(w.padding) +
                         " must be at most half the kernel " + list_str(w.kernel));
  }
  if ((op.code == OpCode::AvgPool || op.code == OpCode::AvgPoolBackward) &&
      w.dilation != Dims(r, 1))
    throw ValueError(tag(op) + "takes no dilation, got " + list_str(w.dilation));
}

// The output size of a window sliding over `in` (plus padding) in dim i; throws when the
// dilated kernel does not fit the padded input.
int64_t window_out(const Op& op, const Window& w, size_t i, int64_t in, Metas metas) {
  const std::string what = tag(op) + "window size in spatial dim " + std::to_string(i);
  int64_t k = checked_add(checked_mul(w.dilation[i], w.kernel[i] - 1, what), 1, what);
  int64_t padded = checked_add(in, checked_mul(2, w.padding[i], what), what);
  if (padded < k)
    throw ShapeError(tag(op) + "kernel " + list_str(w.kernel) + " (dilation " +
                     list_str(w.dilation) + ") is larger than the padded input in spatial dim " +
                     std::to_string(i) + " (" + std::to_string(padded) + "); shapes " +
                     shapes_of(metas));
  int64_t s = w.stride[i], span = padded - k;
  int64_t o = span / s + 1 + (w.ceil_mode && span % s != 0);
  // ceil mode: the last window must start inside the input or its left padding (in 128 bits:
  // the start may pass int64 when the stride is huge)
  if (w.ceil_mode && __int128(o - 1) * s >= __int128(in) + w.padding[i]) --o;
  return o;
}

Dims window_outs(const Op& op, const Window& w, const Dims& in, Metas metas) {
  Dims o(in.size());
  for (size_t i = 0; i < in.size(); ++i) o[i] = window_out(op, w, i, in[i], metas);
  return o;
}

Dims spatial_of(const Shape& s) {
  return Dims(std::span<const int64_t>(s.dims().data() + 2, s.rank() - 2));
}

Shape nc_shape(int64_t n, int64_t c, const Dims& spatial) {
  Dims d{n, c};
  for (int64_t v : spatial) d.push_back(v);
  return Shape(d);
}

void check_target_size(const Op& op, Dims& shape, size_t r, const char* what, Metas in) {
  if (shape.size() == 1 && r > 1) shape = Dims(r, shape[0]);
  if (shape.size() != r)
    throw ValueError(tag(op) + what + " " + list_str(shape) + " needs " + std::to_string(r) +
                     " entries for input " + shapes_of(in));
  for (int64_t d : shape)
    if (d < 1)
      throw ValueError(tag(op) + what + " must be positive, got " + list_str(shape) +
                       " for input " + shapes_of(in));
}

void check_channels_divide(const Op& op, int64_t c, const char* what, Metas in) {
  int64_t g = op.attrs.window.groups;
  if (c % g != 0)
    throw ShapeError(tag(op) + "groups " + std::to_string(g) + " do not divide the " + what +
                     " channels " + std::to_string(c) + " (shapes " + shapes_of(in) + ")");
}

TensorMeta spatial_rule(Op& op, Metas in) {
  auto& a = op.attrs;
  Window& w = a.window;
  const Shape& xs = in[0]->shape;
  if (op.code == OpCode::IntConv)
    check_8bit_operands(op, in);
  else if (in.size() > 1)
    check_same_dtype(op, in, 0);
  DType dt = in[0]->dtype;
  switch (op.code) {
    case OpCode::Conv:
    case OpCode::ConvTranspose:
    case OpCode::IntConv: {
      size_t r = spatial_rank(op, xs);
      const Shape& ws = in[1]->shape;
      if (ws.rank() != xs.rank())
        throw ShapeError(tag(op) + "weight must have rank " + std::to_string(xs.rank()) +
                         " like the input: shapes " + shapes_of(in));
      w.kernel = spatial_of(ws);
      normalize_window(op, r, false);
      bool tr = op.code == OpCode::ConvTranspose;
      int64_t g = w.groups, c_in = xs[1];
      check_channels_divide(op, c_in, "input", in);
      if (tr ? ws[0] != c_in : ws[1] * g != c_in)
        throw ShapeError(tag(op) + "input channels " + std::to_string(c_in) +
                         " do not match the weight " + ws.to_string() + " with groups " +
                         std::to_string(g) + " (input " + xs.to_string() + ")");
      if (!tr) check_channels_divide(op, ws[0], "output", in);
      Dims out(r);
      if (!tr) {
        out = window_outs(op, w, spatial_of(xs), in);
      } else {
        for (size_t i = 0; i < r; ++i) {
          if (w.output_padding[i] >= std::max(w.stride[i], w.dilation[i]))
            throw ValueError(tag(op) + "output_padding " + list_str(w.output_padding) +
                             " must be smaller than the stride or the dilation");
          const std::string what = tag(op) + "output size in spatial dim " + std::to_string(i);
          int64_t o = checked_mul(xs[i + 2] - 1, w.stride[i], what);
          o = checked_add(o, checked_mul(w.dilation[i], w.kernel[i] - 1, what), what);
          o = checked_add(o, w.output_padding[i] + 1, what);
          out[i] = checked_sub(o, checked_mul(2, w.padding[i], what), what);
          if (out[i] < 1)
            throw ShapeError(tag(op) + "output size " + std::to_string(out[i]) +
                             " in spatial dim " + std::to_string(i) + " is not positive (shapes " +
                             shapes_of(in) + ")");
        }
      }
      return {nc_shape(xs[0], tr ? ws[1] * g : ws[0], out),
              op.code == OpCode::IntConv ? DType::I32 : dt};
    }
    case OpCode::ConvWeightGrad: {
      size_t r = spatial_rank(op, xs);
      const Shape& gs = in[1]->shape;
      normalize_window(op, r, false);
      if (gs.rank() != xs.rank() || gs[0] != xs[0] ||
          Shape(window_outs(op, w, spatial_of(xs), in)) != Shape(spatial_of(gs)))
        throw ShapeError(tag(op) + "gradient " + gs.to_string() +
                         " is not the conv output of input " + xs.to_string() + " with kernel " +
                         list_str(w.kernel));
      check_channels_divide(op, xs[1], "input", in);
      check_channels_divide(op, gs[1], "output", in);
      return {nc_shape(gs[1], xs[1] / w.groups, w.kernel), dt};
    }
    case OpCode::MaxPool:
    case OpCode::AvgPool:
    case OpCode::Unfold: {
      size_t r = spatial_rank(op, xs);
      normalize_window(op, r, op.code != OpCode::Unfold);
      Dims out = window_outs(op, w, spatial_of(xs), in);
      if (op.code != OpCode::Unfold) return {nc_shape(xs[0], xs[1], out), dt};
      int64_t k = Shape(w.kernel).numel(), l = Shape(out).numel();
      return {Shape{xs[0], checked_mul(xs[1], k, tag(op) + "output channels"), l}, dt};
    }
    case OpCode::MaxPoolBackward: {
      size_t r = spatial_rank(op, xs);
      normalize_window(op, r, true);
      if (in[1]->shape != nc_shape(xs[0], xs[1], window_outs(op, w, spatial_of(xs), in)))
        throw ShapeError(tag(op) + "gradient " + in[1]->shape.to_string() +
                         " is not the pooled shape of " + xs.to_string());
      return {xs, dt};
    }
    case OpCode::AvgPoolBackward: {
      size_t r = spatial_rank(op, xs, "gradient");
      normalize_window(op, r, true);
      check_target_size(op, a.shape, r, "input size", in);
      if (Shape(window_outs(op, w, a.shape, in)) != Shape(spatial_of(xs)))
        throw ShapeError(tag(op) + "gradient " + xs.to_string() +
                         " is not the pooled shape of input size " + list_str(a.shape));
      return {nc_shape(xs[0], xs[1], a.shape), dt};
    }
    case OpCode::Fold: {
      if (xs.rank() != 3)
        throw ShapeError(tag(op) + "needs input [N, C * prod(kernel), L], got " + xs.to_string());
      size_t r = a.shape.size();
      if (r < 1 || r > 3)
        throw ValueError(tag(op) + "output size " + list_str(a.shape) +
                         " needs 1 to 3 spatial dims");
      check_target_size(op, a.shape, r, "output size", in);
      normalize_window(op, r, false);
      int64_t k = Shape(w.kernel).numel();
      int64_t l = Shape(window_outs(op, w, a.shape, in)).numel();
      if (xs[1] % k != 0 || xs[2] != l)
        throw ShapeError(tag(op) + "input " + xs.to_string() + " is not [N, C * " +
                         std::to_string(k) + ", " + std::to_string(l) + "] for output size " +
                         list_str(a.shape) + " and kernel " + list_str(w.kernel));
      return {nc_shape(xs[0], xs[1] / k, a.shape), dt};
    }
    case OpCode::AdaptiveAvgPool:
    case OpCode::AdaptiveAvgPoolBackward:
    case OpCode::Interpolate:
    case OpCode::InterpolateBackward: {
      bool bwd =
          op.code == OpCode::AdaptiveAvgPoolBackward || op.code == OpCode::InterpolateBackward;
      size_t r = spatial_rank(op, xs, bwd ? "gradient" : "input");
      a.window = Window{};
      check_target_size(op, a.shape, r, bwd ? "input size" : "output size", in);
      for (int64_t d : spatial_of(xs))
        if (d < 1)
          throw ShapeError(tag(op) + "needs a non-empty spatial size, got " + xs.to_string());
      if (op.code == OpCode::Interpolate || op.code == OpCode::InterpolateBackward) {
        if (static_cast<int>(a.interp) >= kNumInterpModes)
          throw ValueError(tag(op) + "unknown mode " + std::to_string(static_cast<int>(a.interp)));
        if ((a.interp == InterpMode::Nearest || a.interp == InterpMode::NearestExact) && a.flag)
          throw ValueError(tag(op) + "align_corners applies to the linear and cubic modes only");
        if (a.interp == InterpMode::Cubic && r != 2)
          throw ValueError(tag(op) + "cubic mode takes 2 spatial dims (bicubic), got " +
                           xs.to_string());
      }
      return {nc_shape(xs[0], xs[1], a.shape), dt};
    }
    default:
      throw Error(tag(op) + "no spatial rule");
  }
}

TensorMeta create_rule(Op& op) {
  auto& a = op.attrs;
  check_shape_values(op, a.shape);
  if (op.code == OpCode::Arange && a.shape.size() != 1) throw ValueError(tag(op) + "takes a count");
  if (op.code == OpCode::Arange && !is_float(a.dtype) && a.shape[0] > 0) {
    // the last value start + step * (count - 1) must be an int64
    const std::string what = tag(op) + "last value of " + std::to_string(a.shape[0]) + " steps";
    checked_add(a.scalar.as<int64_t>(), checked_mul(a.scalar2.as<int64_t>(), a.shape[0] - 1, what),
                what);
  }
  if (op.code == OpCode::RandomBernoulli && !(a.scalar.f >= 0 && a.scalar.f <= 1))
    throw ValueError(tag(op) + "p must be in [0, 1], got " + std::to_string(a.scalar.f));
  if (op.code == OpCode::RandomNormal && !(a.scalar2.f >= 0))
    throw ValueError(tag(op) + "std must be >= 0, got " + std::to_string(a.scalar2.f));
  if (op.code == OpCode::RandomUniform && !(a.scalar.f <= a.scalar2.f))
    throw ValueError(tag(op) + "low must be <= high");
  return {Shape(a.shape), a.dtype};
}

// attention(q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv][, mask]) -> [..., Lq, Dv].
TensorMeta attention_rule(const Op& op, Metas in) {
  if (in.size() != 3 && in.size() != 4)
    throw ValueError(tag(op) + "takes q, k, v and an optional mask, got " +
                     std::to_string(in.size()) + " inputs");
  const TensorMeta &q = *in[0], &k = *in[1], &v = *in[2];
  const std::string shapes = " (q " + q.shape.to_string() + ", k " + k.shape.to_string() + ", v " +
                             v.shape.to_string() +
                             (in.size() == 4 ? ", mask " + in[3]->shape.to_string() : "") + ")";
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    throw DTypeError(tag(op) + "q, k and v need one element type, got " +
                     std::string(name(q.dtype)) + ", " + std::string(name(k.dtype)) + " and " +
                     std::string(name(v.dtype)) + shapes);
  const size_t r = q.shape.rank();
  if (r < 2 || k.shape.rank() != r || v.shape.rank() != r)
    throw ShapeError(tag(op) + "q, k and v need one rank of at least 2" + shapes);
  for (size_t d = 0; d + 2 < r; ++d)
    if (k.shape[d] != q.shape[d] || v.shape[d] != q.shape[d])
      throw ShapeError(tag(op) + "q, k and v need the same leading (batch, head) dims" + shapes);
  if (k.shape[r - 1] != q.shape[r - 1])
    throw ShapeError(tag(op) + "q and k need the same feature size" + shapes);
  if (v.shape[r - 2] != k.shape[r - 2])
    throw ShapeError(tag(op) + "k and v need the same length" + shapes);
  Dims out = q.shape.dims();
  out[r - 1] = v.shape[r - 1];
  if (in.size() == 4) {
    const TensorMeta& m = *in[3];
    if (m.dtype != DType::Bool)
      throw DTypeError(tag(op) + "the mask must be bool, got " + std::string(name(m.dtype)) +
                       shapes);
    Dims scores = q.shape.dims();
    scores[r - 1] = k.shape[r - 2];
    bool fits = m.shape.rank() <= r;
    for (size_t i = 0; fits && i < m.shape.rank(); ++i) {
      int64_t want = scores[r - m.shape.rank() + i];
      fits = m.shape[i] == 1 || m.shape[i] == want;
    }
    if (!fits)
      throw ShapeError(tag(op) + "the mask does not broadcast to the scores " +
                       Shape(scores).to_string() + shapes);
  }
  return {Shape(out), q.dtype};
}

// layer_norm(x, gamma, beta) and rms_norm(x, gamma) over dims [dim, rank) of x: gamma (and
// beta) have those dims' shape and x's dtype.
TensorMeta norm_rule(Op& op, Metas in) {
  const TensorMeta& x = *in[0];
  const Shape& s = x.shape;
  auto& a = op.attrs;
  if (s.rank() == 0) throw ShapeError(tag(op) + "needs an input of rank 1 or more, got []");
  check_same_dtype(op, in, 0);
  a.dim = wrap(op, a.dim, s.rank());
  Shape want(std::span<const int64_t>(s.dims().data() + a.dim, s.rank() - size_t(a.dim)));
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i]->shape != want)
      throw ShapeError(tag(op) + (i == 1 ? "gamma " : "beta ") + in[i]->shape.to_string() +
                       " does not match the normalized shape " + want.to_string() + " (dims " +
                       std::to_string(a.dim) + ".. of input " + s.to_string() + ")");
  if (!(a.scalar.f >= 0))
    throw ValueError(tag(op) + "epsilon must be non-negative, got " + std::to_string(a.scalar.f));
  return x;
}

// pad(x): dims holds {before, after} for every dim; negative values crop. What each mode
// can add is bounded by what is left of the dim after cropping.
TensorMeta pad_rule(const Op& op, const TensorMeta& x) {
  const auto& a = op.attrs;
  const Shape& s = x.shape;
  auto pads = [&] {
    std::string p = "pads [";
    for (size_t i = 0; i < a.dims.size(); ++i) p += (i ? ", " : "") + std::to_string(a.dims[i]);
    return p + "] on input " + s.to_string();
  };
  if (a.dims.size() != 2 * s.rank())
    throw ValueError(tag(op) + "needs {before, after} for each of the " + std::to_string(s.rank()) +
                     " dims, got " + pads());
  if (a.dim < 0 || a.dim > 3) throw ValueError(tag(op) + "unknown mode " + std::to_string(a.dim));
  const auto mode = static_cast<PadMode>(a.dim);
  Dims out = s.dims();
  for (size_t d = 0; d < s.rank(); ++d) {
    const int64_t lo = a.dims[2 * d], hi = a.dims[2 * d + 1];
    const int64_t kept = s[d] - std::max<int64_t>(-lo, 0) - std::max<int64_t>(-hi, 0);
    if (kept < 0)
      throw ShapeError(tag(op) + "crops more than dim " + std::to_string(d) + " holds: " + pads());
    const int64_t add = std::max<int64_t>(lo, 0), add2 = std::max<int64_t>(hi, 0);
    const int64_t most = std::max(add, add2);
    const bool bad = most > 0 && ((mode == PadMode::Reflect && most >= kept) ||
                                  (mode == PadMode::Circular && most > kept) ||
                                  (mode == PadMode::Replicate && kept == 0));
    if (bad)
      throw ShapeError(tag(op) + std::string(name(mode)) + " padding of " + std::to_string(most) +
                       " does not fit dim " + std::to_string(d) + " of size " +
                       std::to_string(kept) +
                       (mode == PadMode::Reflect    ? " (needs pad < size)"
                        : mode == PadMode::Circular ? " (needs pad <= size)"
                                                    : " (needs a non-empty dim)") +
                       ": " + pads());
    out[d] = kept + add + add2;
  }
  return {Shape(out), x.dtype};
}

// The output meets the shape invariant (shape.h): no negative dim, elements and bytes fit int64.
void check_output(const Op& op, const TensorMeta& out, Metas in) {
  const SizeFit fit = size_fit(out.shape, size_of(out.dtype));
  if (fit == SizeFit::Fits) return;  // every op passes here: no strings unless it fails
  const std::string at = tag(op) + "output shape " + out.shape.to_string();
  switch (fit) {
    case SizeFit::Fits:
      return;
    case SizeFit::NegativeDim:
      throw ShapeError(at + " has a negative dim (inputs " + shapes_of(in) + ")");
    case SizeFit::TooManyElements:
      throw ShapeError(at + " has more elements than int64 can count (inputs " + shapes_of(in) +
                       ")");
    case SizeFit::TooManyBytes:
      throw ShapeError(at + " of " + std::string(name(out.dtype)) +
                       " needs more bytes than int64 can count");
  }
}

TensorMeta infer_rule(Op& op, Metas in) {
  const OpInfo& oi = info(op.code);
  if (oi.arity >= 0 && static_cast<int>(in.size()) != oi.arity)
    throw ValueError(tag(op) + "takes " + std::to_string(oi.arity) + " inputs, got " +
                     std::to_string(in.size()));
  if (oi.family == OpFamily::Create) return create_rule(op);
  if (in.empty()) throw ValueError(tag(op) + "needs at least one input");
  const TensorMeta& x = *in[0];
  if (!accepts(oi.accepts, x.dtype))
    throw DTypeError(tag(op) + "needs " + std::string(accepts_name(oi.accepts)) + " tensor, got " +
                     std::string(name(x.dtype)) + " " + x.shape.to_string());
  auto& a = op.attrs;
  switch (oi.family) {
    case OpFamily::Unary:
      return {x.shape, oi.result == ResultType::ToBool ? DType::Bool : x.dtype};
    case OpFamily::Binary:
    case OpFamily::Compare: {
      check_same_dtype(op, in, 0);
      Shape s = broadcast_shapes(x.shape, in[1]->shape, name(op.code));
      return {s, oi.family == OpFamily::Compare ? DType::Bool : x.dtype};
    }
    case OpFamily::Where: {
      check_same_dtype(op, in, 1);
      Shape s = broadcast_shapes(x.shape, in[1]->shape, "where");
      s = broadcast_shapes(s, in[2]->shape, "where");
      return {s, in[1]->dtype};
    }
    case OpFamily::Cast:
      return {x.shape, a.dtype};
    case OpFamily::Reduce:
      return reduce_rule(op, x);
    case OpFamily::Scan:
    case OpFamily::Sort:
      a.dim = wrap(op, a.dim, x.shape.rank());
      return {x.shape, oi.result == ResultType::ToI64 ? DType::I64 : x.dtype};
    case OpFamily::Movement:
      return movement_rule(op, x);
    case OpFamily::Index:
      return index_rule(op, in);
    case OpFamily::Matmul:
      return matmul_rule(op, in);
    case OpFamily::Spatial:
      return spatial_rule(op, in);
    case OpFamily::Composite:
      if (op.code == OpCode::Mean || op.code == OpCode::LogSumExp) return reduce_rule(op, x);
      if (op.code == OpCode::Attention) return attention_rule(op, in);
      if (op.code == OpCode::LayerNorm || op.code == OpCode::RmsNorm) return norm_rule(op, in);
      if (op.code == OpCode::Pad) return pad_rule(op, x);
      if (op.code == OpCode::IntMatmul) return matmul_rule(op, in);
      if (op.code == OpCode::IntConv) return spatial_rule(op, in);
      if (op.code == OpCode::Lerp || op.code == OpCode::Addcmul ||
          op.code == OpCode::AdaptiveStep || op.code == OpCode::ReluBackward) {
        check_same_dtype(op, in, 0);
        Shape s = x.shape;
        for (size_t i = 1; i < in.size(); ++i) s = broadcast_shapes(s, in[i]->shape, name(op.code));
        return {s, x.dtype};
      }
      if (op.code == OpCode::Softmax || op.code == OpCode::LogSoftmax)
        a.dim = wrap(op, a.dim, x.shape.rank());
      return x;
    default:
      throw Error(tag(op) + "no shape rule");
  }
}

}  // namespace

TensorMeta infer(Op& op, Metas in) {
  TensorMeta out = infer_rule(op, in);
  check_output(op, out, in);
  return out;
}

}  // namespace ember
