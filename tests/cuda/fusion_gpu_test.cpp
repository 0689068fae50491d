// Fusion<Cuda> (Dispatch's cuda:0) against the CPU backend: fused chains in every layout the
// kernels take (dense with a tail, one-element operands, broadcast, permuted and offset
// views), dtypes, several outputs, re-planning on a new shape, kernel counts, buffer reuse and
// a training step with fusion on and off; programs ending in a reduction in both kernel forms.
#include <cmath>

#include "ember/ember.h"
#include "ember/fusion/fusion.h"
#include "tests/cuda/backend_fixture.h"

namespace ember::cuda_test {
namespace {

template <int D>
using G = Tensor<Dispatch, D>;

class FusionGpu : public CudaBackend {
 protected:
  void SetUp() override {
    CudaBackend::SetUp();
    fusion::set_enabled(true);
    fusion::reset_stats();
  }
  template <int D>
  std::pair<Tensor<Cpu, D>, G<D>> pair(Shape s, DType t = DType::F32, double lo = -3,
                                       double hi = 3) {
    TensorData d = random(std::move(s), t, lo, hi);
    return {Tensor<Cpu, D>::from_data(d), G<D>::from_data(d, kGpu)};
  }
};

template <class T>
void expect_close(const T& want, const TensorData& got, double rtol, const std::string& what) {
  auto w = want.to_data().convert(DType::F64).template to_vec<double>();
  auto g = got.convert(DType::F64).template to_vec<double>();
  ASSERT_EQ(w.size(), g.size()) << what;
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i;
      continue;
    }
    ASSERT_NEAR(g[i], w[i], rtol * (1 + std::abs(w[i]))) << what << " at " << i;
  }
}

template <class X>
X chain(const X& a, const X& b, const X& c) {
  return (activation::gelu(a * b + c).exp() * 0.5 + a).tanh();
}

TEST_F(FusionGpu, ChainIsOneKernelInEveryDtype) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    fusion::reset_stats();
    int64_t n = (1 << 20) + 3;  // a tail after the vectors
    auto [a, ga] = pair<1>({n}, t, -1, 1);
    auto [b, gb] = pair<1>({n}, t, -1, 1);
    auto [c, gc] = pair<1>({n}, t, -1, 1);
    auto y = chain(ga, gb, gc);
    EXPECT_EQ(fusion::stats().programs, 0);
    expect_close(chain(a, b, c), y.to_data(), tol(t), std::string(name(t)));
    fusion::Stats s = fusion::stats();
    EXPECT_EQ(s.kernel_launches, 1) << name(t);
    EXPECT_EQ(s.fused_steps, 7) << name(t);
    EXPECT_EQ(s.fallbacks, 0) << name(t);
  }
}

TEST_F(FusionGpu, LayoutsBroadcastViewsAndOneElementOperands) {
  auto [x, gx] = pair<2>({37, 129});
  auto [row, grow] = pair<2>({1, 129});
  auto [col, gcol] = pair<2>({37, 1});
  auto [one, gone] = pair<2>({1, 1});
  // Broadcast rows and columns: the strided kernel.
  expect_close((x * row + col).sin() * one, ((gx * grow + gcol).sin() * gone).to_data(), 2e-5,
               "broadcast");
  // One-element operand on a dense tensor: the vector kernel reads it once.
  expect_close((x - one).abs().sqrt(), (gx - gone).abs().sqrt().to_data(), 2e-5, "scalar operand");
  // Permuted and offset views.
  auto xt = x.permute({1, 0});
  auto gxt = gx.permute({1, 0});
  expect_close((xt * 2.0).exp() - xt, ((gxt * 2.0).exp() - gxt).to_data(), 2e-5, "permuted");
  auto xs = x.slice({{1, 37}, {3, 128}});
  auto gxs = gx.slice({{1, 37}, {3, 128}});
  expect_close(xs.sigmoid() + xs, (gxs.sigmoid() + gxs).to_data(), 2e-5, "sliced");
  EXPECT_EQ(fusion::stats().fallbacks, 0);
}

