// Fusion<B> on the CPU: recording, flushing, dead values, constants, shape changes, errors
// and Autodiff<Fusion<B>>, against the same ops run at once on Cpu (the oracle). Programs run
// op by op on Cpu, or through `Interpreted`, a test backend whose run_fused evaluates the
// fusion::Program itself (its steps, operands and constants), so the programs handed to a
// kernel backend are checked here too, without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>

#include "ember/ember.h"
#include "ember/fusion/fusion.h"

namespace ember {
namespace {

// Cpu with run_fused: each program evaluated from its description alone.
struct Interpreted : Cpu {
  static inline std::vector<std::string> signatures;
  static inline std::vector<Shape> shapes;
  static inline std::vector<size_t> input_counts;
  static inline bool fail = false;
  static inline bool out_of_memory = false;
  static inline Shape oom_shape;         // non-empty: only programs of this shape run out of memory
  static inline bool reductions = true;  // whether programs may end in a reduction
  static inline int reduced = 0;         // programs that did

  static bool can_fuse(const Op& op, std::span<const TensorMeta* const>, const TensorMeta&) {
    return reductions || info(op.code).family != OpFamily::Reduce;
  }
  static std::vector<CpuTensor> run_fused(const fusion::Program& p, std::span<CpuTensor> in,
                                          Device dev) {
    if (fail) throw ValueError("[fusion test] this backend cannot compile the program");
    if (out_of_memory || (oom_shape.rank() > 0 && p.shape == oom_shape))
      throw MemoryError("out of memory: 4096 bytes asked for", 4096, false);
    signatures.push_back(p.signature());
    shapes.push_back(p.shape);
    input_counts.push_back(in.size());
    std::vector<CpuTensor> v;
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const fusion::Step& s = p.steps[i];
      Op op = fusion::step_op(p, i, p.shape.rank());
      if (s.code == OpCode::Full) {
        v.push_back(Cpu::run(op, {}, {Shape(op.attrs.shape), s.dtype}, dev));
        continue;
      }
      std::vector<CpuTensor> args;
      for (int a = 0; a < s.arity; ++a) {
        fusion::Ref r = s.args[a];
        args.push_back(fusion::Program::is_input(r) ? in[fusion::Program::input_index(r)] : v[r]);
      }
      v.push_back(run_validated<Cpu>(op, std::span<CpuTensor>(args.data(), args.size()),
                                     {p.shape, s.dtype}, dev));
    }
    std::vector<CpuTensor> outs;
    for (int32_t o : p.outputs) outs.push_back(v[o]);
    if (p.reduction) {
      ++reduced;
      outs.push_back(fusion::detail::run_reduction<Cpu>(p, v, dev));
    }
    return outs;
  }
};
static_assert(fusion::FusedBackend<Interpreted>);
static_assert(fusion::FusedBackend<Cpu>);

using F = Fusion<Cpu>;
using FI = Fusion<Interpreted>;

template <class B, int D = 1, class K = Float>
Tensor<B, D, K> on(const Tensor<Cpu, D, K>& t) {
  return Tensor<B, D, K>::from_data(t.to_data());
}

Tensor<Cpu, 1> randn(int64_t n) { return Tensor<Cpu, 1>::random({n}, Distribution::normal(0, 1)); }

template <class B>
Tensor<B, 1> chain(const Tensor<B, 1>& a, const Tensor<B, 1>& b, const Tensor<B, 1>& c) {
  return (activation::gelu(a * b + c).exp() * 0.5 + a).tanh();
}

class FusionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fusion::set_enabled(true);
    fusion::reset_stats();
    Interpreted::signatures.clear();
    Interpreted::shapes.clear();
    Interpreted::input_counts.clear();
    Interpreted::fail = false;
    Interpreted::out_of_memory = false;
    Interpreted::reductions = true;
    Interpreted::reduced = 0;
    Interpreted::oom_shape = Shape{};
  }
};

