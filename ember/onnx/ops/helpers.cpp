// The rank-erased helpers of ops/context.h and Ctx's accessors.
#include <algorithm>
#include <limits>

#include "ember/core/error.h"
#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

using H = Dispatch::Handle;

const RValue& Ctx::value(size_t k) const {
  if (k >= in_.size() || in_[k].kind == Value::Kind::None)
    fail("input " + std::to_string(k) + " is required");
  return in_[k];
}

const Tn& Ctx::in(size_t k) const {
  const RValue& v = value(k);
  if (v.kind != Value::Kind::Tensor) fail("input " + std::to_string(k) + " must be a tensor");
  return v.t;
}

std::vector<int64_t> Ctx::ints(size_t k) const {
  const Tn& t = in(k);
  if (!is_int(t.dtype()) && t.dtype() != DType::Bool)
    fail("input " + std::to_string(k) + " must be an integer tensor, it is " +
         std::string(name(t.dtype())));
  return host_ints(t);
}

std::vector<double> Ctx::floats(size_t k) const { return host_floats(in(k)); }

namespace {
const Attribute* typed(const Ctx& c, std::string_view n, Attribute::Type t) {
  const Attribute* a = c.node().attr(n);
  if (a && a->type != t)
    c.fail("attribute " + std::string(n) + " is " + std::string(name(a->type)) + ", expected " +
           std::string(name(t)));
  return a;
}
}  // namespace

int64_t Ctx::attr_i(std::string_view n, int64_t def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Int);
  return a ? a->i : def;
}
double Ctx::attr_f(std::string_view n, double def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Float);
  return a ? a->f : def;
}
std::string Ctx::attr_s(std::string_view n, std::string def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::String);
  return a ? a->s : def;
}
std::vector<int64_t> Ctx::attr_ints(std::string_view n, std::vector<int64_t> def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Ints);
  return a ? a->ints : def;
}
std::vector<double> Ctx::attr_floats(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Floats);
  return a ? a->floats : std::vector<double>{};
}
const TensorData* Ctx::attr_tensor(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Tensor);
  return a && !a->tensors.empty() ? &a->tensors[0] : nullptr;
}
const Graph& Ctx::attr_graph(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Graph);
  if (!a || a->graphs.empty()) fail("attribute " + std::string(n) + " (a graph) is required");
  return *a->graphs[0];
}

void Ctx::fail(const std::string& msg) const {
  throw ValueError("[onnx] " + label() + ": " + msg);
}

namespace {
thread_local int64_t t_max_tensor_bytes = std::numeric_limits<int64_t>::max();
}  // namespace

TensorLimit::TensorLimit(int64_t max_bytes) : previous_(t_max_tensor_bytes) {
  t_max_tensor_bytes = max_bytes;
}
TensorLimit::~TensorLimit() { t_max_tensor_bytes = previous_; }

void check_size(const Dims& shape, DType t) {
  // Saturating: a size past the limit is refused whether or not its product overflows.
  const int64_t limit = t_max_tensor_bytes;
  int64_t bytes = size_of(t);
  bool over = false;
  for (int64_t d : shape) {
    if (d == 0) return;  // empty
    if (d < 0)
      throw ValueError("[onnx] tensor " + Shape(shape).to_string() + " has a negative dim");
    if (!over && bytes > limit / d) over = true;
    if (!over) bytes *= d;
  }
  if (over || bytes > limit)
    throw ValueError("[onnx] tensor " + Shape(shape).to_string() + " " + std::string(name(t)) +
                     " would take more than the session's limit of " + std::to_string(limit) +
                     " bytes (SessionOptions::max_tensor_bytes)");
}

Tn op(OpCode c, OpAttrs a, const std::vector<Tn>& in) {
  std::vector<H> hs;
  hs.reserve(in.size());
  for (const Tn& t : in) hs.push_back(t.handle());
  if (hs.empty()) throw ValueError("[onnx] internal: op without inputs");
  Op o{c, std::move(a)};
  if (t_max_tensor_bytes != std::numeric_limits<int64_t>::max()) {
    // The output's shape, checked before the op allocates it (apply validates it again).
    std::vector<const TensorMeta*> metas;
    for (const H& h : hs) metas.push_back(&Dispatch::meta(h));
    Op probe = o;
    const TensorMeta out = infer(probe, metas);
    check_size(out.shape.dims(), out.dtype);
  }
  return Tn(apply<Dispatch>(std::move(o), std::span<H>(hs)));
}
Tn op(OpCode c, const std::vector<Tn>& in) { return op(c, OpAttrs{}, in); }