TEST_F(FusionGpu, SeveralOutputsCompareWhereCastAndIntegers) {
  auto [x, gx] = pair<2>({300, 70});
  auto [h, gh] = pair<2>({300, 70}, DType::F16);
  auto pick = [](const auto& x, const auto& h) {
    auto pos = (x + 0.25).greater_elem(0.0);
    auto r = h.cast(DType::F32).mask_where(pos, x * 3.0);
    auto k = r.int_(DType::I32) * 3 + 1;
    return std::make_tuple(r, k, pos);
  };
  auto [r, k, pos] = pick(x, h);
  auto [gr, gk, gpos] = pick(gx, gh);
  expect_close(r, gr.to_data(), 2e-5, "where");
  EXPECT_EQ(k.to_data().to_vec<int32_t>(), gk.to_data().to_vec<int32_t>());
  EXPECT_EQ(pos.to_data().to_vec<bool>(), gpos.to_data().to_vec<bool>());
  EXPECT_EQ(fusion::stats().kernel_launches, 1);  // three outputs, one kernel
  EXPECT_EQ(fusion::stats().outputs, 3);
}

TEST_F(FusionGpu, NewShapeReplansSameShapeReplays) {
  auto [a, ga] = pair<1>({1000});
  (void)(ga.exp() * 2.0 + ga).to_data();
  fusion::Stats s1 = fusion::stats();
  auto [b, gb] = pair<1>({1000});
  expect_close(b.exp() * 3.0 + b, (gb.exp() * 3.0 + gb).to_data(), 2e-5, "same shape");
  fusion::Stats s2 = fusion::stats();
  EXPECT_EQ(s2.plans_compiled, s1.plans_compiled);  // the same kernel, a new constant
  EXPECT_EQ(s2.plan_hits, s1.plan_hits + 1);
  auto [c, gc] = pair<3>({4, 5, 6});
  auto ct = c.permute({2, 0, 1});
  auto gct = gc.permute({2, 0, 1});
  expect_close(ct.exp() * 2.0 + ct, (gct.exp() * 2.0 + gct).to_data(), 2e-5, "new layout");
  EXPECT_EQ(fusion::stats().plans_compiled, s2.plans_compiled + 1);  // strided: planned again
}

TEST_F(FusionGpu, DroppedInputsLendTheirBuffers) {
  auto [x, gx] = pair<1>({1 << 16});
  G<1> y = gx * 1.0;
  auto want = x * 1.0;
  for (int i = 0; i < 50; ++i) {
    y = (y * 0.5 + 1.0).sqrt();
    want = (want * 0.5 + 1.0).sqrt();
    if (i % 5 == 4) (void)y.to_data();  // a program every 5 steps, y its only live input
  }
  expect_close(want, y.to_data(), 2e-5, "reuse");
  EXPECT_GT(fusion::stats().buffers_reused, 5);
  cuda::MemoryStats before = cuda::memory_stats(0);
  for (int i = 0; i < 200; ++i) {
    y = (y * 0.5 + 1.0).sqrt();
    if (i % 5 == 4) (void)y.to_data();
  }
  EXPECT_EQ(cuda::memory_stats(0).allocated_bytes, before.allocated_bytes);
}

