// Fusion's deferred matmuls on the CPU: a matmul waits for the program after it, which takes
// it as its epilogue when nothing else reads the product, through `Epilogued`, a test backend
// whose run_epilogue runs the matmul and then the program (or declines). Results are checked
// against the same ops run at once on Cpu; which programs took a matmul, and when the matmul
// ran on its own, is checked from the calls. The GEMM epilogues themselves (CUDA) are tested
// in tests/cuda/fusion_gpu_test.cpp.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/fusion/fusion.h"

namespace ember {
namespace {

struct Epilogued : Cpu {
  static inline bool decline = false;
  static inline std::vector<std::string> taken;  // the programs that took a matmul
  static inline Shape oom_shape;                 // programs of this shape run out of memory

  static bool can_fuse(const Op&, std::span<const TensorMeta* const>, const TensorMeta&) {
    return true;
  }
  static std::vector<CpuTensor> run_fused(const fusion::Program& p, std::span<CpuTensor> in,
                                          Device dev) {
    if (oom_shape.rank() > 0 && p.shape == oom_shape)
      throw MemoryError("out of memory: 4096 bytes asked for", 4096, false);
    std::vector<Op> ops = fusion::detail::step_ops(p, p.shape.rank());
    std::vector<CpuTensor> constants(p.steps.size());
    for (size_t i = 0; i < p.steps.size(); ++i)
      if (p.steps[i].code == OpCode::Full)
        constants[i] = Cpu::run(ops[i], {}, {Shape(ops[i].attrs.shape), p.steps[i].dtype}, dev);
    std::vector<CpuTensor> v = fusion::detail::run_steps<Cpu>(p, ops, in, false, constants, dev);
    std::vector<CpuTensor> outs;
    for (int32_t o : p.outputs) outs.push_back(v[size_t(o)]);
    if (p.reduction) outs.push_back(fusion::detail::run_reduction<Cpu>(p, v, dev));
    return outs;
  }
  static std::optional<std::vector<CpuTensor>> run_epilogue(const Op& mm, std::span<CpuTensor> ab,
                                                            const fusion::Program& p, int product,
                                                            std::span<CpuTensor> in, Device dev) {
    if (decline) return std::nullopt;
    EXPECT_EQ(mm.code, OpCode::Matmul);
    EXPECT_TRUE(in[size_t(product)].storage == nullptr) << "the product's slot is empty";
    in[size_t(product)] = run_validated<Cpu>(mm, ab, p.inputs[size_t(product)], dev);
    taken.push_back(p.op_names());
    return run_fused(p, in, dev);
  }
};
static_assert(fusion::EpilogueBackend<Epilogued>);
static_assert(!fusion::EpilogueBackend<Cpu>);

using FE = Fusion<Epilogued>;

template <class B, int D = 2>
Tensor<B, D> on(const Tensor<Cpu, D>& t) {
  return Tensor<B, D>::from_data(t.to_data());
}
Tensor<Cpu, 2> randn(int64_t r, int64_t c) {
  return Tensor<Cpu, 2>::random({r, c}, Distribution::normal(0, 1));
}

class Epilogue : public ::testing::Test {
 protected:
  void SetUp() override {
    fusion::set_enabled(true);
    fusion::set_epilogues(true);
    fusion::reset_stats();
    Epilogued::decline = false;
    Epilogued::taken.clear();
    Epilogued::oom_shape = Shape{};
  }
  void TearDown() override { fusion::set_epilogues(true); }
  Tensor<Cpu, 2> x = randn(6, 5), w = randn(5, 4), b = randn(1, 4), r = randn(6, 4);
};

TEST_F(Epilogue, ALinearLayersBiasAndReluJoinItsMatmul) {
  auto want = activation::relu(x.matmul(w) + b);
  auto y = activation::relu(on<FE>(x).matmul(on<FE>(w)) + on<FE>(b));
  EXPECT_EQ(fusion::stats().matmuls_deferred, 1);
  EXPECT_TRUE(Epilogued::taken.empty()) << "nothing runs before a read";
  EXPECT_EQ(y.to_vec<float>(), want.to_vec<float>());
  ASSERT_EQ(Epilogued::taken.size(), 1u);
  EXPECT_NE(Epilogued::taken[0].find("add"), std::string::npos) << Epilogued::taken[0];
}

TEST_F(Epilogue, AProductSomeoneHoldsRunsOnItsOwn) {
  auto gx = on<FE>(x), gw = on<FE>(w);
  auto p = gx.matmul(gw);
  auto y = p + on<FE>(r);
  EXPECT_EQ(y.to_vec<float>(), (x.matmul(w) + r).to_vec<float>());
  EXPECT_TRUE(Epilogued::taken.empty());
  EXPECT_EQ(p.to_vec<float>(), x.matmul(w).to_vec<float>());
}

TEST_F(Epilogue, ADecliningBackendRunsTheMatmulThenTheProgram) {
  Epilogued::decline = true;
  auto y = (on<FE>(x).matmul(on<FE>(w)) + on<FE>(b)) * 2.0;
  EXPECT_EQ(y.to_vec<float>(), ((x.matmul(w) + b) * 2.0).to_vec<float>());
  EXPECT_EQ(fusion::stats().programs, 1);
}

TEST_F(Epilogue, ChainedMatmulsViewsAndOtherOpsSeeTheirProducts) {
  auto w2 = randn(4, 3);
  auto gx = on<FE>(x), gw = on<FE>(w), gw2 = on<FE>(w2);
  auto two = gx.matmul(gw).matmul(gw2);                   // a product's product
  auto flat = gx.matmul(gw).reshape<2>({4, 6});           // a view of one
  auto sm = activation::softmax(gx.matmul(gw) + 1.0, 1);  // an op Fusion does not record reads one
  auto h = activation::relu(gx.matmul(gw) + on<FE>(b)).matmul(gw2) + 1.0;  // an MLP's two layers
  EXPECT_EQ(two.to_vec<float>(), x.matmul(w).matmul(w2).to_vec<float>());
  EXPECT_EQ(flat.to_vec<float>(), x.matmul(w).reshape<2>({4, 6}).to_vec<float>());
  EXPECT_EQ(sm.to_vec<float>(), activation::softmax(x.matmul(w) + 1.0, 1).to_vec<float>());
  EXPECT_EQ(h.to_vec<float>(),
            (activation::relu(x.matmul(w) + b).matmul(w2) + 1.0).to_vec<float>());
  EXPECT_EQ(fusion::stats().matmuls_deferred, 6);
}

TEST_F(Epilogue, SwitchedOffMatmulsRunAtOnce) {
  fusion::set_epilogues(false);
  auto y = on<FE>(x).matmul(on<FE>(w)) + on<FE>(b);
  EXPECT_EQ(fusion::stats().matmuls_deferred, 0);
  EXPECT_EQ(y.to_vec<float>(), (x.matmul(w) + b).to_vec<float>());
  EXPECT_TRUE(Epilogued::taken.empty());
}

TEST_F(Epilogue, AnOperandsFailedProgramFailsTheProductsReadersOnly) {
  Epilogued::oom_shape = Shape{6, 5};
  auto a = on<FE>(x) * 2.0;  // [6, 5]: its program runs out of memory
  auto y = a.matmul(on<FE>(w)) + on<FE>(b);
  auto rt = on<FE>(r).transpose();
  auto z = rt.matmul(on<FE>(r)) + 1.0;  // [4, 4]: independent
  try {
    (void)y.to_vec<float>();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  Epilogued::oom_shape = Shape{};
  EXPECT_EQ(z.to_vec<float>(), (r.transpose().matmul(r) + 1.0).to_vec<float>());
}

// An MLP trained a few Adam steps with deferred matmuls (forward and backward) against Cpu.
template <class B>
std::vector<float> train(const Tensor<Cpu, 2>& xv, const Tensor<Cpu, 2>& w1v,
                         const Tensor<Cpu, 2>& w2v) {
  using AB = Autodiff<B>;
  auto lift = [](const Tensor<Cpu, 2>& t) {
    return Tensor<AB, 2>::from_inner(Tensor<B, 2>::from_data(t.to_data())).require_grad();
  };
  auto x = Tensor<AB, 2>::from_inner(Tensor<B, 2>::from_data(xv.to_data()));
  auto w1 = lift(w1v), w2 = lift(w2v);
  auto b1 = lift(Tensor<Cpu, 2>::zeros({1, w1v.dim(1)}));
  std::vector<float> out;
  for (int step = 0; step < 3; ++step) {
    auto h = activation::relu(x.matmul(w1) + b1);
    auto d = h.matmul(w2).tanh() - 0.5;
    auto loss = (d * d).mean();
    auto g = loss.backward();
    out.push_back(loss.template to_vec<float>()[0]);
    auto upd = [&](Tensor<AB, 2>& p) {
      p = Tensor<AB, 2>::from_inner(p.inner() - *p.grad(g) * 0.1).require_grad();
    };
    upd(w1);
    upd(w2);
    upd(b1);
  }
  for (float v : w1.template to_vec<float>()) out.push_back(v);
  return out;
}

TEST_F(Epilogue, AutodiffTrainingMatchesCpu) {
  auto xv = randn(8, 5), w1v = randn(5, 6), w2v = randn(6, 3);
  EXPECT_EQ(train<FE>(xv, w1v, w2v), train<Cpu>(xv, w1v, w2v));
  EXPECT_GE(Epilogued::taken.size(), 3u);  // the first layer's forward, each step
}

}  // namespace
}  // namespace ember
