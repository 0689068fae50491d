// The CUDA command queue (backends/cuda/queue.h): batches that repeat are replayed as CUDA
// graphs with their scalar arguments patched, a new shape or buffer captures another graph, and
// every result equals the CPU backend's (and, for a training run, the run without graphs).
#include <atomic>
#include <cmath>
#include <thread>

#include "ember/ember.h"
#include "ember/fusion/fusion.h"
#include "ember/optim.h"
#include "examples/mnist/mlp.h"
#include "tests/cuda/backend_fixture.h"

namespace ember::cuda_test {
namespace {

// The replay of fused steps: the counts below (patched scalar nodes) are those of fused
// programs, whose scalars are kernel arguments, so fusion is on here whatever EMBER_FUSION says
// (unfused, the same steps replay with their scalars in one-element tensors).
class GraphReplay : public CudaBackend {
 protected:
  void SetUp() override {
    CudaBackend::SetUp();
    was_fused_ = fusion::enabled();
    fusion::set_enabled(true);
  }
  void TearDown() override {
    cuda::set_graphs(true);
    fusion::set_enabled(was_fused_);
  }
  bool was_fused_ = true;
};

using AD = Autodiff<Dispatch>;

// Losses and final first-layer weights of `steps` Adam steps of the main job's MLP on one
// batch, on `dev`, from the parameters in `init`.
std::pair<std::vector<float>, std::vector<float>> train_mlp(const mnist::Mlp<AD>& init, Device dev,
                                                            int steps) {
  auto m = nn::to_device(init, dev);
  auto opt = optim::AdamConfig{}.init<AD>();
  auto ce = nn::CrossEntropyLossConfig{}.init();
  seed(3);
  auto x = Tensor<AD, 4>::from_data(
      Tensor<Dispatch, 4>::random({64, 1, 28, 28}, Distribution::normal(0, 1)).to_data(), dev);
  std::vector<int64_t> labels(64);
  for (int i = 0; i < 64; ++i) labels[i] = (i * 7) % 10;
  auto y = Tensor<AD, 1, Int>::from_data(TensorData::from<int64_t>(labels, {64}), dev);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    auto loss = ce.forward(m.forward(x), y);
    auto grads = optim::GradientsParams<AD>::from_grads(loss.backward(), m);
    opt.step(1e-3, m, grads);
    losses.push_back(loss.to_data().to_vec<float>()[0]);
  }
  return {losses, m.fc1.weight.val().to_data().to_vec<float>()};
}

TEST_F(GraphReplay, AdamStepsMatchTheCpuAndTheRunWithoutGraphs) {
  // The first steps allocate the optimizer's state and settle the pool; later ones repeat.
  constexpr int kSteps = 20;
  seed(11);
  auto init = mnist::Mlp<AD>::init(Device::cpu());
  auto [lc, wc] = train_mlp(init, Device::cpu(), kSteps);
  cuda::set_graphs(false);
  auto [lu, wu] = train_mlp(init, kGpu, kSteps);
  cuda::set_graphs(true);
  cuda::reset_graph_stats();
  auto [lg, wg] = train_mlp(init, kGpu, kSteps);
  cuda::GraphStats st = cuda::graph_stats();
  EXPECT_GT(st.captured, 0);
  EXPECT_GT(st.replayed, 0);
  EXPECT_GT(st.patched_nodes, 0);  // Adam's bias corrections change every step
  EXPECT_EQ(st.uncapturable, 0);
  EXPECT_LT(lg.back(), lg.front());
  for (size_t i = 0; i < lg.size(); ++i) {
    EXPECT_EQ(lg[i], lu[i]) << "step " << i;  // the same kernels on the same data
    EXPECT_NEAR(lg[i], lc[i], 1e-4 * (1 + std::abs(lc[i]))) << "step " << i;
  }
  ASSERT_EQ(wg.size(), wc.size());
  for (size_t i = 0; i < wg.size(); ++i) {
    ASSERT_EQ(wg[i], wu[i]) << i;
    ASSERT_NEAR(wg[i], wc[i], 1e-4) << i;
  }
}

// A data loader's workers upload the next batches while the main thread trains: their copies
// must reach the device, not the graph the main thread is capturing (they share the stream).
// Every upload reads back as what was sent, and the training run equals the one without graphs.
TEST_F(GraphReplay, UploadsFromAnotherThreadDuringCapturesArriveAndStayOutOfTheGraphs) {
  constexpr int kSteps = 30;
  seed(12);
  auto init = mnist::Mlp<AD>::init(Device::cpu());
  cuda::set_graphs(false);
  auto [lu, wu] = train_mlp(init, kGpu, kSteps);
  cuda::set_graphs(true);
  std::atomic<bool> done{false};
  std::atomic<int> uploads{0}, wrong{0};
  std::thread worker([&] {
    for (int i = 0; !done.load() || i < 50; ++i) {
      std::vector<float> v(64 * 784);
      for (size_t j = 0; j < v.size(); ++j) v[j] = float((i * 31 + int(j)) % 1000);
      auto t = Tensor<Dispatch, 2>::from_data(TensorData::from<float>(v, {64, 784}), kGpu);
      if (t.to_data().to_vec<float>() != v) ++wrong;
      ++uploads;
    }
  });
  cuda::reset_graph_stats();
  auto [lg, wg] = train_mlp(init, kGpu, kSteps);
  done = true;
  worker.join();
  EXPECT_GT(cuda::graph_stats().replayed, 0);
  EXPECT_GE(uploads.load(), 50);
  EXPECT_EQ(wrong.load(), 0) << "uploads that did not arrive as sent";
  for (int s = 0; s < kSteps; ++s) EXPECT_EQ(lg[s], lu[s]) << "step " << s;
  EXPECT_EQ(wg, wu);
}

TEST_F(GraphReplay, ScalarsChangeEveryReplayAndShapesCaptureAnew) {
  cuda::reset_graph_stats();
  using T = Tensor<Dispatch, 2>;
  using C = Tensor<Cpu, 2>;
  for (int64_t rows : {32, 32, 32, 32, 48, 48, 48, 32}) {
    TensorData xd = random({rows, 100}, DType::F32, -2, 2);
    C xc = C::from_data(xd);
    T x = T::from_data(xd, kGpu);
    // Enough commands for a batch: a chain of programs of different shapes, a matmul and a
    // reduction, each with a scalar that changes on every pass.
    for (int pass = 0; pass < 4; ++pass) {
      double k = 0.25 * (pass + 1) + double(rows) / 64;
      auto f = [&](const auto& a) {
        auto h = (a * k + 1.0).tanh();
        auto g = h.matmul(h.transpose()) * (1e-4 / k);  // sums of at most 48 x 100 terms
        return (g.sum_dim(1) + k).exp() - h.sum_dim(1) * k;
      };
      auto want = f(xc).to_data().template to_vec<float>();
      auto got = f(x).to_data().template to_vec<float>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i])))
            << "rows " << rows << " pass " << pass << " at " << i;
    }
  }
  cuda::GraphStats st = cuda::graph_stats();
  EXPECT_GT(st.replayed, 0);
  EXPECT_GT(st.patched_nodes, 0);
}

TEST_F(GraphReplay, OffLaunchesEveryCommandOnItsOwn) {
  cuda::set_graphs(false);
  cuda::reset_graph_stats();
  using T = Tensor<Dispatch, 1>;
  T x = T::from_data(random({4096}, DType::F32), kGpu);
  for (int i = 0; i < 6; ++i) {
    T y = ((x * double(i)).exp() + x).sum_dim(0) + (x * 2.0).sum_dim(0);
    (void)y.to_data();
  }
  cuda::GraphStats st = cuda::graph_stats();
  EXPECT_GT(st.batches, 0);
  EXPECT_EQ(st.captured, 0);
  EXPECT_EQ(st.replayed, 0);
}

}  // namespace
}  // namespace ember::cuda_test