TEST_F(FusionTest, ChainIsRecordedThenRunAsOneProgram) {
  auto a = randn(1000), b = randn(1000), c = randn(1000);
  auto want = chain(a, b, c).to_vec<float>();
  auto y = chain(on<F>(a), on<F>(b), on<F>(c));
  fusion::Stats s = fusion::stats();
  EXPECT_EQ(s.programs, 0);            // nothing ran yet
  EXPECT_EQ(s.recorded, 8);            // mul add gelu exp full mul add tanh
  EXPECT_EQ(y.to_vec<float>(), want);  // the same ops in the same order: bit for bit
  s = fusion::stats();
  EXPECT_EQ(s.programs, 1);
  EXPECT_EQ(s.fused_steps, 7);
  EXPECT_EQ(s.outputs, 1);  // the intermediates were dropped: never written
}

TEST_F(FusionTest, InterpretedProgramMatchesEagerOps) {
  auto a = randn(777), b = randn(777), c = randn(777);
  auto want = chain(a, b, c).to_vec<float>();
  auto got = chain(on<FI>(a), on<FI>(b), on<FI>(c)).to_vec<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
  EXPECT_EQ(Interpreted::signatures.size(), 1u);
  EXPECT_EQ(fusion::stats().replayed_ops, 0);
}

TEST_F(FusionTest, LiveIntermediatesAreOutputsDeadOnesAreNot) {
  auto a = on<FI>(randn(64));
  auto keep = a.exp();          // held: written
  auto y = (keep + 1.0).sin();  // held: written
  { auto dropped = y.cos(); }   // recorded, never needed
  auto ca = Tensor<Cpu, 1>::from_data(a.to_data());
  EXPECT_EQ(y.to_vec<float>(), ((ca.exp() + 1.0).sin()).to_vec<float>());
  fusion::Stats s = fusion::stats();
  EXPECT_EQ(s.outputs, 2);
  EXPECT_EQ(s.dead_steps, 1);
  EXPECT_EQ(keep.to_vec<float>(), ca.exp().to_vec<float>());
  EXPECT_EQ(fusion::stats().programs, 1);  // keep was written by the same program
}

TEST_F(FusionTest, ConstantsAreArgumentsNotCode) {
  auto x = on<FI>(randn(32));
  auto y1 = (x * 0.5 + 2.0).to_vec<float>();
  auto y2 = (x * 0.25 + 3.0).to_vec<float>();
  ASSERT_EQ(Interpreted::signatures.size(), 2u);
  EXPECT_EQ(Interpreted::signatures[0], Interpreted::signatures[1]);  // one kernel for both
  auto cx = Tensor<Cpu, 1>::from_data(x.to_data());
  EXPECT_EQ(y1, (cx * 0.5 + 2.0).to_vec<float>());
  EXPECT_EQ(y2, (cx * 0.25 + 3.0).to_vec<float>());
}

TEST_F(FusionTest, ShapeChangeStartsANewProgram) {
  auto x = on<FI, 2>(Tensor<Cpu, 2>::random({4, 8}, Distribution::normal(0, 1)));
  auto row = on<FI, 2>(Tensor<Cpu, 2>::random({1, 8}, Distribution::normal(0, 1)));
  auto r = row.exp();  // [1, 8]
  auto y = x * r;      // [4, 8]: another shape, so r's program runs first
  auto want =
      Tensor<Cpu, 2>::from_data(x.to_data()) * Tensor<Cpu, 2>::from_data(row.to_data()).exp();
  EXPECT_EQ(y.to_vec<float>(), want.to_vec<float>());
  ASSERT_EQ(Interpreted::shapes.size(), 2u);
  EXPECT_EQ(Interpreted::shapes[0], (Shape{1, 8}));
  EXPECT_EQ(Interpreted::shapes[1], (Shape{4, 8}));
  // The same structure on another shape: same signature, checked against its own values.
  auto x2 = on<FI, 2>(Tensor<Cpu, 2>::random({3, 5}, Distribution::normal(0, 1)));
  auto y2 = (x2 * x2.exp()).to_vec<float>();
  auto c2 = Tensor<Cpu, 2>::from_data(x2.to_data());
  EXPECT_EQ(y2, (c2 * c2.exp()).to_vec<float>());
}

