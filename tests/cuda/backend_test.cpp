// The CUDA backend against the CPU backend: every op it implements on random, non-contiguous
// (permuted, sliced, flipped), broadcast and zero-size inputs; the memory pool; cuBLASLt
// matmul; errors. Without a CUDA driver or GPU the GPU tests skip, saying so, and the
// registration is checked to stay away.
#include <gtest/gtest.h>

#include <random>

#include "ember/backend/apply.h"
#include "ember/backend/dispatch.h"
#include "ember/backends/cuda/cuda.h"
#include "ember/core/error.h"
#include "ember/tensor/tensor.h"

using namespace ember;

namespace {

using H = DispatchHandle;
const Device kGpu{DeviceKind::Cuda, 0};

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA driver/GPU: skipped (" << why << ")";
  }
  std::mt19937 rng_{42};

  TensorData random(Shape s, DType t, double lo = -3, double hi = 3) {
    std::vector<double> v(s.numel());
    std::uniform_real_distribution<double> f(lo, hi);
    std::uniform_int_distribution<int> i{int(lo), int(hi)}, b{0, 1};
    for (auto& x : v) x = t == DType::Bool ? b(rng_) : is_float(t) ? f(rng_) : i(rng_);
    return TensorData::from<double>(v, s).convert(t);
  }
};

H on(const TensorData& d, Device dev) { return Dispatch::from_data(d, dev); }
H run(Op op, std::vector<H> in, Device dev) {
  return in.empty() ? apply<Dispatch>(std::move(op), std::span<H>(), dev)
                    : apply<Dispatch>(std::move(op), std::span<H>(in));
}
H view(H h, const Op& op) { return run(op, {std::move(h)}, Dispatch::device(h)); }

Op permute(Dims d) {
  Op o{OpCode::Permute, {}};
  o.attrs.dims = std::move(d);
  return o;
}
Op flip(Dims d) {
  Op o{OpCode::Flip, {}};
  o.attrs.dims = std::move(d);
  return o;
}
Op slice(Dims starts, Dims ends, Dims steps) {
  Op o{OpCode::Slice, {}};
  o.attrs.dims = std::move(starts);
  o.attrs.ends = std::move(ends);
  o.attrs.steps = std::move(steps);
  return o;
}
Op expand(Shape s) {
  Op o{OpCode::Expand, {}};
  o.attrs.shape = s.dims();
  return o;
}

double tol(DType t) {
  return t == DType::F16 || t == DType::BF16 ? 2e-2 : t == DType::F64 ? 1e-12 : 2e-5;
}

// The same op on the same inputs, on the CPU and the GPU, with each input transformed by
// `layout` (a chain of views) first.
void expect_same(const Op& op, const std::vector<TensorData>& in,
                 const std::vector<std::vector<Op>>& layout, double rtol, double atol,
                 const std::string& what) {
  std::vector<H> c, g;
  for (size_t i = 0; i < in.size(); ++i) {
    H hc = on(in[i], Device::cpu()), hg = on(in[i], kGpu);
    if (i < layout.size())
      for (const Op& v : layout[i]) {
        hc = view(hc, v);
        hg = view(hg, v);
      }
    c.push_back(hc);
    g.push_back(hg);
  }
  TensorData want = Dispatch::to_data(run(op, c, Device::cpu()));
  TensorData got = Dispatch::to_data(run(op, g, kGpu));
  std::string why;
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_TRUE(got.all_close(want, rtol, atol, &why))
      << what << ": " << why << "\n got " << format_tensor(got) << "\nwant " << format_tensor(want);
}

// Layouts that give a [4, 6, 5] tensor: dense, permuted, sliced with steps, flipped,
// broadcast; `in` is the shape of the tensor the views start from.
struct Layout {
  std::string name;
  Shape in;
  std::vector<Op> ops;
};
std::vector<Layout> layouts() {
  return {{"dense", {4, 6, 5}, {}},
          {"permuted", {5, 4, 6}, {permute({1, 2, 0})}},
          {"sliced", {5, 12, 11}, {slice({1, 0, 1}, {5, 12, 11}, {1, 2, 2})}},
          {"flipped", {4, 6, 5}, {flip({0, 2})}},
          {"broadcast", {4, 6, 5}, {slice({0, 0, 0}, {4, 1, 5}, {1, 1, 1}), expand({4, 6, 5})}}};
}

const OpCode kFloatUnary[] = {
    OpCode::Neg,   OpCode::Abs,   OpCode::Sign,    OpCode::Exp,   OpCode::Log,  OpCode::Log2,
    OpCode::Sqrt,  OpCode::Rsqrt, OpCode::Recip,   OpCode::Sin,   OpCode::Cos,  OpCode::Tan,
    OpCode::Tanh,  OpCode::Erf,   OpCode::Sigmoid, OpCode::Floor, OpCode::Ceil, OpCode::Round,
    OpCode::Trunc, OpCode::IsNan, OpCode::IsInf};

TEST_F(CudaBackend, RegisteredWithDispatch) {
  auto devs = available_devices();
  EXPECT_NE(std::find(devs.begin(), devs.end(), kGpu), devs.end());
  EXPECT_EQ(Dispatch::device(on(random({2}, DType::F32), kGpu)), kGpu);
}

TEST_F(CudaBackend, RoundTripAndToDevice) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64, DType::I32,
                  DType::I16, DType::I8, DType::U8, DType::Bool}) {
    TensorData d = random({3, 7}, t);
    EXPECT_EQ(Dispatch::to_data(on(d, kGpu)), d) << name(t);
  }
  TensorData big = random({3, 1 << 20}, DType::F32);  // several staging chunks
  EXPECT_EQ(Dispatch::to_data(on(big, kGpu)), big);
  auto x = Tensor<Dispatch, 2>::from_data(random({2, 3}, DType::F32));
  auto y = x.to_device(kGpu);
  EXPECT_EQ(y.device(), kGpu);
  EXPECT_EQ(y.to_device(Device::cpu()).to_data(), x.to_data());
  TensorData empty = random({0, 4}, DType::F32);
  EXPECT_EQ(Dispatch::to_data(on(empty, kGpu)).shape(), empty.shape());
}

TEST_F(CudaBackend, Views) {
  for (auto& [name, in, ops] : layouts()) {
    TensorData d = random(in, DType::F32);
    H c = on(d, Device::cpu()), g = on(d, kGpu);
    for (const Op& v : ops) {
      c = view(c, v);
      g = view(g, v);
    }
    EXPECT_EQ(Dispatch::to_data(g), Dispatch::to_data(c)) << name;
    Op r{OpCode::Reshape, {}};
    r.attrs.shape = {-1};
    EXPECT_EQ(Dispatch::to_data(view(g, r)), Dispatch::to_data(view(c, r))) << name;
  }
}

