// Tuned launches on the GPU (ember/backends/gpu/tune.h): each tuned op family on a large shape
// against the CPU backend and against the heuristics (EMBER_AUTOTUNE=0), every case timed once,
// and a second tuner over the same file (as a second process) timing nothing.
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "backend_fixture.h"
#include "ember/backends/cuda/driver.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/gpu/tune.h"

using namespace ember;
using namespace ember::cuda_test;

namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name;
  Op op;
  std::vector<TensorData> in;
  double rtol, atol;
};

Op reduce_op(OpCode c, Dims dims) {
  Op op{c, {}};
  op.attrs.dims = std::move(dims);
  return op;
}
Op along(OpCode c, int64_t dim) {
  Op op{c, {}};
  op.attrs.dim = dim;
  op.attrs.dims = {dim};
  op.attrs.scalar = 1e-5;  // the norms' eps
  return op;
}

class CudaTune : public CudaBackend {
 protected:
  void SetUp() override {
    CudaBackend::SetUp();
    if (IsSkipped()) return;
    const char* old = std::getenv("EMBER_AUTOTUNE");
    had_ = old != nullptr;
    saved_ = old ? old : "";
    dir_ = fs::temp_directory_path() / ("ember-tune-gpu-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override {
    if (IsSkipped()) return;
    if (had_)
      ::setenv("EMBER_AUTOTUNE", saved_.c_str(), 1);
    else
      ::unsetenv("EMBER_AUTOTUNE");
    cuda::detail::DeviceState& d = cuda::detail::device(0);
    gpu::reset_device_tuner(d, gpu::Tuner::default_file(cuda::device_info(0).name, d.arch));
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Large shapes (at least kTuneMinElements) of each tuned family, each a distinct tuning key
  // with several candidates: the dense-rows and workgroup reductions and the thread-per-output
  // one along an inner dim, softmax on vector and scalar rows, along an inner dim and on short
  // rows, layer_norm and rms_norm on vector, scalar and short rows.
  std::vector<Case> cases() {
    std::vector<Case> c;
    auto norm_in = [&](OpCode op, Shape x, DType t) {
      Shape w{x[x.rank() - 1]};
      std::vector<TensorData> in{random(x, t), random(w, t, 0.5, 1.5)};
      if (op == OpCode::LayerNorm) in.push_back(random(w, t, -1, 1));
      return in;
    };
    c.push_back({"sum rows f32",
                 reduce_op(OpCode::Sum, {1}),
                 {random({1024, 2048}, DType::F32)},
                 1e-4,
                 2e-3});
    c.push_back({"argmax rows f16",
                 reduce_op(OpCode::ArgMax, {1}),
                 {random({512, 4096}, DType::F16, -100, 100)},
                 0,
                 0});
    c.push_back(
        {"max inner f32", reduce_op(OpCode::Max, {0}), {random({2048, 1024}, DType::F32)}, 0, 0});
    c.push_back({"sum f64 rows of 300",
                 reduce_op(OpCode::Sum, {1}),
                 {random({4096, 300}, DType::F64)},
                 1e-10,
                 1e-10});
    c.push_back({"prod f32 rows of 128",
                 reduce_op(OpCode::Prod, {1}),
                 {random({8192, 128}, DType::F32, 0.99, 1.01)},
                 1e-4,
                 1e-5});
    c.push_back({"softmax vector f32",
                 along(OpCode::Softmax, 1),
                 {random({1024, 1024}, DType::F32, -10, 10)},
                 1e-5,
                 1e-6});
    c.push_back({"log_softmax vector f16",
                 along(OpCode::LogSoftmax, 1),
                 {random({256, 4096}, DType::F16, -10, 10)},
                 2e-2,
                 2e-2});
    c.push_back({"softmax inner f32",
                 along(OpCode::Softmax, 0),
                 {random({1024, 1024}, DType::F32, -10, 10)},
                 1e-5,
                 1e-6});
    c.push_back({"logsumexp f32",
                 along(OpCode::LogSumExp, 1),
                 {random({2048, 1000}, DType::F32, -10, 10)},
                 1e-5,
                 1e-5});
    c.push_back({"softmax short rows f32",
                 along(OpCode::Softmax, 1),
                 {random({32768, 40}, DType::F32, -10, 10)},
                 1e-5,
                 1e-6});
    c.push_back({"layer_norm vector f32", along(OpCode::LayerNorm, 1),
                 norm_in(OpCode::LayerNorm, {2048, 1024}, DType::F32), 1e-4, 1e-4});
    c.push_back({"rms_norm rows of 48 f32", along(OpCode::RmsNorm, 1),
                 norm_in(OpCode::RmsNorm, {32768, 48}, DType::F32), 1e-4, 1e-4});
    c.push_back({"layer_norm scalar bf16", along(OpCode::LayerNorm, 1),
                 norm_in(OpCode::LayerNorm, {1048, 1001}, DType::BF16), 2e-2, 3e-2});
    c.push_back({"rms_norm rows of 24 f32", along(OpCode::RmsNorm, 1),
                 norm_in(OpCode::RmsNorm, {65536, 24}, DType::F32), 1e-4, 1e-4});
    return c;
  }

  TensorData gpu(const Case& k, bool tune) {
    ::setenv("EMBER_AUTOTUNE", tune ? "now" : "0", 1);
    std::vector<H> in;
    for (const TensorData& d : k.in) in.push_back(on(d, kGpu));
    return Dispatch::to_data(run(k.op, in, kGpu));
  }
  TensorData cpu(const Case& k) {
    std::vector<H> in;
    for (const TensorData& d : k.in) in.push_back(on(d, Device::cpu()));
    return Dispatch::to_data(run(k.op, in, Device::cpu()));
  }

  fs::path dir_;
  bool had_ = false;
  std::string saved_;
};

TEST_F(CudaTune, LargeShapesMatchTheCpuAndTheHeuristics) {
  cuda::detail::DeviceState& d = cuda::detail::device(0);
  fs::path file = dir_ / "tune.txt";
  gpu::Tuner* t = &gpu::reset_device_tuner(d, file);
  std::vector<Case> all = cases();
  std::vector<TensorData> want, tuned;
  for (const Case& k : all) {
    ASSERT_GE(k.in[0].shape().numel(), gpu::kTuneMinElements) << k.name;
    want.push_back(cpu(k));
    TensorData heuristic = gpu(k, false);
    int64_t before = t->stats().timings;
    TensorData first = gpu(k, true);  // times the candidates, then launches the chosen one
    EXPECT_EQ(t->stats().timings, before + 1) << k.name << ": not tuned";
    TensorData again = gpu(k, true);  // the stored choice
    EXPECT_EQ(t->stats().timings, before + 1) << k.name << ": tuned twice";
    std::string why;
    EXPECT_TRUE(heuristic.all_close(want.back(), k.rtol, k.atol, &why)) << k.name << ": " << why;
    EXPECT_TRUE(first.all_close(want.back(), k.rtol, k.atol, &why)) << k.name << ": " << why;
    EXPECT_TRUE(first.all_close(heuristic, k.rtol, k.atol, &why)) << k.name << ": " << why;
    EXPECT_TRUE(again.all_close(first, 0, 0, &why)) << k.name << ": " << why;
    tuned.push_back(std::move(first));
  }
  gpu::Tuner::Stats s = t->stats();
  EXPECT_EQ(s.timings, int64_t(all.size()));
  EXPECT_EQ(s.failures, 0) << "candidates that failed to launch";
  EXPECT_EQ(s.write_errors, 0);
  EXPECT_TRUE(fs::exists(file));

  // A second process: every decision from the file, nothing timed, the same results.
  gpu::Tuner* t2 = &gpu::reset_device_tuner(d, file);
  for (size_t i = 0; i < all.size(); ++i) {
    TensorData got = gpu(all[i], true);
    std::string why;
    EXPECT_TRUE(got.all_close(tuned[i], 0, 0, &why)) << all[i].name << ": " << why;
  }
  EXPECT_EQ(t2->stats().timings, 0);
  EXPECT_EQ(t2->stats().disk_hits, int64_t(all.size()));
  EXPECT_EQ(t2->stats().corrupt, 0);
}

// A small problem takes the heuristic at once; with EMBER_AUTOTUNE=0 nothing is timed either.
TEST_F(CudaTune, SmallProblemsAndTheSwitchTimeNothing) {
  cuda::detail::DeviceState& d = cuda::detail::device(0);
  gpu::Tuner* t = &gpu::reset_device_tuner(d, dir_ / "tune.txt");
  Case small{
      "small softmax", along(OpCode::Softmax, 1), {random({64, 1000}, DType::F32)}, 1e-5, 1e-6};
  Case large{
      "large sum", reduce_op(OpCode::Sum, {1}), {random({1024, 2048}, DType::F32)}, 1e-4, 2e-3};
  std::string why;
  EXPECT_TRUE(gpu(small, true).all_close(cpu(small), small.rtol, small.atol, &why)) << why;
  EXPECT_TRUE(gpu(large, false).all_close(cpu(large), large.rtol, large.atol, &why)) << why;
  EXPECT_EQ(t->stats().timings, 0);
  EXPECT_FALSE(fs::exists(dir_ / "tune.txt"));
}

// Deferred tuning (the default on CUDA): the first launch of a key runs the heuristic's kernel
// while its candidates compile; a later launch times them once they are all compiled. Every
// result along the way matches the CPU, and the key is timed exactly once.
TEST_F(CudaTune, DeferredTuningRunsTheHeuristicUntilTheCandidatesAreCompiled) {
  cuda::detail::DeviceState& d = cuda::detail::device(0);
  gpu::Tuner* t = &gpu::reset_device_tuner(d, dir_ / "tune.txt");
  Case k{"softmax deferred f32",
         along(OpCode::Softmax, 1),
         {random({2048, 3000}, DType::F32)},
         1e-5,
         1e-6};
  TensorData want = cpu(k);
  std::vector<H> in{on(k.in[0], kGpu)};
  ::unsetenv("EMBER_AUTOTUNE");
  int launches = 0;
  std::string why;
  auto start = std::chrono::steady_clock::now();
  while (t->stats().timings == 0 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    TensorData got = Dispatch::to_data(run(k.op, in, kGpu));
    ++launches;
    EXPECT_TRUE(got.all_close(want, k.rtol, k.atol, &why)) << "launch " << launches << ": " << why;
    if (launches == 1) {
      EXPECT_EQ(t->stats().deferred, 1);
      EXPECT_EQ(t->stats().timings, 0) << "the first launch waited for the candidates";
    }
  }
  EXPECT_EQ(t->stats().timings, 1);
  EXPECT_GE(launches, 2);
  TensorData after = Dispatch::to_data(run(k.op, in, kGpu));
  EXPECT_TRUE(after.all_close(want, k.rtol, k.atol, &why)) << why;
  EXPECT_EQ(t->stats().timings, 1) << "tuned twice";
  EXPECT_EQ(t->stats().deferred, 1);
}

}  // namespace