TEST_F(FusionTest, OtherOpsFlushTheirPendingInputsOnly) {
  auto a = on<F>(randn(100)), b = on<F>(randn(100));
  auto p = a * b;    // pending
  auto s = p.sum();  // a reduction of a pending value: the program runs first
  EXPECT_EQ(fusion::stats().programs, 1);
  auto q = a + b;                         // pending again
  auto m = a.reshape<2>({10, 10}).sum();  // no pending input: q stays recorded
  EXPECT_EQ(fusion::stats().programs, 1);
  float want = (Tensor<Cpu, 1>::from_data(a.to_data()) * Tensor<Cpu, 1>::from_data(b.to_data()))
                   .sum()
                   .to_vec<float>()[0];
  EXPECT_EQ(s.to_vec<float>()[0], want);
  (void)q.to_vec<float>();
  (void)m;
  EXPECT_EQ(fusion::stats().programs, 2);
}

TEST_F(FusionTest, StepBoundFlushes) {
  auto x = on<F>(randn(16));
  auto y = x;
  for (int i = 0; i < 3 * fusion::max_steps(); ++i) y = y * 1.0001;
  EXPECT_GE(fusion::stats().flushes, 2);
  auto want = Tensor<Cpu, 1>::from_data(x.to_data());
  for (int i = 0; i < 3 * fusion::max_steps(); ++i) want = want * 1.0001;
  EXPECT_EQ(y.to_vec<float>(), want.to_vec<float>());
  // Each program ends at the value the next one continues from: one output each (a bound
  // checked after an op joined would also write the value in the middle).
  fusion::Stats s = fusion::stats();
  EXPECT_EQ(s.outputs, s.programs);
}

TEST_F(FusionTest, ScalarOperandsCrossABoundUnrun) {
  // y * 1.0001 makes the scalar first, then the op: when the op's arrival ends a program, the
  // scalar moves to the next program as a constant (not a buffer made for it).
  auto x = on<FI>(randn(16));
  auto y = x;
  for (int i = 0; i < 3 * fusion::max_steps(); ++i) y = y * 1.0001;
  auto want = Tensor<Cpu, 1>::from_data(x.to_data());
  for (int i = 0; i < 3 * fusion::max_steps(); ++i) want = want * 1.0001;
  EXPECT_EQ(y.to_vec<float>(), want.to_vec<float>());
  ASSERT_GE(Interpreted::input_counts.size(), 3u);
  for (size_t c : Interpreted::input_counts) EXPECT_EQ(c, 1u);  // the chained value only
}

TEST_F(FusionTest, ManyInputsSplitPrograms) {
  std::vector<Tensor<Cpu, 1>> xs;
  for (int i = 0; i < 3 * fusion::kMaxInputs; ++i) xs.push_back(randn(8));
  auto want = xs[0];
  auto got = on<FI>(xs[0]);
  for (size_t i = 1; i < xs.size(); ++i) {
    want = want + xs[i];
    got = got + on<FI>(xs[i]);
  }
  EXPECT_EQ(got.to_vec<float>(), want.to_vec<float>());
  EXPECT_GE(Interpreted::signatures.size(), 3u);
}

TEST_F(FusionTest, SwitchedOffRunsAtOnce) {
  fusion::set_enabled(false);
  auto x = on<F>(randn(16));
  auto y = x.exp() + 1.0;
  EXPECT_EQ(fusion::stats().recorded, 0);
  fusion::set_enabled(true);
  auto cx = Tensor<Cpu, 1>::from_data(x.to_data());
  EXPECT_EQ(y.to_vec<float>(), (cx.exp() + 1.0).to_vec<float>());
}