TEST_F(FusionGpu, TrainingStepsMatchUnfused) {
  auto train = [&](bool fused) {
    fusion::set_enabled(fused);
    fusion::reset_stats();
    using AB = Autodiff<Dispatch>;
    using T = Tensor<AB, 2>;
    std::mt19937 rng(7);
    auto mk = [&](Shape s, float sd) {
      std::vector<float> v(s.numel());
      std::normal_distribution<float> nd(0, sd);
      for (auto& e : v) e = nd(rng);
      return T::from_data(TensorData::from<float>(v, s), kGpu);
    };
    T w1 = mk({784, 256}, 0.05f).require_grad(), w2 = mk({256, 10}, 0.05f).require_grad();
    T x = mk({64, 784}, 1.0f);
    std::vector<float> hot(640, 0.0f);
    for (int i = 0; i < 64; ++i) hot[i * 10 + i % 10] = 1.0f;
    T onehot = T::from_data(TensorData::from<float>(hot, {64, 10}), kGpu);
    std::vector<float> losses;
    for (int it = 0; it < 5; ++it) {
      T h = activation::gelu(x.matmul(w1) + 0.1);
      auto loss = (activation::log_softmax(h.matmul(w2), 1) * onehot).sum().neg() / 64.0;
      auto g = loss.backward();
      // SGD with momentum-free decay: elementwise chains on every parameter.
      w1 = T::from_inner(w1.inner() * 0.999 - *w1.grad(g) * 0.1).require_grad();
      w2 = T::from_inner(w2.inner() * 0.999 - *w2.grad(g) * 0.1).require_grad();
      losses.push_back(loss.to_data().to_vec<float>()[0]);
    }
    fusion::set_enabled(true);
    return std::make_pair(losses, w1.to_data().to_vec<float>());
  };
  auto [lu, wu] = train(false);
  EXPECT_EQ(fusion::stats().recorded, 0);
  auto [lf, wf] = train(true);
  EXPECT_GE(fusion::stats().kernel_launches, 10);
  EXPECT_EQ(fusion::stats().fallbacks, 0);
  EXPECT_LT(lu.back(), lu.front());  // it learns
  for (size_t i = 0; i < lu.size(); ++i) EXPECT_NEAR(lf[i], lu[i], 1e-4 * (1 + std::abs(lu[i])));
  for (size_t i = 0; i < wu.size(); ++i) ASSERT_NEAR(wf[i], wu[i], 1e-5) << i;
}

TEST_F(FusionGpu, ReductionsEndProgramsInEveryForm) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    fusion::reset_stats();
    auto [x, gx] = pair<3>({24, 33, 70}, t, -2, 2);
    auto [row, grow] = pair<3>({1, 1, 70}, t, -2, 2);
    auto z = [](const auto& x, const auto& row) { return (x * row + 0.5).tanh(); };
    // A workgroup a result (the innermost dim reduced: rows, two dims with an outer one), a
    // thread a result (an outer dim reduced: neighbouring columns). Each chain's temporary is
    // gone when the results are read, so it is never written.
    std::vector<G<3>> got;
    got.push_back(z(gx, grow).sum_dim(2));
    got.push_back(z(gx, grow).max_dims({0, 2}));
    got.push_back(z(gx, grow).sum_dim(0));
    got.push_back(z(gx, grow).min_dim(1));
    auto all = z(gx, grow).sum();  // one result of 55440 elements: the split reduction
    std::vector<Tensor<Cpu, 3>> want = {z(x, row).sum_dim(2), z(x, row).max_dims({0, 2}),
                                        z(x, row).sum_dim(0), z(x, row).min_dim(1)};
    std::string what = std::string(name(t));
    double rt = tol(t) * 8;  // sums of a few thousand terms in another order
    for (size_t i = 0; i < got.size(); ++i)
      expect_close(want[i], got[i].to_data(), rt, what + " " + std::to_string(i));
    expect_close(z(x, row).sum(), all.to_data(), rt, what + " all");
    fusion::Stats s = fusion::stats();
    EXPECT_EQ(s.reductions, 4) << what;
    EXPECT_EQ(s.kernel_launches, 5) << what;  // one kernel each, and the split sum's chain
    EXPECT_EQ(s.outputs, 1) << what;          // the chain the split sum reads
    EXPECT_EQ(s.fallbacks, 0) << what;
  }
}

TEST_F(FusionGpu, ReductionWritesHeldValuesAndNaNPropagates) {
  auto [x, gx] = pair<2>({64, 256});
  auto gz = (gx * 2.0).exp();
  auto gb = gz.sum_dim(0);  // a bias gradient's shape: a thread per column
  expect_close((x * 2.0).exp().sum_dim(0), gb.to_data(), 2e-5, "sum");
  EXPECT_EQ(fusion::stats().kernel_launches, 1);
  expect_close((x * 2.0).exp(), gz.to_data(), 2e-5, "the held value, by the same kernel");
  EXPECT_EQ(fusion::stats().kernel_launches, 1);
  auto [y, gy] = pair<2>({8, 1000});
  auto m = (y.log()).max_dim(1);  // negative entries: NaN rows
  expect_close(m, gy.log().max_dim(1).to_data(), 2e-5, "NaN max");
}

