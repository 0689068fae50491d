// Shape and dtype rules, one per op family, with the validation every user-facing op gets.
#include <algorithm>
#include <vector>

#include "ember/core/error.h"
#include "ember/ops/op.h"

namespace ember {

namespace {

using Metas = std::span<const TensorMeta* const>;

std::string tag(const Op& op) { return "[" + std::string(name(op.code)) + "] "; }

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
    if (reduced && x.shape[i] == 0 && (op.code == OpCode::Max || op.code == OpCode::Min || arg))
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
    d[i] = (a.ends[i] - a.dims[i] + a.steps[i] - 1) / a.steps[i];
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
          known *= a.shape[i];
        }
      }
      if (infer_at >= 0) {
        if (known == 0 || s.numel() % known != 0)
          throw ShapeError(tag(op) + "cannot reshape " + s.to_string() + " into " +
                           Shape(a.shape).to_string());
        a.shape[infer_at] = s.numel() / known;
      }
      if (Shape(a.shape).numel() != s.numel())
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
        out[a.dim] += t[a.dim];
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

TensorMeta matmul_rule(const Op& op, Metas in) {
  const Shape &a = in[0]->shape, &b = in[1]->shape;
  check_same_dtype(op, in, 0);
  if (a.rank() < 2 || b.rank() < 2)
    throw ShapeError(tag(op) + "needs rank >= 2, got lhs " + a.to_string() + ", rhs " +
                     b.to_string());
  if (a[a.rank() - 1] != b[b.rank() - 2])
    throw ShapeError(tag(op) + "inner dims differ: lhs " + a.to_string() + ", rhs " +
                     b.to_string());
  Shape ba(std::span<const int64_t>(a.dims().data(), a.rank() - 2));
  Shape bb(std::span<const int64_t>(b.dims().data(), b.rank() - 2));
  Shape out = broadcast_shapes(ba, bb, "matmul");
  out.dims().push_back(a[a.rank() - 2]);
  out.dims().push_back(b[b.rank() - 1]);
  return {out, in[0]->dtype};
}

TensorMeta create_rule(Op& op) {
  auto& a = op.attrs;
  check_shape_values(op, a.shape);
  if (op.code == OpCode::Arange && a.shape.size() != 1) throw ValueError(tag(op) + "takes a count");
  if (op.code == OpCode::RandomBernoulli && !(a.scalar.f >= 0 && a.scalar.f <= 1))
    throw ValueError(tag(op) + "p must be in [0, 1], got " + std::to_string(a.scalar.f));
  if (op.code == OpCode::RandomNormal && !(a.scalar2.f >= 0))
    throw ValueError(tag(op) + "std must be >= 0, got " + std::to_string(a.scalar2.f));
  if (op.code == OpCode::RandomUniform && !(a.scalar.f <= a.scalar2.f))
    throw ValueError(tag(op) + "low must be <= high");
  return {Shape(a.shape), a.dtype};
}

}  // namespace

TensorMeta infer(Op& op, Metas in) {
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
    case OpFamily::Composite:
      if (op.code == OpCode::Mean || op.code == OpCode::LogSumExp) return reduce_rule(op, x);
      if (op.code == OpCode::Softmax || op.code == OpCode::LogSoftmax)
        a.dim = wrap(op, a.dim, x.shape.rank());
      return x;
    default:
      throw Error(tag(op) + "no shape rule");
  }
}

}  // namespace ember