TEST_F(FusionTest, DumpWritesEachProgram) {
  std::string path = ::testing::TempDir() + "/ember_fusion_dump.txt";
  std::remove(path.c_str());
  fusion::set_dump(path);
  auto x = on<F>(randn(8));
  (void)(x.exp() * 2.0).to_vec<float>();
  fusion::set_dump("");
  std::ifstream f(path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("fused [8] (3 steps, 1 outputs)"), std::string::npos) << text;
  EXPECT_NE(text.find("= exp in0"), std::string::npos) << text;
  EXPECT_NE(text.find("full 2 (argument)"), std::string::npos) << text;
  EXPECT_FALSE(fusion::dumping());
  std::remove(path.c_str());
}

TEST_F(FusionTest, BackendFailureReplaysOpByOp) {
  Interpreted::fail = true;
  auto a = randn(50);
  auto y = (on<FI>(a).exp() * 2.0).to_vec<float>();
  EXPECT_EQ(y, (a.exp() * 2.0).to_vec<float>());
  EXPECT_EQ(fusion::stats().fallbacks, 1);
  EXPECT_EQ(fusion::stats().replayed_ops, 3);  // full, exp, mul
}

TEST_F(FusionTest, ProgramOutOfMemoryNamesItsOpsAndStaysOnItsTensors) {
  auto x = on<FI>(randn(1024));
  auto y = (x.exp() * 2.0).sin();  // pending
  Interpreted::out_of_memory = true;
  auto expect = [](const std::string& m, const std::string& what) {
    EXPECT_NE(m.find(what), std::string::npos) << m;
  };
  try {
    (void)y.sum().to_vec<float>();  // the sum ends y's program, which fails: the program's error
    FAIL() << "no error";
  } catch (const MemoryError& e) {
    expect(e.what(), "[fusion] out of memory: 4096 bytes asked for");
    expect(e.what(), "(in a fused program of exp, mul, sin, sum on [1024])");
    EXPECT_EQ(std::string(e.what()).find("[sum]"), std::string::npos) << e.what();
    EXPECT_EQ(e.bytes(), 4096);
  }
  Interpreted::out_of_memory = false;
  try {
    (void)y.to_vec<float>();  // y keeps the error
    FAIL() << "no error";
  } catch (const Error& e) {
    expect(e.what(), "[fusion] this tensor's deferred op failed: [fusion] out of memory");
  }
  auto want = Tensor<Cpu, 1>::from_data(x.to_data()).exp().to_vec<float>();
  EXPECT_EQ(x.exp().to_vec<float>(), want);  // the stream works on
}

TEST_F(FusionTest, DtypesCastsWhereAndCompare) {
  auto a = randn(40), b = randn(40);
  auto fa = on<FI>(a), fb = on<FI>(b);
  auto got = (fb.cast(DType::F64).cast(DType::F32) * 3.0).mask_where(fa.greater(fb), fa.exp());
  auto want = (b.cast(DType::F64).cast(DType::F32) * 3.0).mask_where(a.greater(b), a.exp());
  EXPECT_EQ(got.to_vec<float>(), want.to_vec<float>());
  auto i = on<FI>(Tensor<Cpu, 1, Int>::arange(0, 20));
  EXPECT_EQ((i * 3).remainder_scalar(7).to_vec<int64_t>(),
            (Tensor<Cpu, 1, Int>::arange(0, 20) * 3).remainder_scalar(7).to_vec<int64_t>());
}

TEST_F(FusionTest, IntegerDivisionByZeroRaisesAtTheCall) {
  auto i = on<F>(Tensor<Cpu, 1, Int>::arange(0, 4));
  auto pending = i * 2;
  EXPECT_THROW((void)(pending / i), ValueError);  // i holds a zero: not deferred
  EXPECT_EQ((pending / (i + 1)).to_vec<int64_t>(), (std::vector<int64_t>{0, 1, 1, 1}));
}

