// Device memory over a long training run: after warm-up, thousands of training steps of the
// main job's MLP and CNN (examples/mnist; forward, backward, Adam) on cuda:0 allocate nothing
// new from the driver
// and end with exactly the bytes in tensors they started with. The pool's own figures
// (cuda::memory_stats) are the measurement.
#include <gtest/gtest.h>

#include "ember/backends/cuda/cuda.h"
#include "ember/optim.h"
#include "examples/mnist/cnn.h"
#include "examples/mnist/mlp.h"

namespace ember::cuda_test {
namespace {

using AD = Autodiff<Dispatch>;
const Device kGpu{DeviceKind::Cuda, 0};

// Trains `m` for `steps` steps on batches that change every step; returns the pool's figures
// after `warm` steps and at the end. Warm-up includes filling the backend's cache of scalar
// constants (elementwise.cpp), which then holds the same number of blocks for good.
template <class M>
std::pair<cuda::MemoryStats, cuda::MemoryStats> train(M& m, int warm, int steps) {
  auto opt = optim::AdamConfig{}.init<AD>();
  auto ce = nn::CrossEntropyLossConfig{}.init();
  // One step; its batch, graph and gradients are gone when it returns, so the figures after
  // two steps compare like with like (what lives on: parameters and the optimizer's state).
  auto step = [&] {
    auto x = Tensor<AD, 4>::random({64, 1, 28, 28}, Distribution::normal(0, 1), kGpu);
    auto y = Tensor<AD, 1, Int>::from_data(
        Tensor<Dispatch, 1>::random({64}, Distribution::uniform(0, 10), kGpu).int_().to_data(),
        kGpu);
    auto loss = ce.forward(m.forward(x), y);
    auto grads = optim::GradientsParams<AD>::from_grads(loss.backward(), m);
    opt.step(1e-3, m, grads);
  };
  for (int i = 0; i < warm; ++i) step();
  cuda::synchronize(0);
  cuda::MemoryStats after_warm = cuda::memory_stats(0);
  for (int i = warm; i < steps; ++i) step();
  cuda::synchronize(0);
  return {after_warm, cuda::memory_stats(0)};
}

void expect_flat(const cuda::MemoryStats& a, const cuda::MemoryStats& b, int steps) {
  EXPECT_EQ(b.device_allocations, a.device_allocations) << "new driver allocations after warm-up";
  EXPECT_EQ(b.reserved_bytes, a.reserved_bytes);
  EXPECT_EQ(b.allocated_bytes, a.allocated_bytes);
  EXPECT_GT(b.allocations - a.allocations, int64_t(steps) * 10) << "the steps allocated nothing?";
  std::printf(
      "[memory] %d steps after warm-up: %lld bytes in tensors, %lld reserved, %lld "
      "driver allocations before and after\n",
      steps, static_cast<long long>(b.allocated_bytes), static_cast<long long>(b.reserved_bytes),
      static_cast<long long>(b.device_allocations));
}

class CudaMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::available(&why)) GTEST_SKIP() << "no CUDA driver/GPU: skipped (" << why << ")";
  }
};

TEST_F(CudaMemory, FlatOverThousandsOfMlpSteps) {
  ember::seed(1);
  auto m = mnist::Mlp<AD>::init(kGpu);
  auto [a, b] = train(m, 300, 3300);
  expect_flat(a, b, 3000);
}

TEST_F(CudaMemory, FlatOverThousandsOfCnnSteps) {
  ember::seed(2);
  auto m = mnist::Cnn<AD>::init(kGpu);
  auto [a, b] = train(m, 300, 2300);
  expect_flat(a, b, 2000);
}

}  // namespace
}  // namespace ember::cuda_test
