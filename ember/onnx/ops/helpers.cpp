// The rank-erased helpers of ops/context.h and Ctx's accessors.
#include <algorithm>
#include <limits>

#include "ember/core/error.h"
#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

template <Backend B>
const RValue<B>& Ctx<B>::value(size_t k) const {
  if (k >= in_.size() || in_[k].kind == Value::Kind::None)
    fail("input " + std::to_string(k) + " is required");
  return in_[k];
}

template <Backend B>
const Dyn<B>& Ctx<B>::in(size_t k) const {
  const RValue<B>& v = value(k);
  if (v.kind != Value::Kind::Tensor) fail("input " + std::to_string(k) + " must be a tensor");
  return v.t;
}

template <Backend B>
std::vector<int64_t> Ctx<B>::ints(size_t k) const {
  const Dyn<B>& t = in(k);
  if (!is_int(t.dtype()) && t.dtype() != DType::Bool)
    fail("input " + std::to_string(k) + " must be an integer tensor, it is " +
         std::string(name(t.dtype())));
  return host_ints(t);
}

template <Backend B>
std::vector<double> Ctx<B>::floats(size_t k) const {
  return host_floats(in(k));
}

namespace {
template <Backend B>
const Attribute* typed(const Ctx<B>& c, std::string_view n, Attribute::Type t) {
  const Attribute* a = c.node().attr(n);
  if (a && a->type != t)
    c.fail("attribute " + std::string(n) + " is " + std::string(name(a->type)) + ", expected " +
           std::string(name(t)));
  return a;
}
}  // namespace

template <Backend B>
int64_t Ctx<B>::attr_i(std::string_view n, int64_t def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Int);
  return a ? a->i : def;
}
template <Backend B>
double Ctx<B>::attr_f(std::string_view n, double def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Float);
  return a ? a->f : def;
}
template <Backend B>
std::string Ctx<B>::attr_s(std::string_view n, std::string def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::String);
  return a ? a->s : def;
}
template <Backend B>
std::vector<int64_t> Ctx<B>::attr_ints(std::string_view n, std::vector<int64_t> def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Ints);
  return a ? a->ints : def;
}
template <Backend B>
std::vector<double> Ctx<B>::attr_floats(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Floats);
  return a ? a->floats : std::vector<double>{};
}
template <Backend B>
const TensorData* Ctx<B>::attr_tensor(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Tensor);
  return a && !a->tensors.empty() ? &a->tensors[0] : nullptr;
}
template <Backend B>
DType Ctx<B>::attr_dtype(std::string_view n, DType def) const {
  if (!has_attr(n)) return def;
  const int64_t code = attr_i(n, 0);
  auto t = dtype_of_onnx(static_cast<int32_t>(code));
  if (!t)
    fail("attribute " + std::string(n) + ": element type " +
         std::string(onnx_type_name(static_cast<int32_t>(code))) + " has no ember dtype");
  return *t;
}

template <Backend B>
const Graph& Ctx<B>::attr_graph(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Type::Graph);
  if (!a || a->graphs.empty()) fail("attribute " + std::string(n) + " (a graph) is required");
  return *a->graphs[0];
}

template <Backend B>
void Ctx<B>::fail(const std::string& msg) const {
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

template <Backend B>
Dyn<B> op(OpCode c, OpAttrs a, const std::vector<Dyn<B>>& in) {
  std::vector<typename B::Handle> hs;
  hs.reserve(in.size());
  for (const Dyn<B>& t : in) hs.push_back(t.handle());
  if (hs.empty()) throw ValueError("[onnx] internal: op without inputs");
  Op o{c, std::move(a)};
  if (t_max_tensor_bytes != std::numeric_limits<int64_t>::max()) {
    // The output's shape, checked before the op allocates it (apply validates it again).
    std::vector<const TensorMeta*> metas;
    for (const auto& h : hs) metas.push_back(&B::meta(h));
    Op probe = o;
    const TensorMeta out = infer(probe, metas);
    check_size(out.shape.dims(), out.dtype);
  }
  return Dyn<B>(apply<B>(std::move(o), std::span<typename B::Handle>(hs)));
}
template <Backend B>
Dyn<B> op(OpCode c, const std::vector<Dyn<B>>& in) {
  return op<B>(c, OpAttrs{}, in);
}

template <Backend B>
Dyn<B> constant(const TensorData& d, Device dev) {
  return Dyn<B>(B::from_data(d, dev));
}

template <Backend B>
Dyn<B> full(const Dims& shape, double v, DType t, Device dev) {
  check_size(shape, t);
  return Dyn<B>::full(Shape(shape), Scalar(v), t, dev);
}

template <Backend B>
Dyn<B> int_tensor(const std::vector<int64_t>& v, Device dev) {
  return constant<B>(TensorData::from<int64_t>(v, Shape{static_cast<int64_t>(v.size())}), dev);
}

template <Backend B>
TensorData host(const Dyn<B>& t) {
  return B::to_data(t.handle());
}

template <Backend B>
std::vector<int64_t> host_ints(const Dyn<B>& t) {
  TensorData d = host(t);
  std::vector<int64_t> out(static_cast<size_t>(d.numel()));
  convert_elements(d.bytes().data(), d.dtype(), out.data(), DType::I64, out.size());
  return out;
}

template <Backend B>
std::vector<double> host_floats(const Dyn<B>& t) {
  TensorData d = host(t);
  std::vector<double> out(static_cast<size_t>(d.numel()));
  convert_elements(d.bytes().data(), d.dtype(), out.data(), DType::F64, out.size());
  return out;
}

template <Backend B>
Dyn<B> cast(const Dyn<B>& t, DType to) {
  return t.cast(to);
}

template <Backend B>
Dyn<B> reshape(const Dyn<B>& t, const Dims& shape) {
  if (t.shape().dims() == shape) return t;
  return t.reshape(Shape(shape));
}

template <Backend B>
Dyn<B> permute(const Dyn<B>& t, const Dims& order) {
  bool same = true;
  for (size_t i = 0; i < order.size(); ++i) same = same && order[i] == static_cast<int64_t>(i);
  return same ? t : t.permute(order);
}

template <Backend B>
Dyn<B> expand(const Dyn<B>& t, const Dims& shape) {
  if (t.shape().dims() == shape) return t;
  check_size(shape, t.dtype());
  return t.expand(Shape(shape));
}

template <Backend B>
Dyn<B> unsqueeze(const Dyn<B>& t, int64_t axis) {
  Dims d = t.shape().dims();
  d.insert(static_cast<size_t>(axis), 1);
  return reshape(t, d);
}

template <Backend B>
Dyn<B> slice_axis(const Dyn<B>& t, int64_t axis, int64_t start, int64_t end, int64_t step) {
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
    return op<B>(OpCode::Slice, std::move(a), {t});
  }
  // A negative step: the same elements as a positive-step slice of the flipped axis.
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, -1, n - 1);
  end = std::clamp<int64_t>(end, -1, n - 1);
  Dyn<B> f = t.flip({axis});
  // Index i of t is index n - 1 - i of f.
  return slice_axis(f, axis, n - 1 - start, std::max(n - 1 - start, n - 1 - end), -step);
}