// Fusion<Cpu> runs large programs in blocks (Cpu::run_fused): a size that is no multiple of
// the block, a one-element operand, compares, where, casts and two outputs.
TEST_F(FusionTest, CpuBlocksMatchEagerOps) {
  int64_t n = 300001;
  auto a = randn(n), b = randn(n);
  auto one = Tensor<Cpu, 1>::from_values<float>({0.25f}, {1});
  auto run = [](const auto& a, const auto& b, const auto& one) {
    auto t = (a * b + one).sigmoid();
    auto u = t.mask_where(a.greater(b), (b.cast(DType::F64) * 2.0).cast(DType::F32));
    return std::make_pair(t, u - a);
  };
  auto [t0, u0] = run(a, b, one);
  auto [t1, u1] = run(on<F>(a), on<F>(b), on<F>(one));
  auto want_t = t0.to_vec<float>(), want_u = u0.to_vec<float>();
  auto got_t = t1.to_vec<float>(), got_u = u1.to_vec<float>();
  ASSERT_EQ(got_t.size(), size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(got_t[i], want_t[i], 1e-6f) << i;  // sigmoid may take another vector path
    ASSERT_NEAR(got_u[i], want_u[i], 1e-5f * (1 + std::abs(want_u[i]))) << i;
  }
  fusion::Stats s = fusion::stats();
  EXPECT_EQ(s.programs, 1);
  EXPECT_EQ(s.outputs, 2);
}

// Threads share a device's stream: their ops interleave in one program or another, a read in
// one thread may run the other's ops, and every value still comes out right.
TEST_F(FusionTest, ThreadsShareAStream) {
  std::vector<Tensor<Cpu, 1>> xs;
  for (int t = 0; t < 4; ++t) xs.push_back(randn(257));
  std::vector<std::vector<float>> got(4), want(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto y = on<FI>(xs[t]);
      for (int i = 0; i < 300; ++i) {
        y = (y * 0.5 + double(t)).sin();
        if (i % 37 == 0) (void)y.to_vec<float>();
      }
      got[t] = y.to_vec<float>();
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    auto y = xs[t];
    for (int i = 0; i < 300; ++i) y = (y * 0.5 + double(t)).sin();
    EXPECT_EQ(got[t], y.to_vec<float>()) << t;
  }
}

TEST_F(FusionTest, ErrorsNameTheOpAndTheShapes) {
  auto x = on<F>(randn(4));
  auto y = on<F>(randn(5));
  try {
    (void)(x + y);  // validated when recorded, not at some later read
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[add]"), std::string::npos) << e.what();
  }
}

TEST_F(FusionTest, AutodiffOverFusionMatchesAutodiffOverCpu) {
  using AF = Autodiff<F>;
  using AC = Autodiff<Cpu>;
  auto xv = Tensor<Cpu, 2>::random({8, 5}, Distribution::normal(0, 1));
  auto wv = Tensor<Cpu, 2>::random({5, 3}, Distribution::normal(0, 1));
  auto run = [&](auto tag) {
    using AB = decltype(tag);
    using Inner = typename AB::Inner;
    auto x = Tensor<AB, 2>::from_inner(Tensor<Inner, 2>::from_data(xv.to_data()));
    auto w = Tensor<AB, 2>::from_inner(Tensor<Inner, 2>::from_data(wv.to_data())).require_grad();
    auto h = activation::gelu(x.matmul(w)) * 0.5 + x.matmul(w).sigmoid();
    auto loss = (h * h).mean();
    auto g = loss.backward();
    return std::make_pair(loss.template to_vec<float>(), w.grad(g)->template to_vec<float>());
  };
  auto [lf, gf] = run(AF{});
  auto [lc, gc] = run(AC{});
  EXPECT_EQ(lf, lc);
  EXPECT_EQ(gf, gc);
  EXPECT_GT(fusion::stats().programs, 2);  // forward and backward chains ran fused
}

