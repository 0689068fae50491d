// The CUDA backend against the CPU backend: elementwise ops, views, creation, reductions,
// scans and cuBLASLt matmul on random, non-contiguous (permuted, sliced, flipped), broadcast
// and zero-size inputs; the memory pool; errors. Without a CUDA driver or GPU the GPU tests
// skip, saying so, and the registration is checked to stay away. Index ops, fused composites
// and spatial ops are in index_test.cpp, composite_test.cpp and spatial_test.cpp.
#include <cmath>

#include "backend_fixture.h"
#include "ember/backend/device_memory.h"
#include "ember/backends/cpu/cpu.h"
#include "ember/backends/cuda/driver.h"
#include "ember/fusion/fusion.h"

using namespace ember;
using namespace ember::cuda_test;

namespace {

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

TEST_F(CudaBackend, ScalarConstantsAreKeptAndNeverOverwritten) {
  // `z + 1.0` makes its scalar operand with a one-element Full: the backend keeps it from its
  // second use on, so a loop of such adds, each reusing z's buffer, allocates nothing and fills
  // nothing after the first two.
  using T0 = Tensor<Dispatch, 0>;
  using T1 = Tensor<Dispatch, 1>;
  auto z = T1::zeros({16}, kGpu);
  z = std::move(z) + 1.0;
  z = std::move(z) + 1.0;
  cuda::synchronize(0);
  const int64_t before = cuda::memory_stats(0).allocations;
  for (int i = 0; i < 98; ++i) z = std::move(z) + 1.0;
  EXPECT_EQ(cuda::memory_stats(0).allocations, before);
  EXPECT_EQ(z.to_vec<float>(), std::vector<float>(16, 100.f));
  // A kept constant is shared: an op on a temporary of it must not write into it.
  auto two = T0::full({}, 2.0, kGpu);
  auto three = std::move(two) + 1.0;
  EXPECT_EQ(three.into_scalar<float>(), 3.f);
  EXPECT_EQ(T0::full({}, 2.0, kGpu).into_scalar<float>(), 2.f);
  EXPECT_EQ((Tensor<Dispatch, 0, Int>::full({}, 2, kGpu).into_scalar<int64_t>()), 2);
  EXPECT_EQ(T0::full({}, -0.0, kGpu).into_scalar<float>(), 0.f);
  EXPECT_TRUE(std::signbit(T0::full({}, -0.0, kGpu).into_scalar<float>()));
  EXPECT_EQ((Tensor<Dispatch, 2>::full({1, 1}, 5.0, kGpu).shape()), (Shape{1, 1}));
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
  // The pool under ops that run at once (with fusion on, ops whose results are dropped never
  // run at all).
  struct Off {
    Off() { fusion::set_enabled(false); }
    ~Off() { fusion::set_enabled(true); }
  } off;
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

// with_device_memory: the address and size of a pending (fused) result, a memset queued on the
// stream it gives lands in order before the next read, and what cannot give memory says so.
TEST_F(CudaBackend, DeviceMemoryForOutsideCode) {
  TensorData d = random({3, 1000}, DType::F32);
  auto x = Tensor<Dispatch, 2>::from_data(d, kGpu);
  auto y = x * 2.0 + 1.0;  // pending in Fusion until needed
  std::vector<float> before(3000), want(3000);
  auto xs = d.as<float>();
  for (size_t i = 0; i < want.size(); ++i) want[i] = xs[i] * 2.0f + 1.0f;
  with_device_memory(y, [&](const DeviceMemory& m) {
    EXPECT_EQ(m.bytes, size_t(3000 * 4));
    EXPECT_EQ(m.device, kGpu);
    EXPECT_NE(m.address, 0u);
    auto* s = static_cast<cuda::CuStream*>(m.stream);
    cuda::raw::copy_dtoh(before.data(), m.address, m.bytes, s);
    cuda::raw::stream_synchronize(s);
    // 1.5f everywhere, queued on the stream: the next read sees it.
    uint32_t bits = 0x3fc00000u;
    cuda::raw::memset(m.address, bits, 4, 3000, s);
  });
  for (size_t i = 0; i < want.size(); ++i) ASSERT_FLOAT_EQ(before[i], want[i]) << i;
  auto after = y.to_data();
  for (float v : after.as<float>()) ASSERT_EQ(v, 1.5f);
  EXPECT_THROW(with_device_memory(y.transpose(), [](const DeviceMemory&) {}), ValueError);
  EXPECT_THROW(with_device_memory(Tensor<Dispatch, 1>::ones({4}), [](const DeviceMemory&) {}),
               ValueError);
}

// Runs everywhere: without a GPU nothing is registered and a cuda device is a clean error.
TEST(CudaNoGpu, NothingRegisteredAndCleanErrors) {
  // CPU tensors have no device memory to give, GPU or not.
  EXPECT_THROW(with_device_memory(Tensor<Cpu, 1>::ones({4}), [](const DeviceMemory&) {}),
               ValueError);
  EXPECT_THROW(with_device_memory(Tensor<Dispatch, 1>::ones({4}), [](const DeviceMemory&) {}),
               ValueError);
  std::string why;
  if (cuda::available(&why)) GTEST_SKIP() << "a GPU is present";
  for (Device d : available_devices()) EXPECT_NE(d.kind, DeviceKind::Cuda);
  EXPECT_THROW(Dispatch::from_data(TensorData::from<float>({1}, Shape{1}), kGpu), DeviceError);
  EXPECT_THROW(cuda::memory_stats(0), DeviceError);
}

}  // namespace