template <Backend B>
Dyn<B> cat(const std::vector<Dyn<B>>& parts, int64_t axis) {
  if (parts.size() == 1) return parts[0];
  OpAttrs a;
  a.dim = axis;
  return op<B>(OpCode::Cat, std::move(a), parts);
}

template <Backend B>
Dyn<B> reduce(OpCode c, const Dyn<B>& t, const Dims& axes, bool keep) {
  return t.reduce(c, axes, keep);
}

template <Backend B>
Dyn<B> where(const Dyn<B>& c, const Dyn<B>& a, const Dyn<B>& b) {
  return c.select(a, b);
}

template <Backend B>
Dyn<B> scalar_of(const Dyn<B>& t, double v) {
  return t.scalar(v);
}

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

template <Backend B>
int64_t norm_axis(const Ctx<B>& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

template <Backend B>
Dims dims_of(const Dyn<B>& t) {
  return t.shape().dims();
}

// ---- instantiations for the runtime's backend and for generated code that trains --------
#define EMBER_ONNX_HELPERS(B)                                                       \
  template class Ctx<B>;                                                            \
  template Dyn<B> op<B>(OpCode, OpAttrs, const std::vector<Dyn<B>>&);               \
  template Dyn<B> op<B>(OpCode, const std::vector<Dyn<B>>&);                        \
  template Dyn<B> constant<B>(const TensorData&, Device);                           \
  template Dyn<B> full<B>(const Dims&, double, DType, Device);                      \
  template Dyn<B> int_tensor<B>(const std::vector<int64_t>&, Device);               \
  template TensorData host<B>(const Dyn<B>&);                                       \
  template std::vector<int64_t> host_ints<B>(const Dyn<B>&);                        \
  template std::vector<double> host_floats<B>(const Dyn<B>&);                       \
  template Dyn<B> cast<B>(const Dyn<B>&, DType);                                    \
  template Dyn<B> reshape<B>(const Dyn<B>&, const Dims&);                           \
  template Dyn<B> permute<B>(const Dyn<B>&, const Dims&);                           \
  template Dyn<B> expand<B>(const Dyn<B>&, const Dims&);                            \
  template Dyn<B> unsqueeze<B>(const Dyn<B>&, int64_t);                             \
  template Dyn<B> slice_axis<B>(const Dyn<B>&, int64_t, int64_t, int64_t, int64_t); \
  template Dyn<B> cat<B>(const std::vector<Dyn<B>>&, int64_t);                      \
  template Dyn<B> reduce<B>(OpCode, const Dyn<B>&, const Dims&, bool);              \
  template Dyn<B> where<B>(const Dyn<B>&, const Dyn<B>&, const Dyn<B>&);            \
  template Dyn<B> scalar_of<B>(const Dyn<B>&, double);                              \
  template int64_t norm_axis<B>(const Ctx<B>&, int64_t, int64_t);                   \
  template Dims dims_of<B>(const Dyn<B>&);
EMBER_ONNX_HELPERS(Dispatch)
EMBER_ONNX_HELPERS(Autodiff<Dispatch>)
#undef EMBER_ONNX_HELPERS

}  // namespace ember::onnx::detail