// Reductions end programs: the chain is computed as the reduction reads it.
template <class B>
std::vector<Tensor<B, 3>> reductions_of(const Tensor<B, 3>& x, const Tensor<B, 3>& y) {
  auto z = [&] { return (x * y + 1.0).tanh(); };
  return {z().sum_dim(2),       z().sum_dims({0, 2}),    z().max_dim(1),
          z().min_dims({0, 1}), z().sum_dims({0, 1, 2}), (x.exp() * 0.5).max_dims({0, 1, 2})};
}

TEST_F(FusionTest, ReductionsEndProgramsAndMatchEagerOps) {
  auto xc = Tensor<Cpu, 3>::random({6, 7, 40}, Distribution::normal(0, 1));
  auto yc = Tensor<Cpu, 3>::random({6, 7, 40}, Distribution::normal(0, 1));
  auto want = reductions_of(xc, yc);
  auto got = reductions_of(on<FI, 3>(xc), on<FI, 3>(yc));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].shape(), want[i].shape()) << i;
    EXPECT_EQ(got[i].to_vec<float>(), want[i].to_vec<float>()) << i;  // the same ops in order
  }
  fusion::Stats s = fusion::stats();
  EXPECT_EQ(s.reductions, 6);
  EXPECT_EQ(Interpreted::reduced, 6);
  EXPECT_EQ(s.outputs, 0);  // every chain's value was only reduced: never written
}

TEST_F(FusionTest, SumAndMeanOfAChainWriteOnlyTheResult) {
  auto xc = Tensor<Cpu, 2>::random({9, 70}, Distribution::normal(0, 1));
  auto yc = Tensor<Cpu, 2>::random({9, 70}, Distribution::normal(0, 1));
  auto x = on<FI, 2>(xc), y = on<FI, 2>(yc);
  auto s = (x * y).sum();              // sum over every dim, then a reshape to [1]: both wait
  auto m = ((x - y).square()).mean();  // sum, scale, reshape
  EXPECT_EQ(fusion::stats().programs, 0);
  EXPECT_EQ(s.to_vec<float>(), (xc * yc).sum().to_vec<float>());
  EXPECT_EQ(m.to_vec<float>(), ((xc - yc).square()).mean().to_vec<float>());
  fusion::Stats st = fusion::stats();
  EXPECT_EQ(st.reductions, 2);
  EXPECT_EQ(st.outputs, 1);  // the mean's scaled value; the products were never written
}

TEST_F(FusionTest, ProgramsOfOtherShapesWaitForARead) {
  auto xc = randn(16), yc = randn(8);
  auto x = on<FI>(xc), y = on<FI>(yc);
  auto a = x * 2.0;  // [16]
  auto b = y + 1.0;  // [8]: a's program is closed, not run
  auto c = a * 3.0;  // [16] again
  EXPECT_EQ(fusion::stats().programs, 0);
  EXPECT_EQ(c.to_vec<float>(), (xc * 2.0 * 3.0).to_vec<float>());
  EXPECT_EQ(fusion::stats().programs, 3);  // in order: a, b, c
  EXPECT_EQ(b.to_vec<float>(), (yc + 1.0).to_vec<float>());
  EXPECT_EQ(a.to_vec<float>(), (xc * 2.0).to_vec<float>());
}

TEST_F(FusionTest, ReducedValueStillHeldIsWrittenToo) {
  auto x = on<FI, 2>(Tensor<Cpu, 2>::random({16, 33}, Distribution::normal(0, 1)));
  auto cx = Tensor<Cpu, 2>::from_data(x.to_data());
  auto z = (x * 3.0).sin();  // held
  auto r = z.sum_dim(0);     // ends z's program
  EXPECT_EQ(fusion::stats().programs, 0);
  EXPECT_EQ(r.to_vec<float>(), (cx * 3.0).sin().sum_dim(0).to_vec<float>());
  EXPECT_EQ(fusion::stats().programs, 1);
  EXPECT_EQ(fusion::stats().outputs, 1);  // z, by the same program
  EXPECT_EQ(z.to_vec<float>(), (cx * 3.0).sin().to_vec<float>());
  EXPECT_EQ(fusion::stats().programs, 1);
}