TEST_F(CudaBackend, Unary) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    for (OpCode c : kFloatUnary)
      for (auto& [lname, in, ops] : layouts())
        expect_same(Op{c, {}}, {random(in, t)}, {ops}, tol(t), tol(t),
                    std::string(name(c)) + " " + std::string(name(t)) + " " + lname);
  for (DType t : {DType::I32, DType::I64, DType::I8})
    for (OpCode c : {OpCode::Neg, OpCode::Abs, OpCode::Sign, OpCode::BitwiseNot})
      expect_same(Op{c, {}}, {random(layouts()[1].in, t, -20, 20)}, {layouts()[1].ops}, 0, 0,
                  std::string(name(c)) + " " + std::string(name(t)));
  expect_same(Op{OpCode::LogicalNot, {}}, {random({4, 6, 5}, DType::Bool)}, {}, 0, 0,
              "logical_not");
  expect_same(Op{OpCode::Exp, {}}, {random({0, 3}, DType::F32)}, {}, 0, 0, "zero-size");
}

TEST_F(CudaBackend, InverseAndHyperbolicMath) {
  struct Case {
    OpCode op;
    double lo, hi;  // inside the domain
  };
  const Case cases[] = {{OpCode::Expm1, -3, 3},      {OpCode::Log1p, -0.9, 5},
                        {OpCode::Asin, -0.99, 0.99}, {OpCode::Acos, -0.99, 0.99},
                        {OpCode::Atan, -5, 5},       {OpCode::Sinh, -3, 3},
                        {OpCode::Cosh, -3, 3},       {OpCode::Asinh, -5, 5},
                        {OpCode::Acosh, 1, 6},       {OpCode::Atanh, -0.99, 0.99}};
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    for (const Case& c : cases)
      for (auto& [lname, in, ops] : layouts())
        expect_same(Op{c.op, {}}, {random(in, t, c.lo, c.hi)}, {ops}, tol(t), tol(t),
                    std::string(name(c.op)) + " " + std::string(name(t)) + " " + lname);
    expect_same(Op{OpCode::Atan2, {}}, {random(layouts()[1].in, t), random({6, 1}, t)},
                {layouts()[1].ops, {}}, tol(t), tol(t), "atan2 " + std::string(name(t)));
  }
  // Near 0, where exp(x) - 1 and log(1 + x) lose every digit.
  TensorData tiny = TensorData::from<float>({1e-7f, -3e-6f, 2e-5f, 0.0f}, Shape{4});
  expect_same(Op{OpCode::Expm1, {}}, {tiny}, {}, 1e-6, 0, "expm1 near 0");
  expect_same(Op{OpCode::Log1p, {}}, {tiny}, {}, 1e-6, 0, "log1p near 0");
}

TEST_F(CudaBackend, BinaryAndCompare) {
  const OpCode arith[] = {OpCode::Add,     OpCode::Sub,     OpCode::Mul,      OpCode::Div,
                          OpCode::Maximum, OpCode::Minimum, OpCode::Remainder};
  const OpCode cmp[] = {OpCode::Equal,     OpCode::NotEqual, OpCode::Less,
                        OpCode::LessEqual, OpCode::Greater,  OpCode::GreaterEqual};
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64}) {
    bool fl = is_float(t);
    for (auto& [lname, in, ops] : layouts()) {
      auto go = [&](OpCode c, double lo) {
        TensorData a = random(in, t, lo, 9), b = random({6, 1}, t, 1, 9);  // b broadcast
        expect_same(Op{c, {}}, {a, b}, {ops, {}}, fl ? tol(t) : 0, fl ? tol(t) : 0,
                    std::string(name(c)) + " " + std::string(name(t)) + " " + lname);
      };
      for (OpCode c : arith) go(c, -9);
      for (OpCode c : cmp) go(c, -9);
      if (fl) go(OpCode::Pow, 0.5);
    }
  }
  for (OpCode c : {OpCode::BitwiseAnd, OpCode::BitwiseOr, OpCode::BitwiseXor})
    expect_same(Op{c, {}}, {random({5, 4}, DType::I32, -50, 50), random({4}, DType::I32, -50, 50)},
                {}, 0, 0, std::string(name(c)));
  for (OpCode c : {OpCode::LogicalAnd, OpCode::LogicalOr, OpCode::LogicalXor})
    expect_same(Op{c, {}}, {random({5, 4}, DType::Bool), random({5, 4}, DType::Bool)}, {}, 0, 0,
                std::string(name(c)));
  expect_same(Op{OpCode::Add, {}}, {random({0, 4}, DType::F32), random({4}, DType::F32)}, {}, 0, 0,
              "zero-size");
}

TEST_F(CudaBackend, InPlaceReuse) {
  // A handle nobody else holds is reused: the result is still right.
  H g = on(random({1000}, DType::F32, -1, 1), kGpu);  // exp(exp(exp(x))) stays finite
  H c = on(Dispatch::to_data(g), Device::cpu());
  for (int i = 0; i < 3; ++i) {
    g = run(Op{OpCode::Exp, {}}, {std::move(g)}, kGpu);
    c = run(Op{OpCode::Exp, {}}, {std::move(c)}, Device::cpu());
  }
  std::string why;
  EXPECT_TRUE(Dispatch::to_data(g).all_close(Dispatch::to_data(c), 1e-5, 1e-5, &why)) << why;
}

TEST_F(CudaBackend, WhereAndCast) {
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::Bool})
    for (auto& [lname, in, ops] : layouts())
      expect_same(Op{OpCode::Where, {}},
                  {random(in, DType::Bool), random({4, 6, 5}, t), random({5}, t)}, {ops, {}, {}}, 0,
                  0, "where " + std::string(name(t)) + " " + lname);
  const DType all[] = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64,
                       DType::I32, DType::I16, DType::I8,   DType::U8,  DType::Bool};
  for (DType from : all)
    for (DType to : all) {
      Op op{OpCode::Cast, {}};
      op.attrs.dtype = to;
      // Values past the small ints' range check the saturating conversion.
      TensorData x = random(layouts()[3].in, from, is_float(from) ? -300 : -100, 300);
      expect_same(op, {x}, {layouts()[3].ops}, 0, 0,
                  "cast " + std::string(name(from)) + " -> " + std::string(name(to)));
    }
}

TEST_F(CudaBackend, Create) {
  for (DType t :
       {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::U8, DType::Bool}) {
    Op full{OpCode::Full, {}};
    full.attrs.shape = {3, 70};
    full.attrs.scalar = 2.5;
    full.attrs.dtype = t;
    expect_same(full, {}, {}, 0, 0, "full " + std::string(name(t)));
    Op ar{OpCode::Arange, {}};
    ar.attrs.shape = {100};
    ar.attrs.scalar = is_float(t) ? Scalar(-1.5) : Scalar(int64_t(-3));
    ar.attrs.scalar2 = is_float(t) ? Scalar(0.25) : Scalar(int64_t(2));
    ar.attrs.dtype = t;
    if (t != DType::Bool) expect_same(ar, {}, {}, tol(t), 0, "arange " + std::string(name(t)));
  }
  for (OpCode c : {OpCode::RandomUniform, OpCode::RandomNormal, OpCode::RandomBernoulli})
    for (DType t : {DType::F32, DType::F64, DType::I32}) {
      Op r{c, {}};
      r.attrs.shape = {1000};
      r.attrs.scalar = c == OpCode::RandomBernoulli ? 0.3 : -2.0;
      r.attrs.scalar2 = 5.0;
      r.attrs.seed = 0x123456789abcdefull;
      r.attrs.dtype = t;
      expect_same(r, {}, {}, 1e-6, 1e-6, std::string(name(c)) + " " + std::string(name(t)));
    }
}

