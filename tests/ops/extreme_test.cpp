// Every op of the op table, driven with degenerate and extreme inputs and attributes: zero-size
// tensors, rank 0 and high ranks, dims whose product overflows int64, sizes no machine can
// allocate, negative and huge dims, steps, windows and indices. The cases come from each op's
// table row (family, arity, accepted dtypes), so a new op is covered without touching this file.
//
// Each call must either work, giving an output whose meta is what `infer` said and whose data
// reads back whole, or throw an ember::Error. A crash, a hang (ctest's timeout) or any other
// exception fails. Runs on Dispatch (with and without the IR round trip) and, for
// differentiable ops, through Autodiff<Dispatch> with a backward pass.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember {
namespace {

using B = Dispatch;
using AD = Autodiff<Dispatch>;
using H = B::Handle;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kUnallocatable = int64_t{1} << 46;  // elements: bytes beyond any address space
constexpr int64_t kHalfOverflow = int64_t{1} << 40;   // two of them overflow int64
constexpr int64_t kReadable = int64_t{1} << 22;       // outputs up to this size are read back

// An input: a shape and dtype, values 0, 1, 2, ... cast (or, for indices, given).
struct Input {
  Input(Shape s, DType t, std::vector<int64_t> v = {})
      : shape(std::move(s)), dtype(t), values(std::move(v)) {}
  Shape shape;
  DType dtype;
  std::vector<int64_t> values;  // when set: these (cycled) instead of 0, 1, 2, ...
};

struct Case {
  Op op;
  std::vector<Input> in;
};

std::string describe(const Case& c) {
  std::string s(name(c.op.code));
  s += " inputs";
  for (const auto& i : c.in) {  // appends, not " " + ...: GCC 12's -Wrestrict misfires on that
    s += ' ';
    s += i.shape.to_string();
    s += ':';
    s += name(i.dtype);
  }
  const auto& a = c.op.attrs;
  s += " shape=" + Shape(a.shape).to_string() + " dims=" + Shape(a.dims).to_string() +
       " ends=" + Shape(a.ends).to_string() + " steps=" + Shape(a.steps).to_string() +
       " dim=" + std::to_string(a.dim) + " dtype=" + std::string(name(a.dtype)) +
       " kernel=" + Shape(a.window.kernel).to_string() +
       " stride=" + Shape(a.window.stride).to_string() +
       " padding=" + Shape(a.window.padding).to_string() +
       " dilation=" + Shape(a.window.dilation).to_string() +
       " groups=" + std::to_string(a.window.groups);
  return s;
}

TensorData make_data(const Input& in) {
  int64_t n = in.shape.numel();
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = in.values.empty() ? i % 5 : in.values[i % in.values.size()];
  return TensorData::from<int64_t>(v, in.shape).convert(in.dtype);
}

// ---- the pools of shapes, dtypes and attributes ---------------------------------------------

Shape ones_rank(size_t r) { return Shape(Dims(r, 1)); }

std::vector<Shape> small_shapes() {
  return {Shape{},      Shape{0},    Shape{1},       Shape{3},       Shape{0, 3},
          Shape{3, 0},  Shape{2, 3}, Shape{2, 1, 3}, Shape{2, 0, 1}, Shape{1, 2, 1, 1, 1, 1, 1, 2},
          ones_rank(20)};
}

std::vector<DType> dtypes_for(Accepts a) {
  switch (a) {
    case Accepts::Float:
      return {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64};
    case Accepts::Numeric:
      return {DType::F32, DType::I64, DType::I8, DType::U8, DType::Bool};
    case Accepts::Integer:
      return {DType::I64, DType::I32, DType::U8, DType::F32};
    case Accepts::Bool:
      return {DType::Bool, DType::F32};
    default:
      return {DType::F32, DType::I64, DType::Bool, DType::F16};
  }
}

std::vector<Dims> dim_lists() {
  return {{}, {0}, {-1}, {1}, {7}, {kMax}, {kMin}, {0, 0}, {0, 1}, {1, 0}, {-2, -1}};
}
std::vector<int64_t> dim_values() { return {0, -1, 1, 2, 7, kMax, kMin}; }

std::vector<Dims> target_shapes() {
  return {{},
          {0},
          {-1},
          {3, -1},
          {-1, -1},
          {kHalfOverflow, kHalfOverflow},
          {kMax, 3},
          {kMax},
          {kMin},
          {-5},
          {0, kMax},
          {0, kHalfOverflow, kHalfOverflow},
          {kUnallocatable},
          {2, 3},
          {6},
          {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}};
}

std::vector<int64_t> index_values() { return {0, 1, -1, 2, kMax, kMin, 3}; }

// Window variants: a plain window, then one field at a time pushed to an extreme.
std::vector<Window> windows() {
  std::vector<Window> out;
  Window base;
  base.kernel = {2};
  out.push_back(base);
  for (int64_t k : {int64_t{0}, int64_t{-1}, int64_t{1}, kMax, kUnallocatable}) {
    Window w = base;
    w.kernel = {k};
    out.push_back(w);
  }
  for (int64_t s : {int64_t{0}, int64_t{-3}, kMax}) {
    Window w = base;
    w.stride = {s};
    out.push_back(w);
  }
  for (int64_t p : {int64_t{-1}, int64_t{1}, kMax, kMax / 2, kUnallocatable / 2}) {
    Window w = base;
    w.padding = {p};
    out.push_back(w);
    w.kernel = {kUnallocatable};  // a huge window that stays legal for pools: padding <= k / 2
    out.push_back(w);
  }
  for (int64_t d : {int64_t{0}, kMax, kMax / 2, kUnallocatable}) {
    Window w = base;
    w.dilation = {d};
    out.push_back(w);
  }
  for (int64_t g : {int64_t{0}, int64_t{-1}, int64_t{2}, kMax}) {
    Window w = base;
    w.groups = g;
    out.push_back(w);
  }
  for (int64_t o : {int64_t{1}, int64_t{-1}, kMax}) {
    Window w = base;
    w.stride = {2};
    w.output_padding = {o};
    out.push_back(w);
  }
  Window c = base;
  c.ceil_mode = true;
  c.stride = {kMax};
  out.push_back(c);
  c.stride = {3};
  c.padding = {1};
  out.push_back(c);
  Window many = base;
  many.kernel = {1, 1, 1, 1};  // more entries than spatial dims
  out.push_back(many);
  return out;
}

std::vector<Shape> spatial_shapes() {
  return {Shape{1, 1, 3},       Shape{2, 2, 5}, Shape{1, 1, 0},
          Shape{0, 1, 4},       Shape{1, 0, 4}, Shape{1, 2, 4, 4},
          Shape{1, 1, 2, 2, 2}, Shape{1, 1},    Shape{1, 1, 1, 1, 1, 1}};
}

// ---- cases per family -----------------------------------------------------------------------

void add(std::vector<Case>& out, OpCode c, OpAttrs a, std::vector<Input> in) {
  out.push_back({Op{c, std::move(a)}, std::move(in)});
}

std::vector<Case> create_cases(OpCode c) {
  std::vector<Case> out;
  for (const Dims& s : target_shapes())
    for (DType t : {DType::F32, DType::I64, DType::Bool}) {
      OpAttrs a;
      a.shape = s;
      a.dtype = t;
      a.scalar = Scalar(0.5);
      a.scalar2 = Scalar(1.5);
      add(out, c, a, {});
    }
  for (double v : {std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::infinity(), -1.0, 2.0, 1e300}) {
    OpAttrs a;
    a.shape = {3};
    a.scalar = Scalar(v);
    a.scalar2 = Scalar(v);
    for (DType t : {DType::F32, DType::I8, DType::F16}) {
      a.dtype = t;
      add(out, c, a, {});
    }
  }
  return out;
}

std::vector<Case> unary_cases(OpCode c, Accepts acc) {
  std::vector<Case> out;
  for (const Shape& s : small_shapes())
    for (DType t : dtypes_for(acc)) add(out, c, {}, {{s, t}});
  return out;
}

// Shapes for elementwise ops with broadcasting: empty, rank 0 to 16, broadcastable or not.
std::vector<Shape> elementwise_shapes() {
  return {Shape{},     Shape{0},    Shape{3},       Shape{0, 3},
          Shape{3, 0}, Shape{2, 3}, Shape{2, 1, 1}, ones_rank(16)};
}

std::vector<Case> binary_cases(OpCode c, Accepts acc, int arity) {
  std::vector<Case> out;
  const std::vector<Shape> shapes = elementwise_shapes();
  const auto types = dtypes_for(acc);
  for (const Shape& a : shapes)
    for (const Shape& b : shapes)
      for (size_t t = 0; t < types.size(); ++t) {
        DType ta = types[t], tb = t % 2 ? types[0] : types[t];  // some mismatched
        if (arity == 3)
          add(out, c, {}, {{a, DType::Bool}, {b, ta}, {a, tb}});
        else
          add(out, c, {}, {{a, ta}, {b, tb}});
      }
  return out;
}

std::vector<Case> cast_cases(OpCode c) {
  std::vector<Case> out;
  for (const Shape& s : small_shapes())
    for (int t = 0; t < kNumDTypes; ++t) {
      OpAttrs a;
      a.dtype = static_cast<DType>(t);
      add(out, c, a, {{s, DType::F32}});
      add(out, c, a, {{s, DType::I64, {kMax, kMin, -1, 300}}});
    }
  return out;
}

std::vector<Case> reduce_cases(OpCode c, Accepts acc) {
  std::vector<Case> out;
  for (const Shape& s : small_shapes())
    for (DType t : dtypes_for(acc))
      for (const Dims& d : dim_lists())
        for (bool keep : {false, true}) {
          OpAttrs a;
          a.dims = d;
          a.flag = keep;
          add(out, c, a, {{s, t}});
        }
  return out;
}

std::vector<Case> dim_cases(OpCode c, Accepts acc) {  // scans, sorts, softmax
  std::vector<Case> out;
  for (const Shape& s : small_shapes())
    for (DType t : dtypes_for(acc))
      for (int64_t d : dim_values())
        for (bool flag : {false, true}) {
          OpAttrs a;
          a.dim = d;
          a.flag = flag;
          add(out, c, a, {{s, t}});
        }
  return out;
}

std::vector<Case> movement_cases(OpCode c) {
  std::vector<Case> out;
  const std::vector<Shape> shapes = {Shape{},     Shape{0},    Shape{6},
                                     Shape{2, 3}, Shape{0, 4}, ones_rank(12)};
  for (const Shape& s : shapes) {
    for (const Dims& t : target_shapes()) {
      OpAttrs a;
      a.shape = t;
      a.dims = t;  // Permute / Flip read dims
      add(out, c, a, {{s, DType::F32}});
    }
    for (const Dims& d : dim_lists()) {
      OpAttrs a;
      a.dims = d;
      add(out, c, a, {{s, DType::F32}});
    }
    // slices: starts, ends, steps at the extremes
    for (int64_t start : {int64_t{0}, int64_t{-1}, kMin, kMax})
      for (int64_t end : {int64_t{0}, int64_t{2}, kMin, kMax})
        for (int64_t step : {int64_t{1}, int64_t{0}, int64_t{-1}, int64_t{2}, kMax, kMin}) {
          OpAttrs a;
          a.dims = {start};
          a.ends = {end};
          a.steps = {step};
          add(out, c, a, {{s, DType::I32}});
        }
  }
  return out;
}

std::vector<Case> index_cases(OpCode c) {
  std::vector<Case> out;
  const std::vector<Shape> shapes = {Shape{},     Shape{0},    Shape{3},
                                     Shape{2, 3}, Shape{0, 3}, Shape{3, 0}};
  const std::vector<std::vector<int64_t>> index_sets = {{0, 1}, {2, 0, 1}, index_values(),
                                                        {-1},   {kMax},    {kMin}};
  for (const Shape& x : shapes)
    for (const Shape& i : shapes)
      for (const auto& iv : index_sets)
        for (int64_t d : {int64_t{0}, int64_t{-1}, int64_t{1}, kMax, kMin})
          for (bool flag : {false, true}) {
            OpAttrs a;
            a.dim = d;
            a.flag = flag;
            switch (c) {
              case OpCode::Cat:
                if (iv.size() != 2 || flag) break;  // cat does not read indices
                add(out, c, a, {});
                add(out, c, a, {{x, DType::F32}});
                add(out, c, a, {{x, DType::F32}, {i, DType::F32}});
                add(out, c, a, {{x, DType::F32}, {i, DType::I64}, {x, DType::F32}});
                break;
              case OpCode::SliceAssign:
                if (iv.size() != 2 || flag) break;
                a.dims = {d};
                a.ends = {iv[1]};
                a.steps = {iv[0] == 0 ? 1 : iv[0]};
                add(out, c, a, {{x, DType::F32}, {i, DType::F32}});
                break;
              case OpCode::Gather:
              case OpCode::IndexSelect:
                add(out, c, a, {{x, DType::F32}, {i, DType::I64, iv}});
                add(out, c, a,
                    {{x, DType::F32}, {Shape{static_cast<int64_t>(iv.size())}, DType::I32, iv}});
                break;
              default:  // Scatter, IndexAdd: (x, indices, values)
                add(out, c, a, {{x, DType::F32}, {i, DType::I64, iv}, {i, DType::F32}});
                add(out, c, a,
                    {{x, DType::F32},
                     {Shape{static_cast<int64_t>(iv.size())}, DType::I64, iv},
                     {Shape{static_cast<int64_t>(iv.size())}, DType::F32}});
                break;
            }
          }
  return out;
}

// matmul: each element type for both operands; int_matmul: its 8-bit types in every pairing
// and a type it refuses
std::vector<Case> matmul_cases(OpCode c) {
  std::vector<Case> out;
  const std::vector<Shape> shapes = {Shape{},           Shape{3},    Shape{2, 3},    Shape{3, 2},
                                     Shape{0, 3},       Shape{3, 0}, Shape{2, 0, 3}, Shape{1, 3, 4},
                                     Shape{4, 1, 2, 3}, Shape{0, 0}};
  using Pair = std::pair<DType, DType>;
  const std::vector<Pair> types =
      c == OpCode::IntMatmul
          ? std::vector<Pair>{{DType::U8, DType::I8},
                              {DType::I8, DType::I8},
                              {DType::U8, DType::U8},
                              {DType::I8, DType::I64}}
          : std::vector<Pair>{
                {DType::F32, DType::F32}, {DType::I64, DType::I64}, {DType::F16, DType::F16}};
  for (const Shape& a : shapes)
    for (const Shape& b : shapes)
      for (const auto& [ta, tb] : types) add(out, c, {}, {{a, ta}, {b, tb}});
  return out;
}

std::vector<Case> spatial_cases(OpCode c) {
  std::vector<Case> out;
  const OpInfo& oi = info(c);
  for (const Shape& x : spatial_shapes())
    for (const Window& w : windows()) {
      OpAttrs a;
      a.window = w;
      std::vector<Input> in{{x, DType::F32}};
      if (oi.arity == 2) {  // conv weights, or the gradient of the output
        // int_conv: 8-bit types, and a pairing it refuses
        using Pair = std::pair<DType, DType>;
        const std::vector<Pair> types = c == OpCode::IntConv
                                            ? std::vector<Pair>{{DType::U8, DType::I8},
                                                                {DType::I8, DType::I8},
                                                                {DType::U8, DType::F32}}
                                            : std::vector<Pair>{{DType::F32, DType::F32}};
        for (const Shape& s :
             {Shape{1, 1, 2}, Shape{2, 1, 2}, Shape{1, 1, 2, 2}, x, Shape{0, 1, 2}})
          for (const auto& [tx, tw] : types) add(out, c, a, {{x, tx}, {s, tw}});
        continue;
      }
      for (const Dims& t : {Dims{}, Dims{1}, Dims{3}, Dims{kUnallocatable}, Dims{kMax}, Dims{0},
                            Dims{-2}, Dims{2, 2}, Dims{5, 5, 5}}) {
        a.shape = t;
        for (int m = 0; m < kNumInterpModes + 1; ++m) {
          a.interp = static_cast<InterpMode>(m);
          if (m > 0 && c != OpCode::Interpolate && c != OpCode::InterpolateBackward) break;
          add(out, c, a, in);
        }
      }
    }
  return out;
}

std::vector<Case> composite_cases(OpCode c, Accepts acc) {
  switch (c) {
    case OpCode::Mean:
    case OpCode::LogSumExp:
      return reduce_cases(c, acc);
    case OpCode::Softmax:
    case OpCode::LogSoftmax:
      return dim_cases(c, acc);
    case OpCode::ReluBackward:
    case OpCode::Lerp:
    case OpCode::Addcmul:
    case OpCode::AdaptiveStep: {  // elementwise on 2 or 3 broadcast inputs, extreme scalars
      std::vector<Case> out;
      const std::vector<Shape> shapes = elementwise_shapes();
      const auto types = dtypes_for(acc);
      const size_t arity = static_cast<size_t>(info(c).arity);
      for (const Shape& a : shapes)
        for (const Shape& b : shapes)
          for (size_t t = 0; t < types.size(); ++t) {
            DType ta = types[t], tb = t % 2 ? types[0] : types[t];  // some mismatched
            std::vector<Input> in{{a, ta}, {b, tb}};
            if (arity == 3) in.push_back({a, ta});
            add(out, c, {}, in);
          }
      for (double v : {0.0, 0.5, -1.0, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN()}) {
        OpAttrs a;
        a.scalar = Scalar(v);  // the weight, the value, the step
        a.scalar2 = Scalar(v);
        std::vector<Input> in(arity, Input{Shape{2, 3}, DType::F32});
        add(out, c, a, in);
      }
      return out;
    }
    case OpCode::IntMatmul:
      return matmul_cases(c);
    case OpCode::IntConv:
      return spatial_cases(c);
    case OpCode::Attention: {
      std::vector<Case> out;
      const std::vector<Shape> shapes = {Shape{2, 3},    Shape{0, 3},    Shape{2, 0},
                                         Shape{1, 2, 3}, Shape{1, 0, 3}, Shape{3}};
      for (const Shape& q : shapes)
        for (const Shape& k : shapes)
          for (bool causal : {false, true}) {
            OpAttrs a;
            a.scalar = Scalar(0.5);
            a.flag = causal;
            add(out, c, a, {{q, DType::F32}, {k, DType::F32}, {k, DType::F32}});
            add(out, c, a,
                {{q, DType::F32}, {k, DType::F32}, {k, DType::F32}, {Shape{1}, DType::Bool}});
            add(out, c, a, {{q, DType::F32}, {k, DType::F32}});
          }
      return out;
    }
    case OpCode::LayerNorm:
    case OpCode::RmsNorm: {  // x, gamma (and beta) of fitting and unfitting shapes, dims, eps
      std::vector<Case> out;
      const std::vector<Shape> xs = {Shape{2, 3}, Shape{0, 3}, Shape{2, 0}, Shape{3}, Shape{}};
      const std::vector<Shape> ws = {Shape{3}, Shape{0}, Shape{2, 3}, Shape{}, Shape{4}};
      const size_t arity = c == OpCode::LayerNorm ? 3 : 2;
      for (const Shape& x : xs)
        for (const Shape& w : ws)
          for (int64_t dim : {-1, 0, 1, -3, 2})
            for (double eps : {1e-5, 0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity()}) {
              OpAttrs a;
              a.dim = dim;
              a.scalar = Scalar(eps);
              std::vector<Input> in{{x, DType::F32}};
              for (size_t i = 1; i < arity; ++i) in.push_back({w, DType::F32});
              add(out, c, a, in);
              in[1] = {w, DType::F64};
              add(out, c, a, in);
            }
      return out;
    }
    default: {
      std::vector<Case> out = unary_cases(c, acc);
      for (double v : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN()}) {
        OpAttrs a;
        a.scalar = Scalar(v);  // softplus: beta, threshold
        a.scalar2 = Scalar(v);
        add(out, c, a, {{Shape{3}, DType::F32}});
      }
      return out;
    }
  }
}