TEST_F(FusionTest, OpsOnAReductionRunItFirst) {
  // softmax written out: each reduction's result feeds the next chain.
  auto xc = Tensor<Cpu, 2>::random({12, 50}, Distribution::normal(0, 3));
  auto softmax = [](auto x) {
    auto e = (x - x.max_dim(1)).exp();
    return e / e.sum_dim(1);
  };
  auto want = softmax(xc).to_vec<float>();
  EXPECT_EQ(softmax(on<FI, 2>(xc)).to_vec<float>(), want);
  EXPECT_EQ(fusion::stats().reductions, 1);  // the max reads x itself: no program to end
  // Two reductions of one value: the second one's program starts after the first ran.
  auto x = on<FI, 2>(xc);
  auto z = x * 2.0;
  auto a = z.sum_dim(1), b = z.max_dim(1);
  EXPECT_EQ(a.to_vec<float>(), (xc * 2.0).sum_dim(1).to_vec<float>());
  EXPECT_EQ(b.to_vec<float>(), (xc * 2.0).max_dim(1).to_vec<float>());
}

TEST_F(FusionTest, ReductionsRunAloneWhereTheBackendSaysSo) {
  auto xc = Tensor<Cpu, 2>::random({8, 9}, Distribution::normal(0, 1));
  Interpreted::reductions = false;
  auto x = on<FI, 2>(xc);
  EXPECT_EQ((x.exp() + 1.0).sum_dim(1).to_vec<float>(),
            (xc.exp() + 1.0).sum_dim(1).to_vec<float>());
  EXPECT_EQ(fusion::stats().reductions, 0);
  Interpreted::reductions = true;
  // Not pending (a value already made), an int tensor, prod: no program to end.
  EXPECT_EQ(x.sum_dim(1).to_vec<float>(), xc.sum_dim(1).to_vec<float>());
  auto xi = x.int_();
  EXPECT_EQ((xi + 1).sum_dim(1).to_vec<int64_t>(), (xc.int_() + 1).sum_dim(1).to_vec<int64_t>());
  EXPECT_EQ((x + 1.0).prod_dim(1).to_vec<float>(), (xc + 1.0).prod_dim(1).to_vec<float>());
  EXPECT_EQ(fusion::stats().reductions, 0);
  // Cpu keeps its reductions to itself (its reduce kernels beat a program's blocks).
  auto f = on<F, 2>(xc);
  EXPECT_EQ((f * 2.0).sum_dim(1).to_vec<float>(), (xc * 2.0).sum_dim(1).to_vec<float>());
  EXPECT_EQ(fusion::stats().reductions, 0);
}

TEST_F(FusionTest, FailedReductionProgramReplaysOpByOp) {
  Interpreted::fail = true;
  auto xc = Tensor<Cpu, 2>::random({5, 30}, Distribution::normal(0, 1));
  auto got = (on<FI, 2>(xc).exp() * 2.0).sum_dim(1).to_vec<float>();
  EXPECT_EQ(got, (xc.exp() * 2.0).sum_dim(1).to_vec<float>());
  EXPECT_EQ(fusion::stats().fallbacks, 1);
  EXPECT_EQ(fusion::stats().reductions, 1);
}