TEST_F(CudaBackend, Reduce) {
  const OpCode ops[] = {OpCode::Sum, OpCode::Prod,   OpCode::Max,
                        OpCode::Min, OpCode::ArgMax, OpCode::ArgMin};
  const Dims dim_sets[] = {{}, {0}, {1}, {2}, {0, 2}, {1, 2}};
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I32, DType::I64})
    for (OpCode c : ops)
      for (const Dims& dims : dim_sets) {
        bool arg = c == OpCode::ArgMax || c == OpCode::ArgMin;
        if (arg && dims.size() != 1) continue;
        for (auto& [lname, in, views] : layouts()) {
          Op op{c, {}};
          op.attrs.dims = dims;
          op.attrs.flag = dims.size() == 1;  // keepdim
          double lo = c == OpCode::Prod ? 0.5 : -9, hi = c == OpCode::Prod ? 1.5 : 9;
          if (!is_float(t) && c == OpCode::Prod) lo = -2, hi = 2;
          expect_same(op, {random(in, t, lo, hi)}, {views}, is_float(t) ? tol(t) * 10 : 0,
                      is_float(t) ? tol(t) * 10 : 0,
                      std::string(name(c)) + " " + std::string(name(t)) + " dims " +
                          std::to_string(dims.size()) + " " + lname);
        }
      }
  // Long rows take the workgroup kernels, many short ones the thread-per-output kernel.
  for (OpCode c : ops) {
    Op op{c, {}};
    op.attrs.dims = {1};
    expect_same(op, {random({3, 5000}, DType::F32, 0.999, 1.001)}, {}, 1e-4, 1e-4,
                "long rows " + std::string(name(c)));
    op.attrs.dims = {0};
    expect_same(op, {random({300, 700}, DType::F32, 0.999, 1.001)}, {}, 1e-4, 1e-4,
                "across rows " + std::string(name(c)));
  }
  Op mx{OpCode::Max, {}};
  mx.attrs.dims = {1};
  expect_same(mx, {random({3, 300}, DType::Bool)}, {}, 0, 0, "max bool");
  Op s{OpCode::Sum, {}};
  s.attrs.dims = {1};
  expect_same(s, {random({3, 0}, DType::F32)}, {}, 0, 0, "sum over an empty dim");
}

// Few outputs with long rows take the split reduction (chunks in parallel, then a combining
// pass): whole tensors of large and odd sizes, rows that are vector-aligned or not, an inner
// dim, an offset view; every op and dtype class; NaN and ties across chunks.
TEST_F(CudaBackend, SplitReduce) {
  const OpCode ops[] = {OpCode::Sum, OpCode::Prod,   OpCode::Max,
                        OpCode::Min, OpCode::ArgMax, OpCode::ArgMin};
  struct Case {
    Shape shape;
    Dims dims;
    std::vector<Op> views;
    std::string name;
  };
  const Case cases[] = {
      {{(1 << 20) + 3}, {}, {}, "whole 1M+3"},
      {{5001}, {0}, {}, "5001"},
      {{4, 65536}, {1}, {}, "rows of 64K"},
      {{3, 30001}, {1}, {}, "odd rows"},
      {{2, 20003, 2}, {1}, {}, "inner dim"},
      {{3, 40001}, {}, {slice({1, 0}, {3, 40001}, {1, 1})}, "offset view, all dims"},
      {{200, 300}, {}, {permute({1, 0})}, "permuted, all dims"}};
  for (DType t :
       {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64, DType::I8})
    for (OpCode c : ops)
      for (const Case& k : cases) {
        bool arg = c == OpCode::ArgMax || c == OpCode::ArgMin;
        if (arg && k.dims.size() != 1) continue;
        if (c == OpCode::Prod && is_float(t) && k.shape.numel() > 200000) continue;
        Op op{c, {}};
        op.attrs.dims = k.dims;
        double lo = -9, hi = 9;
        if (c == OpCode::Prod) lo = is_float(t) ? 0.999 : -2, hi = is_float(t) ? 1.001 : 2;
        if (c == OpCode::Sum && is_float(t)) lo = 0.5, hi = 1.5;  // no cancellation
        bool half = t == DType::F16 || t == DType::BF16;
        double tl = !is_float(t) || arg ? 0 : half ? 3e-2 : 1e-4;
        expect_same(op, {random(k.shape, t, lo, hi)}, {k.views}, tl, tl,
                    std::string(name(c)) + " " + std::string(name(t)) + " " + k.name);
      }
  // NaN: max and min propagate it, argmax and argmin give the first one.
  std::vector<double> v(300007);
  std::uniform_real_distribution<double> f(-5, 5);
  for (double& e : v) e = f(rng_);
  v[250000] = NAN;
  v[123457] = NAN;
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (OpCode c : ops) {
      if (c == OpCode::Sum || c == OpCode::Prod) continue;
      Op op{c, {}};
      if (c == OpCode::ArgMax || c == OpCode::ArgMin) op.attrs.dims = {0};
      expect_same(op, {TensorData::from<double>(v, Shape{int64_t(v.size())}).convert(t)}, {}, 0, 0,
                  std::string(name(c)) + " with NaN " + std::string(name(t)));
    }
  // Bools: max and min.
  for (OpCode c : {OpCode::Max, OpCode::Min}) {
    Op op{c, {}};
    expect_same(op, {random({200003}, DType::Bool)}, {}, 0, 0, std::string(name(c)) + " bool");
    std::vector<double> ones(200003, 1.0);
    expect_same(op, {TensorData::from<double>(ones, Shape{200003}).convert(DType::Bool)}, {}, 0, 0,
                std::string(name(c)) + " all true");
  }
}

// Many dense rows of 2048 or more (a sum over the last dim): one chunk a row with 16-byte
// loads, every op and dtype class, keepdim, ties for the argument ops.
TEST_F(CudaBackend, DenseRowsReduce) {
  const OpCode ops[] = {OpCode::Sum, OpCode::Prod,   OpCode::Max,
                        OpCode::Min, OpCode::ArgMax, OpCode::ArgMin};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64})
    for (OpCode c : ops)
      for (int64_t len : {2048, 4104}) {
        Op op{c, {}};
        op.attrs.dims = {1};
        op.attrs.flag = len == 2048;  // keepdim
        bool arg = c == OpCode::ArgMax || c == OpCode::ArgMin;
        double lo = -9, hi = 9;
        if (c == OpCode::Prod) lo = is_float(t) ? 0.999 : -2, hi = is_float(t) ? 1.001 : 2;
        if (c == OpCode::Sum && is_float(t)) lo = 0.5, hi = 1.5;
        bool half = t == DType::F16 || t == DType::BF16;
        double tl = !is_float(t) || arg ? 0 : half ? 3e-2 : 1e-4;
        expect_same(
            op, {random({1500, len}, t, lo, hi)}, {}, tl, tl,
            std::string(name(c)) + " rows of " + std::to_string(len) + " " + std::string(name(t)));
      }
}