std::vector<Case> cases_for(OpCode c) {
  const OpInfo& oi = info(c);
  switch (oi.family) {
    case OpFamily::Create:
      return create_cases(c);
    case OpFamily::Unary:
      return unary_cases(c, oi.accepts);
    case OpFamily::Binary:
    case OpFamily::Compare:
    case OpFamily::Where:
      return binary_cases(c, oi.accepts, oi.arity);
    case OpFamily::Cast:
      return cast_cases(c);
    case OpFamily::Reduce:
      return reduce_cases(c, oi.accepts);
    case OpFamily::Scan:
    case OpFamily::Sort:
      return dim_cases(c, oi.accepts);
    case OpFamily::Movement:
      return movement_cases(c);
    case OpFamily::Index:
      return index_cases(c);
    case OpFamily::Matmul:
      return matmul_cases(c);
    case OpFamily::Spatial:
      return spatial_cases(c);
    case OpFamily::Composite:
      return composite_cases(c, oi.accepts);
  }
  return {};
}

// ---- running a case -------------------------------------------------------------------------

// The output is what infer promised and its data reads back whole (when small enough to read).
template <class Bk>
void check_output(const Case& c, const typename Bk::Handle& h) {
  Op op = c.op;
  std::vector<TensorMeta> metas;
  for (const auto& i : c.in) metas.push_back({i.shape, i.dtype});
  std::vector<const TensorMeta*> ptrs;
  for (const auto& m : metas) ptrs.push_back(&m);
  TensorMeta want = infer(op, ptrs);
  ASSERT_EQ(Bk::meta(h), want) << describe(c);
  if (want.shape.numel() > kReadable) return;
  TensorData d = Bk::to_data(h);
  EXPECT_EQ(d.shape(), want.shape) << describe(c);
  EXPECT_EQ(d.dtype(), want.dtype) << describe(c);
  EXPECT_EQ(static_cast<int64_t>(d.bytes().size()),
            want.shape.numel() * int64_t(size_of(want.dtype)))
      << describe(c);
}