TEST_F(FusionTest, AutodiffWithFusedReductionsMatchesCpu) {
  using AI = Autodiff<FI>;
  using AC = Autodiff<Cpu>;
  auto xv = Tensor<Cpu, 2>::random({16, 12}, Distribution::normal(0, 1));
  auto bv = Tensor<Cpu, 1>::random({12}, Distribution::normal(0, 1));
  auto run = [&](auto tag) {
    using AB = decltype(tag);
    using Inner = typename AB::Inner;
    auto x = Tensor<AB, 2>::from_inner(Tensor<Inner, 2>::from_data(xv.to_data())).require_grad();
    auto b = Tensor<AB, 1>::from_inner(Tensor<Inner, 1>::from_data(bv.to_data())).require_grad();
    auto h = (x + b.template reshape<2>({1, 12})).tanh();  // b's gradient: a sum over dim 0
    auto loss = (h * h).sum_dim(1).max_dims({0, 1}).template reshape<1>({1}) + h.exp().mean();
    auto g = loss.backward();
    return std::make_tuple(loss.template to_vec<float>(), x.grad(g)->template to_vec<float>(),
                           b.grad(g)->template to_vec<float>());
  };
  auto [lf, xf, bf] = run(AI{});
  EXPECT_GT(fusion::stats().reductions, 2);
  auto [lc, xc, bc] = run(AC{});
  ASSERT_EQ(lf.size(), lc.size());
  EXPECT_NEAR(lf[0], lc[0], 1e-5);
  ASSERT_EQ(xf.size(), xc.size());
  for (size_t i = 0; i < xf.size(); ++i) EXPECT_NEAR(xf[i], xc[i], 1e-6) << i;
  ASSERT_EQ(bf.size(), bc.size());
  for (size_t i = 0; i < bf.size(); ++i) EXPECT_NEAR(bf[i], bc[i], 1e-5) << i;
}

TEST_F(FusionTest, AFailedProgramFailsItsReadersNotIndependentPrograms) {
  auto xc = randn(16), yc = randn(8);
  auto x = on<FI>(xc), y = on<FI>(yc);
  Interpreted::oom_shape = Shape{16};
  auto a = x.exp();                     // [16]: its program will fail
  auto b = y + 1.0;                     // [8]: independent
  auto d = a.reshape<2>({4, 4}) * 2.0;  // reads a (through a waiting reshape)
  EXPECT_EQ(fusion::stats().programs, 0);
  try {
    (void)d.to_vec<float>();  // the flush runs a's program first: it fails
    FAIL() << "no error";
  } catch (const MemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("(in a fused program of exp on [16])"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(b.to_vec<float>(), (yc + 1.0).to_vec<float>());  // ran in the same flush
  try {
    (void)a.to_vec<float>();  // a keeps its program's error
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  try {
    (void)d.to_vec<float>();  // its input's error is its own
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  Interpreted::oom_shape = Shape{};
  EXPECT_EQ((x * 3.0).to_vec<float>(), (xc * 3.0).to_vec<float>());  // the stream works on
}

TEST_F(FusionTest, AReadReportsOnlyItsOwnProgramsError) {
  auto xc = randn(16), yc = randn(8);
  auto x = on<FI>(xc), y = on<FI>(yc);
  Interpreted::oom_shape = Shape{16};
  auto a = x.exp();  // [16]: its program will fail
  auto b = y + 1.0;  // [8]: independent
  // b's read runs both programs: a's failure is a's, not b's.
  EXPECT_EQ(b.to_vec<float>(), (yc + 1.0).to_vec<float>());
  EXPECT_THROW((void)a.to_vec<float>(), Error);
  // Recording goes on past failed programs; an op of their tensors reports their error.
  auto c = y * 2.0;
  EXPECT_THROW((void)(a * 2.0), Error);
  Interpreted::oom_shape = Shape{};
  EXPECT_EQ(c.to_vec<float>(), (yc * 2.0).to_vec<float>());
}

TEST_F(FusionTest, AReshapeOfAnOlderProgramDoesNotSplitTheCurrentOne) {
  auto xc = randn(16), yc = randn(8);
  auto x = on<FI>(xc), y = on<FI>(yc);
  auto p = y + 1.0;               // [8]
  auto a = x * 2.0;               // [16]: p's program is closed
  auto v = p.reshape<2>({2, 4});  // a view of the closed program's value
  auto b = a + 1.0;               // still a's program
  EXPECT_EQ(b.to_vec<float>(), (xc * 2.0 + 1.0).to_vec<float>());
  EXPECT_EQ(fusion::stats().programs, 2);  // p's, and a's with b
  EXPECT_EQ(v.to_vec<float>(), (yc + 1.0).to_vec<float>());
}

}  // namespace
}  // namespace ember