// A few rows of a million elements or more: softmax, log_softmax and logsumexp take the
// decomposition, whose reductions are split across the GPU.
TEST_F(CudaBackend, FewLongRowsDecompose) {
  for (OpCode c : {OpCode::Softmax, OpCode::LogSoftmax, OpCode::LogSumExp}) {
    Op op{c, {}};
    op.attrs.dim = 1;
    op.attrs.dims = {1};
    expect_same(op, {random({2, (1 << 20) + 5}, DType::F32, -20, 20)}, {}, 1e-4, 1e-6,
                std::string(name(c)) + " rows of 1M+5");
  }
  Op lse{OpCode::LogSumExp, {}};  // the whole tensor
  expect_same(lse, {random({1200, 1000}, DType::F32, -20, 20)}, {}, 1e-4, 1e-5,
              "logsumexp of 1.2M");
  expect_same(lse, {random({1200, 1000}, DType::BF16, -20, 20)}, {}, 2e-2, 2e-2,
              "logsumexp of 1.2M bf16");
}

// Dense copies (the driver's copy) of odd sizes and offsets: scatter copies an input that
// others still hold before writing into it.
TEST_F(CudaBackend, DenseCopies) {
  for (DType t : {DType::F32, DType::F16, DType::I8, DType::F64, DType::Bool})
    for (int64_t n : {1, 7, 4097, 100003}) {
      Op sc{OpCode::Scatter, {}};
      sc.attrs.dim = 1;
      TensorData idx = TensorData::from<double>({0, 0, 0}, Shape{3, 1}).convert(DType::I64);
      expect_same(
          sc, {random({4, n}, t), idx, random({3, 1}, t)},
          {{slice({1, 0}, {4, n}, {1, 1})}, {}, {}}, 0, 0,
          "scatter into an offset view of " + std::to_string(n) + " " + std::string(name(t)));
    }
}

TEST_F(CudaBackend, Scan) {
  for (OpCode c : {OpCode::CumSum, OpCode::CumProd, OpCode::CumMax, OpCode::CumMin})
    for (DType t : {DType::F32, DType::I64})
      for (int64_t dim : {0, 1, 2}) {
        Op op{c, {}};
        op.attrs.dim = dim;
        double lo = c == OpCode::CumProd ? 0.9 : -5, hi = c == OpCode::CumProd ? 1.1 : 5;
        if (!is_float(t) && c == OpCode::CumProd) lo = 1, hi = 2;
        expect_same(op, {random(layouts()[1].in, t, lo, hi)}, {layouts()[1].ops}, 1e-4, 1e-4,
                    std::string(name(c)) + " dim " + std::to_string(dim));
      }
}

TEST_F(CudaBackend, Matmul) {
  struct Case {
    Shape a, b;
    std::vector<Op> va, vb;
  };
  std::vector<Case> cases = {
      {{7, 5}, {5, 3}, {}, {}},
      {{64, 96}, {96, 80}, {}, {}},
      {{5, 7}, {3, 5}, {permute({1, 0})}, {permute({1, 0})}},  // both transposed
      {{2, 3, 7, 5}, {5, 4}, {}, {}},                          // broadcast b
      {{2, 1, 7, 5}, {3, 5, 4}, {}, {}},                       // broadcast both batch dims
      {{4, 6, 9},
       {9, 6},
       {slice({0, 0, 0}, {4, 6, 9}, {1, 1, 2})},
       {slice({0, 0}, {9, 6}, {2, 1})}},
      {{3, 7, 5}, {3, 5, 2}, {flip({0})}, {}},  // negative batch stride
      {{0, 5}, {5, 3}, {}, {}},
      {{4, 0}, {0, 3}, {}, {}},  // k = 0: zeros
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64, DType::I32})
    for (const Case& c : cases) {
      double tl = t == DType::F32 ? 1e-4 : t == DType::F64 ? 1e-10 : is_float(t) ? 3e-2 : 0;
      expect_same(
          Op{OpCode::Matmul, {}},
          {random(c.a, t, is_float(t) ? -1 : -5, is_float(t) ? 1 : 5),
           random(c.b, t, is_float(t) ? -1 : -5, is_float(t) ? 1 : 5)},
          {c.va, c.vb}, tl, tl,
          "matmul " + std::string(name(t)) + " " + c.a.to_string() + " x " + c.b.to_string());
    }
}

TEST_F(CudaBackend, PoolStaysFlat) {
  cuda::synchronize(0);
  auto run_cycles = [&](int n) {
    for (int i = 0; i < n; ++i) {
      H x = on(random({int64_t(1 + i % 7), 300}, DType::F32), kGpu);
      H y = run(Op{OpCode::Exp, {}}, {x}, kGpu);
      H z = run(Op{OpCode::Add, {}}, {x, y}, kGpu);
    }
    cuda::synchronize(0);
  };
  run_cycles(50);  // warm-up: every size class cached once
  cuda::MemoryStats before = cuda::memory_stats(0);
  run_cycles(3000);
  cuda::MemoryStats after = cuda::memory_stats(0);
  EXPECT_EQ(after.device_allocations, before.device_allocations);
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_GE(after.cache_hits - before.cache_hits, 3 * 3000);
  EXPECT_GE(after.peak_allocated_bytes, after.allocated_bytes);
  cuda::empty_cache(0);
  EXPECT_EQ(cuda::memory_stats(0).cached_bytes, 0);
}

TEST(CudaPool, SizeClasses) {
  EXPECT_EQ(cuda::DevicePool::round(1), 512u);
  EXPECT_EQ(cuda::DevicePool::round(513), 1024u);
  EXPECT_EQ(cuda::DevicePool::round((1 << 20) + 1), size_t(2) << 20);
  EXPECT_EQ(cuda::DevicePool::round(size_t(5) << 20), size_t(6) << 20);
}