Tn constant(const TensorData& d, Device dev) { return Tn(Dispatch::from_data(d, dev)); }

Tn full(const Dims& shape, double v, DType t, Device dev) {
  check_size(shape, t);
  return Tn::full(Shape(shape), Scalar(v), t, dev);
}

Tn int_tensor(const std::vector<int64_t>& v, Device dev) {
  return constant(TensorData::from<int64_t>(v, Shape{static_cast<int64_t>(v.size())}), dev);
}

TensorData host(const Tn& t) { return Dispatch::to_data(t.handle()); }

std::vector<int64_t> host_ints(const Tn& t) {
  TensorData d = host(t);
  std::vector<int64_t> out(static_cast<size_t>(d.numel()));
  convert_elements(d.bytes().data(), d.dtype(), out.data(), DType::I64, out.size());
  return out;
}

std::vector<double> host_floats(const Tn& t) {
  TensorData d = host(t);
  std::vector<double> out(static_cast<size_t>(d.numel()));
  convert_elements(d.bytes().data(), d.dtype(), out.data(), DType::F64, out.size());
  return out;
}

Tn cast(const Tn& t, DType to) { return t.cast(to); }

Tn reshape(const Tn& t, const Dims& shape) {
  if (t.shape().dims() == shape) return t;
  return t.reshape(Shape(shape));
}

Tn permute(const Tn& t, const Dims& order) {
  bool same = true;
  for (size_t i = 0; i < order.size(); ++i) same = same && order[i] == static_cast<int64_t>(i);
  return same ? t : t.permute(order);
}

Tn expand(const Tn& t, const Dims& shape) {
  if (t.shape().dims() == shape) return t;
  check_size(shape, t.dtype());
  return t.expand(Shape(shape));
}

Tn unsqueeze(const Tn& t, int64_t axis) {
  Dims d = t.shape().dims();
  d.insert(static_cast<size_t>(axis), 1);
  return reshape(t, d);
}

Tn slice_axis(const Tn& t, int64_t axis, int64_t start, int64_t end, int64_t step) {
  const int64_t n = t.shape()[static_cast<size_t>(axis)];
  const int64_t rank = t.rank();
  if (step > 0) {
    if (start < 0) start += n;
    if (end < 0) end += n;
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, 0, n);
    if (start == 0 && end == n && step == 1) return t;
    OpAttrs a;
    a.dims = Dims(static_cast<size_t>(rank), 0);
    a.ends = t.shape().dims();
    a.steps = Dims(static_cast<size_t>(rank), 1);
    a.dims[static_cast<size_t>(axis)] = start;
    a.ends[static_cast<size_t>(axis)] = std::max(start, end);
    a.steps[static_cast<size_t>(axis)] = step;
    return op(OpCode::Slice, std::move(a), {t});
  }
  // A negative step: the same elements as a positive-step slice of the flipped axis.
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, -1, n - 1);
  end = std::clamp<int64_t>(end, -1, n - 1);
  Tn f = t.flip({axis});
  // Index i of t is index n - 1 - i of f.
  return slice_axis(f, axis, n - 1 - start, std::max(n - 1 - start, n - 1 - end), -step);
}

Tn cat(const std::vector<Tn>& parts, int64_t axis) {
  if (parts.size() == 1) return parts[0];
  OpAttrs a;
  a.dim = axis;
  return op(OpCode::Cat, std::move(a), parts);
}

Tn reduce(OpCode c, const Tn& t, const Dims& axes, bool keep) {
  return t.reduce(c, axes, keep);
}

Tn where(const Tn& c, const Tn& a, const Tn& b) { return c.select(a, b); }

Tn scalar_of(const Tn& t, double v) { return t.scalar(v); }

Dims broadcast_dims(const Dims& a, const Dims& b) {
  const size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1)
      throw ShapeError("[onnx] shapes " + Shape(a).to_string() + " and " + Shape(b).to_string() +
                       " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int64_t norm_axis(const Ctx& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Dims dims_of(const Tn& t) { return t.shape().dims(); }

}  // namespace ember::onnx::detail
