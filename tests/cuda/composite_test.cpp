// The CUDA backend's fused composites (softmax, log_softmax, logsumexp, gelu, silu,
// layer_norm, rms_norm), the
// composites it decomposes, one-element operands and integer pow, against the CPU backend.
#include "backend_fixture.h"

using namespace ember;
using namespace ember::cuda_test;

namespace {

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

// layer_norm and rms_norm (x, gamma[, beta]) over the last or the last two dims of x, one op.
Op norm_op(OpCode c, int64_t dim, double eps = 1e-5) {
  Op op{c, {}};
  op.attrs.dim = dim;
  op.attrs.scalar = eps;
  return op;
}

TEST_F(CudaBackend, FusedNorm) {
  auto norm_inputs = [&](OpCode c, const Shape& x, const Shape& w, DType t, double lo = -3,
                         double hi = 3) {
    std::vector<TensorData> in{random(x, t, lo, hi), random(w, t, 0.5, 1.5)};
    if (c == OpCode::LayerNorm) in.push_back(random(w, t, -1, 1));
    return in;
  };
  EXPECT_TRUE(Cuda::supports(OpCode::LayerNorm));
  EXPECT_TRUE(Cuda::supports(OpCode::RmsNorm));
  const OpCode ops[] = {OpCode::LayerNorm, OpCode::RmsNorm};
  // Every layout of x (in place where the rows stay dense, else copied), over one and two dims.
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    for (OpCode c : ops)
      for (auto& [lname, in, views] : layouts())
        for (int64_t dim : {2, 1}) {
          Shape w = dim == 2 ? Shape{5} : Shape{6, 5};
          std::vector<TensorData> data = norm_inputs(c, in, w, t);
          expect_same(norm_op(c, dim), data, {views}, tol(t), tol(t),
                      std::string(name(c)) + " " + std::string(name(t)) + " dim " +
                          std::to_string(dim) + " " + lname);
        }
  // Every kernel layout: a thread per row (many short rows), a workgroup with registers, with
  // 16-byte vectors, re-reading x (long rows), and the decomposition for a very long row.
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    for (OpCode c : ops)
      for (Shape s : {Shape{3, 37}, Shape{20000, 8}, Shape{9000, 33}, Shape{8, 1000}, Shape{4, 768},
                      Shape{3, 4096}, Shape{2, 4099}, Shape{2, 30000}, Shape{2, 65536},
                      Shape{1, (int64_t(1) << 20) + 8}}) {
        Shape w{s[1]};
        expect_same(norm_op(c, 1), norm_inputs(c, s, w, t), {}, tol(t), std::max(tol(t), 1e-5),
                    std::string(name(c)) + " " + std::string(name(t)) + " " + s.to_string());
      }
  for (OpCode c : ops) {
    // Rows at an offset on and off the vector alignment, gamma off it, a large mean, epsilon.
    for (int64_t first : {1, 8})
      expect_same(norm_op(c, 1), norm_inputs(c, {9, 1024}, {1024}, DType::F32),
                  {{slice({first, 0}, {9, 1024}, {1, 1})}}, 1e-5, 1e-5,
                  std::string(name(c)) + " rows from " + std::to_string(first));
    expect_same(norm_op(c, 1), norm_inputs(c, {5, 1025}, {1024}, DType::F32),
                {{slice({0, 1}, {5, 1025}, {1, 1})}}, 1e-5, 1e-5,
                std::string(name(c)) + " columns from 1");
    expect_same(
        norm_op(c, 1), norm_inputs(c, {6, 513}, {513}, DType::F32),
        {{slice({0, 1}, {6, 513}, {1, 1})}, {slice({1}, {513}, {1})}, {slice({1}, {513}, {1})}},
        1e-5, 1e-5, std::string(name(c)) + " gamma at an offset");
    // Rows of values in [1000, 1001]: the f32 sum behind the mean is about 5e5, whose rounding
    // (1 ulp = 0.03) moves the mean by up to ~5e-4 in either backend, a few 1e-3 of the
    // normalized output (std 0.29); PyTorch's f32 layer norm is as exact, no more.
    expect_same(norm_op(c, 1), norm_inputs(c, {7, 512}, {512}, DType::F32, 1000, 1001), {}, 5e-3,
                5e-3, std::string(name(c)) + " mean 1000");
    expect_same(norm_op(c, 1, 0.5), norm_inputs(c, {7, 100}, {100}, DType::F32), {}, 1e-5, 1e-5,
                std::string(name(c)) + " eps 0.5");
    // Rows dense in x, with leading dims that do not merge (in place, strided rows).
    expect_same(norm_op(c, 2), norm_inputs(c, {5, 4, 64}, {64}, DType::F32), {{permute({1, 0, 2})}},
                1e-5, 1e-5, std::string(name(c)) + " permuted rows");
    expect_same(norm_op(c, 1), norm_inputs(c, {0, 64}, {64}, DType::F32), {}, 0, 0,
                std::string(name(c)) + " no rows");
  }
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

}  // namespace