TEST_F(CudaBackend, OutOfMemoryIsAMemoryError) {
  TensorData small = random({2}, DType::F32);
  Op full{OpCode::Full, {}};
  full.attrs.shape = {int64_t(1) << 48};  // 1 PiB of f32
  try {
    run(full, {}, kGpu);
    FAIL() << "no error";
  } catch (const MemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("[full]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Dispatch::to_data(on(small, kGpu)), small);  // still usable
}

TensorData indices(Shape s, int64_t n, DType t = DType::I64, uint32_t seed = 7) {
  std::mt19937 r(seed);
  std::vector<int64_t> v(s.numel());
  for (auto& k : v) k = std::uniform_int_distribution<int64_t>(0, n - 1)(r);
  return TensorData::from<int64_t>(v, s).convert(t);
}

TEST_F(CudaBackend, CatAndSliceAssign) {
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::Bool})
    for (int64_t dim : {0, 1, 2}) {
      Shape a{4, 6, 5}, b{4, 6, 5}, z{4, 6, 5};
      b[dim] = 3;
      z[dim] = 0;
      Op op{OpCode::Cat, {}};
      op.attrs.dim = dim;
      // A permuted, a flipped and a zero-length input.
      Shape pa{a[2], a[0], a[1]};  // permute({1, 2, 0}) of it is a
      expect_same(op, {random(pa, t), random(b, t), random(z, t), random(a, t)},
                  {{permute({1, 2, 0})}, {}, {}, layouts()[3].ops}, 0, 0,
                  "cat " + std::string(name(t)) + " dim " + std::to_string(dim));
    }
  for (DType t : {DType::F32, DType::I8, DType::BF16}) {
    Op op{OpCode::SliceAssign, {}};
    op.attrs.dims = {1, 0, 0};
    op.attrs.ends = {4, 6, 5};
    op.attrs.steps = {1, 2, 3};
    // x [4, 6, 5] gets values [3, 3, 2] at rows 1.., every 2nd column, every 3rd element;
    // values broadcast from [3, 1, 2].
    expect_same(op, {random({4, 6, 5}, t), random({3, 3, 2}, t)}, {layouts()[3].ops, {}}, 0, 0,
                "slice_assign " + std::string(name(t)));
    expect_same(op, {random({4, 6, 5}, t), random({3, 1, 2}, t)}, {{}, {expand({3, 3, 2})}}, 0, 0,
                "slice_assign broadcast " + std::string(name(t)));
  }
}

TEST_F(CudaBackend, GatherScatter) {
  for (DType t : {DType::F32, DType::F16, DType::I8, DType::I64, DType::Bool})
    for (DType ix : {DType::I64, DType::I32})
      for (int64_t dim : {0, 1, 2}) {
        std::string what =
            std::string(name(t)) + " " + std::string(name(ix)) + " dim " + std::to_string(dim);
        Shape xs{4, 6, 5}, is{3, 4, 5};  // indices smaller than x off dim, longer along it
        is[dim] = 7;
        Op g{OpCode::Gather, {}};
        g.attrs.dim = dim;
        expect_same(g, {random(layouts()[1].in, t), indices(is, xs[dim], ix)}, {layouts()[1].ops},
                    0, 0, "gather " + what);
        // Scatter: 7 positions into a dim of 4..6 elements, so targets repeat. Assign: the
        // last position wins; add: every value adds (small ints wrap as on the CPU).
        for (bool add : {false, true}) {
          if (add && t == DType::Bool) continue;
          Op sc{OpCode::Scatter, {}};
          sc.attrs.dim = dim;
          sc.attrs.flag = add;
          bool half = t == DType::F16 || t == DType::BF16;
          double tl = add && half ? 5e-2 : add && is_float(t) ? 1e-5 : 0;
          expect_same(sc, {random(xs, t), indices(is, xs[dim], ix), random(is, t, -100, 100)},
                      {layouts()[3].ops, {}, {}}, tl, tl,
                      (add ? "scatter add " : "scatter ") + what);
        }
      }
}

TEST_F(CudaBackend, IndexSelectAndAdd) {
  for (DType t : {DType::F32, DType::BF16, DType::I16, DType::I64, DType::Bool})
    for (int64_t dim : {0, 1, 2}) {
      std::string what = std::string(name(t)) + " dim " + std::to_string(dim);
      Shape xs{4, 6, 5};
      Op sel{OpCode::IndexSelect, {}};
      sel.attrs.dim = dim;
      expect_same(sel, {random(layouts()[1].in, t), indices({9}, xs[dim])}, {layouts()[1].ops}, 0,
                  0, "index_select " + what);
      Shape vs = xs;
      vs[dim] = 9;
      Op add{OpCode::IndexAdd, {}};
      add.attrs.dim = dim;
      // The CPU rounds bf16 after every add, the GPU once (an f32 accumulator).
      double rtol = t == DType::BF16 ? 5e-2 : is_float(t) ? 1e-5 : 0;
      double atol = t == DType::BF16 ? 0.15 : rtol;
      Shape pv{vs[2], vs[0], vs[1]};  // permute({1, 2, 0}) of it is vs
      expect_same(add, {random(xs, t), indices({9}, xs[dim], DType::I32), random(pv, t)},
                  {{}, {}, {permute({1, 2, 0})}}, rtol, atol, "index_add " + what);
    }
}

TEST_F(CudaBackend, BadIndicesAreIndexErrors) {
  H x = on(random({4, 3}, DType::F32), kGpu);
  H bad = on(TensorData::from<int64_t>({0, 5, 1}, Shape{3}), kGpu);
  auto expect_error = [&](Op op, std::vector<H> in, const std::string& want) {
    try {
      run(std::move(op), std::move(in), kGpu);
      FAIL() << "no error: " << want;
    } catch (const IndexError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  Op sel{OpCode::IndexSelect, {}};
  expect_error(sel, {x, bad}, "[index_select] index 5 out of range for dim 0 of size 4");
  Op add{OpCode::IndexAdd, {}};
  expect_error(add, {x, bad, on(random({3, 3}, DType::F32), kGpu)},
               "[index_add] index 5 out of range for dim 0 of size 4");
  H bad2 = on(TensorData::from<int64_t>({0, 1, -1, 2}, Shape{2, 2}), kGpu);
  Op g{OpCode::Gather, {}};
  g.attrs.dim = 1;
  expect_error(g, {x, bad2}, "[gather] index -1 out of range for dim 1 of size 3");
  for (bool flag : {false, true}) {
    Op sc{OpCode::Scatter, {}};
    sc.attrs.dim = 1;
    sc.attrs.flag = flag;
    expect_error(sc, {x, bad2, on(random({2, 2}, DType::F32), kGpu)},
                 "[scatter] index -1 out of range for dim 1 of size 3");
  }
  EXPECT_EQ(Dispatch::to_data(x).shape(), (Shape{4, 3}));  // the device is still usable
}

TEST_F(CudaBackend, Argsort) {
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I32, DType::I64, DType::U8})
    for (bool desc : {false, true})
      for (int64_t dim : {0, 1, 2}) {
        Op op{OpCode::ArgSort, {}};
        op.attrs.dim = dim;
        op.attrs.flag = desc;
        // Few distinct values: ties must keep their order (stable).
        expect_same(op, {random(layouts()[1].in, t, 0, 4)}, {layouts()[1].ops}, 0, 0,
                    "argsort " + std::string(name(t)) + (desc ? " desc" : "") + " dim " +
                        std::to_string(dim));
      }
  // Rows longer than one tile take the merge passes; NaN sorts last (first descending).
  for (int64_t n : {1000, 1025, 5000, 70000})
    for (bool desc : {false, true}) {
      TensorData d = random({3, n}, DType::F32, -50, 50);
      auto* p = reinterpret_cast<float*>(d.bytes().data());
      for (int64_t i = 0; i < 3 * n; i += 97) p[i] = NAN;
      for (int64_t i = 5; i < 3 * n; i += 31) p[i] = 1.0f;
      Op op{OpCode::ArgSort, {}};
      op.attrs.dim = 1;
      op.attrs.flag = desc;
      expect_same(op, {d}, {}, 0, 0, "argsort long " + std::to_string(n) + (desc ? " desc" : ""));
    }
}