enum class Outcome { Worked, Refused, Failed };

// Runs the case on Dispatch: it works, or throws an ember::Error (refused); anything else fails.
Outcome run_plain(const Case& c) {
  try {
    std::vector<H> in;
    for (const auto& i : c.in) in.push_back(B::from_data(make_data(i), Device::cpu()));
    H out = in.empty() ? apply<B>(c.op, std::span<H>(in), Device::cpu())
                       : apply<B>(c.op, std::span<H>(in));
    check_output<B>(c, out);
    return Outcome::Worked;
  } catch (const Error&) {
    return Outcome::Refused;
  } catch (const std::exception& e) {
    ADD_FAILURE() << describe(c) << ": not an ember error: " << e.what();
  }
  return Outcome::Failed;
}

// Through Autodiff: float inputs require grad; the output (when float and small) is summed and
// backward runs.
void run_autodiff(const Case& c) {
  try {
    std::vector<AD::Handle> in;
    for (const auto& i : c.in) {
      AD::Handle h = AD::from_data(make_data(i), Device::cpu());
      in.push_back(is_float(i.dtype) ? AD::require_grad(h) : h);
    }
    AD::Handle out = in.empty() ? apply<AD>(c.op, std::span<AD::Handle>(in), Device::cpu())
                                : apply<AD>(c.op, std::span<AD::Handle>(in));
    const TensorMeta& m = AD::meta(out);
    if (!is_float(m.dtype) || m.shape.numel() > kReadable || !AD::is_require_grad(out)) return;
    Op sum{OpCode::Sum, {}};
    AD::Handle root = apply<AD>(sum, std::span<AD::Handle>(&out, 1));
    auto grads = AD::backward(root);
    for (size_t i = 0; i < in.size(); ++i) {
      const auto* g = AD::grad(grads, in[i]);
      if (!g) continue;
      EXPECT_EQ(B::meta(*g).shape, c.in[i].shape) << describe(c) << ": gradient of input " << i;
      B::to_data(*g);
    }
  } catch (const Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << describe(c) << " (autodiff): not an ember error: " << e.what();
  }
}