TEST_F(FusionGpu, LongRowsOfFewResultsKeepTheSplitReduction) {
  auto [x, gx] = pair<1>({1 << 22});
  expect_close((x * x).sum(), (gx * gx).sum().to_data(), 1e-4, "split");
  EXPECT_EQ(fusion::stats().reductions, 0);  // can_fuse declined: the two-pass reduction
}

// Matmul epilogues: a bias, a residual and a relu after a matmul run inside its GEMM; what
// follows them runs as a fused kernel; other steps, and operands the GEMM cannot take, do not.
TEST_F(FusionGpu, MatmulEpiloguesRunInTheGemm) {
  for (DType t : {DType::F32, DType::BF16}) {
    auto [x, gx] = pair<2>({64, 96}, t, -1, 1);
    auto [w, gw] = pair<2>({96, 48}, t, -1, 1);
    auto [wt, gwt] = pair<2>({48, 96}, t, -1, 1);  // a transposed weight: column-major
    auto [b, gb] = pair<2>({1, 48}, t, -1, 1);
    auto [r, gr] = pair<2>({64, 48}, t, -1, 1);
    auto [x3, gx3] = pair<3>({4, 16, 96}, t, -1, 1);
    std::string dt(name(t));
    auto check = [&](const std::string& what, const auto& want, const auto& got, int steps,
                     int64_t kernels) {
      fusion::reset_stats();
      TensorData d = got().to_data();
      fusion::Stats s = fusion::stats();
      expect_close(want, d, tol(t) * 2, dt + " " + what);
      EXPECT_EQ(s.matmuls_deferred, 1) << dt << " " << what;
      EXPECT_EQ(s.epilogues, steps > 0 ? 1 : 0) << dt << " " << what;
      EXPECT_EQ(s.epilogue_steps, steps) << dt << " " << what;
      EXPECT_EQ(s.kernel_launches, kernels) << dt << " " << what;
    };
    check(
        "bias", x.matmul(w) + b, [&] { return gx.matmul(gw) + gb; }, 1, 0);
    check(
        "bias, relu", activation::relu(x.matmul(w) + b),
        [&] { return activation::relu(gx.matmul(gw) + gb); }, 2, 0);
    check(
        "residual, bias, relu", activation::relu(r + x.matmul(w) + b),
        [&] { return activation::relu(gr + gx.matmul(gw) + gb); }, 3, 0);
    check(
        "transposed weight", x.matmul(wt.transpose()) + b,
        [&] { return gx.matmul(gwt.transpose()) + gb; }, 1, 0);
    check(
        "bias, then a fused rest", activation::gelu(x.matmul(w) + b) * 2.0,
        [&] { return activation::gelu(gx.matmul(gw) + gb) * 2.0; }, 1, 1);
    check(
        "batched bias", x3.matmul(w.reshape<3>({1, 96, 48})) + b.reshape<3>({1, 1, 48}),
        [&] {
          return gx3.matmul(gw.reshape<3>({1, 96, 48})) + gb.reshape<3>({1, 1, 48});
        },
        1, 0);
    // A bias off a 16-byte boundary, a product scaled first: no epilogue, the same values.
    auto [b2, gb2] = pair<2>({1, 49}, t, -1, 1);
    check(
        "unaligned bias", x.matmul(w) + b2.narrow(1, 1, 48),
        [&] { return gx.matmul(gw) + gb2.narrow(1, 1, 48); }, 0, 1);
    check(
        "scaled product", x.matmul(w) * 0.5 + b, [&] { return gx.matmul(gw) * 0.5 + gb; }, 0, 1);
  }
  // Switched off: the matmul runs at once.
  fusion::set_epilogues(false);
  fusion::reset_stats();
  auto [x, gx] = pair<2>({8, 16});
  auto [w, gw] = pair<2>({16, 8});
  expect_close(x.matmul(w) + 1.0, (gx.matmul(gw) + 1.0).to_data(), 1e-4, "off");
  EXPECT_EQ(fusion::stats().matmuls_deferred, 0);
  fusion::set_epilogues(true);
}

}  // namespace
}  // namespace ember::cuda_test