TEST_F(CudaBackend, FusedSoftmax) {
  EXPECT_TRUE(Cuda::supports(OpCode::Softmax));
  EXPECT_TRUE(Cuda::supports(OpCode::LogSoftmax));
  EXPECT_TRUE(Cuda::supports(OpCode::LogSumExp));
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    for (OpCode c : {OpCode::Softmax, OpCode::LogSoftmax})
      for (int64_t dim : {0, 1, 2})
        for (auto& [lname, in, views] : layouts()) {
          Op op{c, {}};
          op.attrs.dim = dim;
          expect_same(op, {random(in, t, -10, 10)}, {views}, tol(t), tol(t),
                      std::string(name(c)) + " " + std::string(name(t)) + " dim " +
                          std::to_string(dim) + " " + lname);
        }
  // Rows of every register size and past it (re-read), inner dims with few and many rows.
  for (Shape s : {Shape{3, 100}, Shape{5, 1000}, Shape{2, 4096}, Shape{2, 9000}, Shape{2, 20000},
                  Shape{2, 70000}, Shape{1000, 3}, Shape{2, 300, 700}, Shape{3, 5000, 2}})
    for (OpCode c : {OpCode::Softmax, OpCode::LogSoftmax}) {
      Op op{c, {}};
      op.attrs.dim = 1;
      expect_same(op, {random(s, DType::F32, -20, 20)}, {}, 1e-5, 1e-6,
                  std::string(name(c)) + " " + s.to_string());
    }
  // The vector path (dense rows whose length is a multiple of 16 bytes), each dtype, every
  // register count, past it (the scalar path), an offset view on and off the vector alignment.
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    for (Shape s : {Shape{3, 72}, Shape{4, 256}, Shape{3, 4096}, Shape{2, 16384}, Shape{2, 32768},
                    Shape{2, 65536}, Shape{1, 65544}})
      for (OpCode c : {OpCode::Softmax, OpCode::LogSoftmax, OpCode::LogSumExp}) {
        Op op{c, {}};
        op.attrs.dim = 1;
        op.attrs.dims = {1};
        expect_same(op, {random(s, t, -20, 20)}, {}, tol(t), tol(t),
                    std::string(name(c)) + " vector " + std::string(name(t)) + " " + s.to_string());
      }
  for (int64_t first : {1, 8}) {
    Op op{OpCode::Softmax, {}};
    op.attrs.dim = 1;
    expect_same(op, {random({9, 1024}, DType::F32, -20, 20)},
                {{slice({first, 0}, {9, 1024}, {1, 1})}}, 1e-5, 1e-6,
                "softmax rows from " + std::to_string(first));
    expect_same(op, {random({5, 1025}, DType::F32, -20, 20)}, {{slice({0, 1}, {5, 1025}, {1, 1})}},
                1e-5, 1e-6, "softmax columns from 1");
  }
  // -inf, +inf and NaN in rows: the decomposition's results.
  for (int64_t len : {300, 512}) {  // the scalar and the vector path
    TensorData d = random({6, len}, DType::F32);
    auto* p = reinterpret_cast<float*>(d.bytes().data());
    for (int i = 0; i < len; ++i) p[i] = -INFINITY;  // a row of -inf
    p[len + 7] = INFINITY;
    p[2 * len + 9] = NAN;
    p[3 * len + 1] = -INFINITY;
    for (OpCode c : {OpCode::Softmax, OpCode::LogSoftmax, OpCode::LogSumExp}) {
      Op op{c, {}};
      op.attrs.dim = 1;
      op.attrs.dims = {1};
      expect_same(op, {d}, {}, 1e-5, 1e-6,
                  std::string(name(c)) + " with inf and NaN, rows of " + std::to_string(len));
    }
  }
  const Dims dim_sets[] = {{}, {0}, {1}, {2}, {0, 2}, {1, 2}};
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (const Dims& dims : dim_sets)
      for (bool keep : {false, true})
        for (auto& [lname, in, views] : layouts()) {
          Op op{OpCode::LogSumExp, {}};
          op.attrs.dims = dims;
          op.attrs.flag = keep;
          expect_same(op, {random(in, t, -10, 10)}, {views}, tol(t), tol(t),
                      "logsumexp " + std::string(name(t)) + " dims " + std::to_string(dims.size()) +
                          (keep ? " keepdim " : " ") + lname);
        }
  Op lse{OpCode::LogSumExp, {}};
  lse.attrs.dims = {1};
  expect_same(lse, {random({300, 20000}, DType::F32, -5, 5)}, {}, 1e-5, 1e-5, "logsumexp long");
  // Over an empty dim, logsumexp is an error on every device (as max is), fused or not.
  for (Device dev : {Device::cpu(), kGpu})
    EXPECT_THROW(run(lse, {on(random({3, 0}, DType::F32), dev)}, dev), ValueError)
        << dev.to_string();
}

TEST_F(CudaBackend, CompositesDecompose) {
  Op sm{OpCode::Softmax, {}};
  sm.attrs.dim = 1;
  expect_same(sm, {random({5, 33}, DType::F32)}, {{permute({1, 0}), permute({1, 0})}}, 1e-5, 1e-6,
              "softmax");
  Op mean{OpCode::Mean, {}};
  mean.attrs.dims = {0};
  expect_same(mean, {random({5, 33}, DType::F32)}, {}, 1e-5, 1e-6, "mean");
}

// Gelu and Silu run as one kernel (the decompositions' expressions): every layout, the float
// dtypes, NaN and infinities.
TEST_F(CudaBackend, FusedGeluSilu) {
  for (OpCode c : {OpCode::Gelu, OpCode::Silu})
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
      for (auto& [lname, in, views] : layouts())
        expect_same(Op{c, {}}, {random(in, t, -6, 6)}, {views}, tol(t), tol(t),
                    std::string(name(c)) + " " + std::string(name(t)) + " " + lname);
  std::vector<double> v = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e30, -1e30, 3.5};
  for (OpCode c : {OpCode::Gelu, OpCode::Silu})
    expect_same(Op{c, {}}, {TensorData::from<double>(v, Shape{8})}, {}, 1e-6, 1e-6,
                std::string(name(c)) + " special values");
}