class Extreme : public ::testing::TestWithParam<int> {};

TEST_P(Extreme, WorksOrThrowsAnEmberError) {
  OpCode code = static_cast<OpCode>(GetParam());
  std::vector<Case> cases = cases_for(code);
  ASSERT_FALSE(cases.empty()) << name(code) << ": no cases for its family";
  int worked = 0, refused = 0;
  for (const Case& c : cases) {
    Outcome plain = run_plain(c);
    Dispatch::set_ir_check(true);
    Outcome ir = run_plain(c);
    Dispatch::set_ir_check(false);
    EXPECT_EQ(plain, ir) << describe(c) << ": the IR round trip changes the outcome";
    worked += plain == Outcome::Worked;
    refused += plain == Outcome::Refused;
  }
  if (info(code).differentiable)
    for (const Case& c : cases) run_autodiff(c);
  // Each op's cases hold both kinds: valid degenerate inputs and refused extremes.
  EXPECT_GT(worked, 0) << name(code) << ": no case worked";
  if (info(code).family != OpFamily::Cast) {  // every dtype casts to every dtype
    EXPECT_GT(refused, 0) << name(code) << ": no case was refused";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOp, Extreme, ::testing::Range(0, kNumOps),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(name(static_cast<OpCode>(p.param)));
                         });

}  // namespace
}  // namespace ember