// A one-element operand broadcast to a dense one keeps the vector path: either side, odd
// sizes (the tail), several dtypes, an offset dense view, both operands one element.
TEST_F(CudaBackend, ScalarOperands) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I8})
    for (OpCode c :
         {OpCode::Add, OpCode::Sub, OpCode::Mul, OpCode::Div, OpCode::Maximum, OpCode::Less})
      for (int64_t n : {1, 5, 4099}) {
        if (c == OpCode::Div && !is_float(t)) continue;
        std::string what =
            std::string(name(c)) + " " + std::string(name(t)) + " " + std::to_string(n);
        double lo = is_float(t) ? -3 : 1, hi = 3;
        TensorData x = random({n}, t, lo, hi), s1 = random({}, t, lo, hi);
        expect_same(Op{c, {}}, {x, s1}, {}, tol(t), tol(t), what + " x op s");
        expect_same(Op{c, {}}, {s1, x}, {}, tol(t), tol(t), what + " s op x");
        expect_same(Op{c, {}}, {random({1}, t, lo, hi), x}, {}, tol(t), tol(t), what + " [1]");
        expect_same(Op{c, {}}, {random({3, n}, t, lo, hi), s1}, {{slice({1, 0}, {3, n}, {1, 1})}},
                    tol(t), tol(t), what + " offset view");
        expect_same(Op{c, {}}, {s1, random({}, t, lo, hi)}, {}, tol(t), tol(t),
                    what + " both scalars");
      }
}

// ---- integer pow and the spatial ops: pooling, interpolate, unfold/fold, conv ---------------

TEST_F(CudaBackend, IntegerPow) {
  for (DType t : {DType::I64, DType::I32, DType::I16, DType::I8, DType::U8}) {
    bool u = t == DType::U8;
    // wrapping products (large exponents), negative exponents of 1, -1 and others
    TensorData a = random({6, 7}, t, u ? 0 : -4, 9), b = random({6}, t, u ? 0 : -3, 40);
    expect_same(Op{OpCode::Pow, {}}, {a, b}, {{permute({1, 0})}}, 0, 0,
                "pow " + std::string(name(t)));
  }
}

Window window(Dims k, Dims s = {}, Dims p = {}, Dims d = {}, bool ceil = false) {
  Window w;
  w.kernel = std::move(k);
  w.stride = std::move(s);
  w.padding = std::move(p);
  w.dilation = std::move(d);
  w.ceil_mode = ceil;
  return w;
}
Op spatial_op(OpCode c, const Window& w, Dims shape = {}) {
  Op o{c, {}};
  o.attrs.window = w;
  o.attrs.shape = std::move(shape);
  return o;
}
Dims spatial_dims(const Shape& s) {
  Dims d;
  for (size_t i = 2; i < s.rank(); ++i) d.push_back(s[i]);
  return d;
}
// The output shape of `op` on inputs of these shapes and dtype.
Shape out_shape(Op op, const std::vector<Shape>& in, DType t) {
  std::vector<TensorMeta> metas;
  for (const Shape& s : in) metas.push_back({s, t});
  std::vector<const TensorMeta*> mp;
  for (const TensorMeta& m : metas) mp.push_back(&m);
  return infer(op, mp).shape;
}
// Memory with the last two dims swapped, seen through a permute as shape `s`: the op's input
// is not row-major. Returns the stored shape and the view.
std::pair<Shape, std::vector<Op>> transposed(const Shape& s) {
  Dims d = s.dims(), order;
  for (size_t i = 0; i < d.size(); ++i) order.push_back(int64_t(i));
  std::swap(d[d.size() - 1], d[d.size() - 2]);
  std::swap(order[d.size() - 1], order[d.size() - 2]);
  return {Shape(d), {permute(order)}};
}

class CudaSpatial : public CudaBackend {
 protected:
  void same(const Op& op, const std::vector<Shape>& in, DType t, double rtol, double atol,
            const std::string& what, double lo = -3, double hi = 3) {
    for (bool strided : {false, true}) {
      std::vector<TensorData> data;
      std::vector<std::vector<Op>> lay;
      for (const Shape& s : in) {
        bool tr = strided && s.rank() >= 2;
        auto [stored, v] = tr ? transposed(s) : std::pair<Shape, std::vector<Op>>{s, {}};
        data.push_back(random(stored, t, lo, hi));
        lay.push_back(v);
      }
      expect_same(op, data, lay, rtol, atol,
                  what + " " + std::string(name(t)) + (strided ? " transposed" : ""));
    }
  }
};

double loose(DType t) {  // sums in another order (GEMM, atomics): f32 within 1e-4
  return t == DType::F32 ? 1e-4 : t == DType::F64 ? 1e-10 : 5e-2;
}

TEST_F(CudaSpatial, Pooling) {
  struct Case {
    std::string name;
    Shape x;
    Window w;
  };
  const Case cases[] = {
      {"1-d stride 2 pad 1 dilation 2", {2, 3, 11}, window({3}, {2}, {1}, {2})},
      {"2-d ceil mode", {2, 3, 9, 10}, window({3, 2}, {2, 2}, {1, 1}, {1, 1}, true)},
      {"2-d dilation", {1, 2, 7, 8}, window({3, 3}, {2, 1}, {1, 0}, {2, 1})},
      {"3-d ceil mode", {2, 2, 5, 6, 7}, window({2, 3, 3}, {1, 2, 2}, {1, 1, 0}, {1, 1, 1}, true)},
      {"zero-size batch", {0, 2, 5, 6}, window({2, 2})}};
  for (DType t : {DType::F32, DType::BF16})
    for (const Case& c : cases) {
      Op mp = spatial_op(OpCode::MaxPool, c.w);
      Shape os = out_shape(mp, {c.x}, t);
      same(mp, {c.x}, t, tol(t), tol(t), "max_pool " + c.name);
      same(spatial_op(OpCode::MaxPoolBackward, c.w), {c.x, os}, t, tol(t), tol(t),
           "max_pool_backward " + c.name);
      for (bool include : {true, false}) {
        Window w = c.w;
        w.dilation = {};
        w.count_include_pad = include;
        std::string what = c.name + (include ? "" : " exclude pad");
        Op ap = spatial_op(OpCode::AvgPool, w);
        Shape as = out_shape(ap, {c.x}, t);
        same(ap, {c.x}, t, tol(t), tol(t), "avg_pool " + what);
        same(spatial_op(OpCode::AvgPoolBackward, w, spatial_dims(c.x)), {as}, t, tol(t), tol(t),
             "avg_pool_backward " + what);
      }
    }
  for (DType t : {DType::F32, DType::F16})
    for (auto& [x, size] : std::vector<std::pair<Shape, Dims>>{{{2, 3, 10}, {4}},
                                                               {{2, 3, 7, 9}, {3, 5}},
                                                               {{1, 2, 5, 4, 6}, {2, 7, 3}},
                                                               {{0, 2, 4, 4}, {2, 2}}}) {
      Op op = spatial_op(OpCode::AdaptiveAvgPool, {}, size);
      Shape os = out_shape(op, {x}, t);
      same(op, {x}, t, tol(t), tol(t), "adaptive_avg_pool " + x.to_string());
      same(spatial_op(OpCode::AdaptiveAvgPoolBackward, {}, spatial_dims(x)), {os}, t, tol(t),
           tol(t), "adaptive_avg_pool_backward " + x.to_string());
    }
}

TEST_F(CudaSpatial, Interpolate) {
  struct Case {
    Shape x;
    Dims size;
  };
  const Case lin[] = {{{2, 3, 7}, {12}}, {{2, 3, 12}, {5}}, {{1, 2, 3, 4, 5}, {5, 4, 2}}};
  const Case two[] = {{{2, 3, 5, 6}, {9, 4}},
                      {{2, 2, 1, 5}, {3, 1}},
                      {{2, 3, 5, 6}, {5, 6}},
                      {{0, 3, 5, 6}, {7, 3}}};
  for (DType t : {DType::F32, DType::BF16})
    for (InterpMode m : {InterpMode::Nearest, InterpMode::Linear, InterpMode::Cubic})
      for (bool align : {false, true}) {
        if (m == InterpMode::Nearest && align) continue;
        std::vector<Case> cases(std::begin(two), std::end(two));
        if (m != InterpMode::Cubic) cases.insert(cases.end(), std::begin(lin), std::end(lin));
        for (const Case& c : cases) {
          std::string what = c.x.to_string() + " to " + Shape(c.size).to_string() + " mode " +
                             std::to_string(int(m)) + (align ? " align_corners" : "");
          Op op = spatial_op(OpCode::Interpolate, {}, c.size);
          op.attrs.interp = m;
          op.attrs.flag = align;
          Shape os = out_shape(op, {c.x}, t);
          same(op, {c.x}, t, loose(t), loose(t), "interpolate " + what);
          Op bop = spatial_op(OpCode::InterpolateBackward, {}, spatial_dims(c.x));
          bop.attrs.interp = m;
          bop.attrs.flag = align;
          same(bop, {os}, t, loose(t), loose(t), "interpolate_backward " + what);
        }
      }
}

TEST_F(CudaSpatial, UnfoldAndFold) {
  struct Case {
    Shape x;
    Window w;
  };
  const Case cases[] = {{{2, 3, 10}, window({3}, {2}, {1}, {2})},
                        {{2, 3, 7, 8}, window({3, 2}, {2, 1}, {1, 1}, {1, 2})},
                        {{1, 2, 4, 5, 6}, window({2, 2, 3}, {1, 2, 2}, {1, 0, 1}, {2, 1, 1})},
                        {{0, 3, 6, 6}, window({2, 2})}};
  for (DType t : {DType::F32, DType::F16})
    for (const Case& c : cases) {
      Op u = spatial_op(OpCode::Unfold, c.w);
      Shape cols = out_shape(u, {c.x}, t);
      same(u, {c.x}, t, 0, 0, "unfold " + c.x.to_string());
      same(spatial_op(OpCode::Fold, c.w, spatial_dims(c.x)), {cols}, t, tol(t), tol(t),
           "fold " + c.x.to_string());
    }
}

struct ConvCase {
  std::string name;
  Shape x;
  int64_t c_out, groups;
  Window w;
  Dims output_padding = {};  // conv_transpose
};
// GEMM compositions (a group's channels times taps above the direct kernel's range) and
// direct ones (depthwise, few channels), 1 to 3 spatial dims, zero-size batches.
std::vector<ConvCase> conv_cases() {
  return {
      {"2-d groups 2 stride 2 pad 1 dilation 2",
       {2, 8, 9, 10},
       6,
       2,
       window({3, 3}, {2, 2}, {1, 1}, {2, 2}),
       {1, 1}},
      {"2-d 1x1", {2, 40, 5, 5}, 8, 1, window({1, 1}), {0, 0}},
      {"2-d 1x1 stride 2", {2, 40, 5, 6}, 8, 2, window({1, 1}, {2, 2}), {1, 1}},
      {"1-d stride 3 pad 2", {3, 6, 20}, 4, 1, window({7}, {3}, {2}), {2}},
      {"3-d groups 2", {1, 4, 5, 6, 7}, 4, 2, window({2, 3, 3}, {1, 2, 1}, {1, 1, 0}), {0, 1, 0}},
      {"2-d depthwise (direct)",
       {2, 4, 7, 8},
       8,
       4,
       window({3, 3}, {2, 1}, {1, 1}, {1, 2}),
       {1, 0}},
      {"2-d rgb (direct)", {2, 3, 8, 8}, 5, 1, window({3, 3}, {1, 1}, {1, 1}), {0, 0}},
      {"zero-size batch", {0, 8, 5, 5}, 4, 1, window({3, 3}), {0, 0}},
      {"batch of one", {1, 16, 6, 6}, 4, 4, window({3, 3}, {2, 2}, {1, 1}), {0, 0}}};
}
Shape weight_shape(int64_t a, int64_t b, const Window& w) {
  Dims d{a, b};
  for (int64_t k : w.kernel) d.push_back(k);
  return Shape(d);
}

TEST_F(CudaSpatial, Conv) {
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (const ConvCase& c : conv_cases()) {
      if (t == DType::F64 && c.name.find("2-d groups") == std::string::npos) continue;
      Window w = c.w;
      w.groups = c.groups;
      Op conv = spatial_op(OpCode::Conv, w);
      Shape ws = weight_shape(c.c_out, c.x[1] / c.groups, c.w);
      Shape ys = out_shape(conv, {c.x, ws}, t);
      same(conv, {c.x, ws}, t, loose(t), loose(t), "conv " + c.name, -1, 1);
      Op wg = spatial_op(OpCode::ConvWeightGrad, w);
      same(wg, {c.x, ys}, t, loose(t), loose(t), "conv_weight_grad " + c.name, -1, 1);
      // conv_transpose from ys back to (about) x's size, weight [C_out, C_in / groups, *k]
      Window tw = w;
      tw.output_padding = c.output_padding;
      Op tr = spatial_op(OpCode::ConvTranspose, tw);
      Shape tws = weight_shape(c.c_out, c.x[1] / c.groups, c.w);
      same(tr, {ys, tws}, t, loose(t), loose(t), "conv_transpose " + c.name, -1, 1);
    }
}

TEST_F(CudaSpatial, ConvWithTf32) {
  cuda::set_allow_tf32(true);
  const ConvCase c = conv_cases()[0];
  Window w = c.w;
  w.groups = c.groups;
  same(spatial_op(OpCode::Conv, w), {c.x, weight_shape(c.c_out, c.x[1] / c.groups, c.w)},
       DType::F32, 1e-2, 1e-2, "conv tf32", -1, 1);
  cuda::set_allow_tf32(false);
}

// Runs everywhere: without a GPU nothing is registered and a cuda device is a clean error.
TEST(CudaNoGpu, NothingRegisteredAndCleanErrors) {
  std::string why;
  if (cuda::available(&why)) GTEST_SKIP() << "a GPU is present";
  for (Device d : available_devices()) EXPECT_NE(d.kind, DeviceKind::Cuda);
  EXPECT_THROW(Dispatch::from_data(TensorData::from<float>({1}, Shape{1}), kGpu), DeviceError);
  EXPECT_THROW(cuda::memory_stats(0), DeviceError);
}

}  // namespace
