// ember's side of scripts/bench.sh fusion (bench/fusion_bench.sh): Dispatch on cuda:0 with
// fusion on and off: the 6-op chain on 64M floats, training steps of the main job's MLP
// (batch 64 and 1024) and CNN (batch 256) with Adam, the JIT warm-up of each step (first step
// minus a steady one, after the vendor libraries' one-time loading, which is reported on its
// own), and the pool's memory at step 100 and at the last step. Times are
// medians of CUDA-event intervals after warm-up, with the stream flushed inside the interval.
//   fusion_bench [--reps N] [--memory-steps N] [--filter S] [--json F]
//   fusion_bench --init-probe   # where a process's first training step goes, in order: the
//                               # device, cuBLASLt's loading, the first matmul, a first MLP step,
//                               # a first CNN step (cuDNN's loading)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "bench/flags.h"
#include "ember/backends/cuda/compile_jobs.h"
#include "ember/backends/cuda/cublaslt.h"
#include "ember/backends/cuda/driver.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/ember.h"
#include "ember/fusion/fusion.h"
#include "ember/kernel/cache.h"
#include "ember/nn/layers/transformer.h"
#include "ember/optim.h"
#include "examples/mnist/cnn.h"
#include "examples/mnist/mlp.h"

using namespace ember;

namespace {

const Device kGpu{DeviceKind::Cuda, 0};
using AD = Autodiff<Dispatch>;

struct Options {
  int reps = 30;
  int warmup = 5;
  int memory_steps = 10000;
  std::string filter, json;
};

struct Record {
  std::string name;
  double value;
  std::string unit;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Median milliseconds of fn() (its recorded work flushed) between two events on the stream.
double time_ms(const Options& o, const std::function<void()>& fn) {
  cuda::detail::DeviceState& d = cuda::detail::device(0);
  for (int i = 0; i < o.warmup; ++i) fn();
  cuda::synchronize(0);
  std::vector<double> ts;
  cuda::Event start, end;
  for (int i = 0; i < o.reps; ++i) {
    start.record_raw(d.s());
    fn();
    end.record_raw(d.s());
    end.synchronize();
    ts.push_back(end.since(start));
  }
  return median(ts);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A training step of model M on a fixed batch: forward, cross-entropy, backward, Adam.
template <class M>
struct Trainer {
  M m;
  optim::Adam<AD> opt = optim::AdamConfig{}.init<AD>();
  nn::CrossEntropyLoss ce = nn::CrossEntropyLossConfig{}.init();
  Tensor<AD, 4> x;
  Tensor<AD, 1, Int> y;
  Trainer(M model, int64_t batch)
      : m(std::move(model)),
        x(Tensor<AD, 4>::random({batch, 1, 28, 28}, Distribution::normal(0, 1), kGpu)),
        y(Tensor<AD, 1, Int>::from_data(
            Tensor<Dispatch, 1>::random({batch}, Distribution::uniform(0, 10), kGpu)
                .int_()
                .to_data(),
            kGpu)) {}
  void step() {
    auto loss = ce.forward(m.forward(x), y);
    auto grads = optim::GradientsParams<AD>::from_grads(loss.backward(), m);
    opt.step(1e-3, m, grads);
    flush(kGpu);  // the last parameter's update
  }
};

// A transformer encoder layer (d 768, 12 heads, ff 3072, pre-norm, dropout 0.1) in bf16,
// batch 8 x 512 tokens: forward, mean of squares in f32, backward, AdamW. PyTorch's peer keeps
// f32 weights under bf16 autocast; here the layer and its optimizer state are bf16.
struct TransformerTrainer {
  nn::TransformerEncoderLayer<AD> layer;
  optim::AdamW<AD> opt = optim::AdamWConfig{}.init<AD>();
  Tensor<AD, 3> x;
  TransformerTrainer()
      : layer(nn::to_dtype(config().init<AD>(kGpu), DType::BF16)),
        x(Tensor<AD, 3>::random({8, 512, 768}, Distribution::normal(0, 1), kGpu, DType::BF16)) {}
  static nn::TransformerEncoderLayerConfig config() {
    nn::TransformerEncoderLayerConfig c;
    c.d_model = 768;
    c.n_heads = 12;
    c.d_ff = 3072;
    c.norm_first = true;
    return c;
  }
  void step() {
    auto y = layer.forward(x).cast(DType::F32);
    auto loss = (y * y).mean();
    auto grads = optim::GradientsParams<AD>::from_grads(loss.backward(), layer);
    opt.step(1e-4, layer, grads);
    flush(kGpu);
  }
};

// The vendor libraries' one-time loading and set-up in a process: cuBLASLt by a small matmul,
// cuDNN by a small convolution (about 0.1 s each on an H200's host). No kernel cache removes it,
// so it is paid and reported before the training steps, whose warm-up is then the JIT's. The
// convolution has 8 input channels: with fewer channels times taps than 32 it would take
// ember's direct kernel and leave cuDNN unloaded.
void load_libraries() {
  auto x = Tensor<Dispatch, 4>::random({1, 8, 8, 8}, Distribution::normal(0, 1), kGpu);
  auto w = Tensor<Dispatch, 4>::random({4, 8, 3, 3}, Distribution::normal(0, 1), kGpu);
  (void)conv2d(x, w, {}).to_data();
  auto m = Tensor<Dispatch, 2>::random({8, 8}, Distribution::normal(0, 1), kGpu);
  (void)m.matmul(m).to_data();
}

// The one-time costs a process's first step pays, each timed on its own (a fresh process).
int init_probe() {
  double t0 = now_s();
  auto lap = [&](const char* what) {
    double t = now_s();
    std::printf("%-52s %12.4f s\n", what, t - t0);
    t0 = t;
  };
  auto x = Tensor<Dispatch, 2>::random({64, 784}, Distribution::normal(0, 1), kGpu);
  cuda::synchronize(0);
  lap("init_device_and_first_tensor_s");
  (void)cuda::lt::api();
  lap("init_cublaslt_load_s");
  auto w = Tensor<Dispatch, 2>::random({784, 256}, Distribution::normal(0, 1), kGpu);
  (void)x.matmul(w).to_data();
  lap("init_first_matmul_s");
  Trainer t(mnist::Mlp<AD>::init(kGpu), 64);
  cuda::synchronize(0);
  lap("init_mlp_model_s");
  t.step();
  cuda::synchronize(0);
  lap("init_first_mlp_step_s");
  t.step();
  cuda::synchronize(0);
  lap("init_second_mlp_step_s");
  Trainer c(mnist::Cnn<AD>::init(kGpu), 256);
  cuda::synchronize(0);
  lap("init_cnn_model_s");
  c.step();
  cuda::synchronize(0);
  lap("init_first_cnn_step_s");  // cuDNN's loading and set-up, and the CNN's JIT
  c.step();
  cuda::synchronize(0);
  lap("init_second_cnn_step_s");
  kernel::KernelCache::Stats ks = kernel::KernelCache::global().stats();
  std::printf("kernels: %lld compiled, %lld from disk\n", (long long)ks.misses,
              (long long)ks.disk_hits);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--init-probe") return init_probe();
  Options o;
  auto f = bench::parse_flags(argc, argv, {"--reps", "--memory-steps", "--filter", "--json"},
                              "usage: fusion_bench [--reps N] [--memory-steps N] [--filter S] "
                              "[--json F]");
  if (f.count("--reps")) o.reps = std::stoi(f["--reps"]);
  if (f.count("--memory-steps")) o.memory_steps = std::stoi(f["--memory-steps"]);
  o.filter = f["--filter"];
  o.json = f["--json"];
  std::string why;
  if (!cuda::available(&why)) {
    std::fprintf(stderr, "fusion_bench: no CUDA GPU: %s\n", why.c_str());
    return 1;
  }
  std::vector<Record> records;
  auto want = [&](const std::string& n) {
    return o.filter.empty() || n.find(o.filter) != std::string::npos;
  };
  auto put = [&](std::string name, double v, std::string unit) {
    std::printf("%-52s %12.4f %s\n", name.c_str(), v, unit.c_str());
    std::fflush(stdout);
    records.push_back({std::move(name), v, std::move(unit)});
  };
  auto modes = {true, false};
  auto tag = [](bool fused) { return fused ? "fused" : "unfused"; };

  try {
    // 1. The 6-op chain on 64M floats: gelu(a * b + c).exp() * 0.5 + a, then tanh.
    if (want("chain6")) {
      int64_t n = int64_t(1) << 26;
      using T = Tensor<Dispatch, 1>;
      T a = T::random({n}, Distribution::normal(0, 1), kGpu);
      T b = T::random({n}, Distribution::normal(0, 1), kGpu);
      T c = T::random({n}, Distribution::normal(0, 1), kGpu);
      for (bool fused : modes) {
        fusion::set_enabled(fused);
        fusion::reset_stats();
        double ms = time_ms(o, [&] {
          T y = (activation::gelu(a * b + c).exp() * 0.5 + a).tanh();
          flush(kGpu);  // y is alive: its program runs now
        });
        put(std::string("chain6_64M_") + tag(fused) + "_ms", ms, "ms");
        if (fused) put("chain6_64M_fused_GBps", 4.0 * n * 4 / (ms * 1e-3) / 1e9, "GB/s");
        if (fused)
          put("chain6_kernels_per_call",
              double(fusion::stats().kernel_launches) / double(o.reps + o.warmup), "kernels");
      }
      fusion::set_enabled(true);
    }
    // 2. Training steps fused with graph replay, fused without it, and unfused; the first
    // step's extra time is the JIT warm-up; host_ms is the host's time to issue a step.
    struct Mode {
      bool fused, graphs;
      const char* tag;
    };
    const Mode train_modes[] = {
        {true, true, "fused"}, {true, false, "fused_nographs"}, {false, true, "unfused"}};
    auto train = [&](const std::string& label, auto make) {
      if (!want(label)) return;
      for (const Mode& m : train_modes) {
        fusion::set_enabled(m.fused);
        cuda::set_graphs(m.graphs);
        auto t = make();
        cuda::synchronize(0);
        double t0 = now_s();
        t.step();
        cuda::synchronize(0);
        double first_ms = (now_s() - t0) * 1e3;
        // The next steps may still pay for one-time work (graph captures, deferred autotuning
        // of the ops whose candidates compiled meanwhile): their extra time over steady steps
        // is the rest of the warm-up.
        constexpr int kSettle = 19;
        t0 = now_s();
        for (int i = 0; i < kSettle; ++i) t.step();
        cuda::synchronize(0);
        double settle_ms = (now_s() - t0) * 1e3;
        // Steady steps come after the JIT: deferred tuning's candidates may still compile in
        // the background (a cold cache), and the launches after that time them.
        cuda::detail::wait_for_compiles();
        for (int i = 0; i < 5; ++i) t.step();
        cuda::synchronize(0);
        cuda::reset_graph_stats();
        double ms = time_ms(o, [&] { t.step(); });
        cuda::GraphStats gs = cuda::graph_stats();
        std::vector<double> host;
        for (int i = 0; i < 10; ++i) {
          cuda::synchronize(0);
          double h0 = now_s();
          t.step();
          host.push_back((now_s() - h0) * 1e3);
        }
        cuda::synchronize(0);
        put(label + "_step_" + m.tag + "_ms", ms, "ms");
        put(label + "_host_" + m.tag + "_ms", median(host), "ms");
        put(label + "_warmup_" + m.tag + "_s", (first_ms - ms) / 1e3, "s");
        put(label + "_settle_" + m.tag + "_s", (settle_ms - kSettle * ms) / 1e3, "s");
        double calls = o.reps + o.warmup;
        if (m.graphs)
          std::printf(
              "  %s: %.1f commands in %.1f batches a step, %.1f replayed, %.1f patched "
              "nodes, %lld captured\n",
              m.tag, gs.commands / calls, gs.batches / calls, gs.replayed / calls,
              gs.patched_nodes / calls, (long long)gs.captured);
      }
      fusion::set_enabled(true);
      cuda::set_graphs(true);
    };
    if (want("_b")) {
      double t0 = now_s();
      load_libraries();
      put("init_libraries_s", now_s() - t0, "s");
    }
    ember::seed(1);
    train("mlp784_256_10_b64", [] { return Trainer(mnist::Mlp<AD>::init(kGpu), 64); });
    train("mlp784_256_10_b1024", [] { return Trainer(mnist::Mlp<AD>::init(kGpu), 1024); });
    train("cnn_fmnist_b256", [] { return Trainer(mnist::Cnn<AD>::init(kGpu), 256); });
    train("transformer_layer768_b8_s512_bf16", [] { return TransformerTrainer(); });
    kernel::KernelCache::Stats ks = kernel::KernelCache::global().stats();
    put("kernels_compiled", double(ks.misses), "kernels");
    put("kernels_from_disk", double(ks.disk_hits), "kernels");

    // 3. Memory over many steps (fused): the pool's figures at step 100 and at the end.
    auto memory = [&](const std::string& label, auto make) {
      if (!want(label + "_memory") || o.memory_steps <= 100) return;
      auto t = make();
      cuda::synchronize(0);
      cuda::reset_peak_memory_stats(0);
      cuda::MemoryStats at100{};
      for (int i = 1; i <= o.memory_steps; ++i) {
        t.step();
        if (i == 100) {
          cuda::synchronize(0);
          at100 = cuda::memory_stats(0);
        }
      }
      cuda::synchronize(0);
      cuda::MemoryStats end = cuda::memory_stats(0);
      auto mib = [](int64_t b) { return double(b) / (1 << 20); };
      put(label + "_memory_inuse_step100_MiB", mib(at100.allocated_bytes), "MiB");
      put(label + "_memory_peak_step100_MiB", mib(at100.peak_allocated_bytes), "MiB");
      put(label + "_memory_inuse_step" + std::to_string(o.memory_steps) + "_MiB",
          mib(end.allocated_bytes), "MiB");
      put(label + "_memory_peak_step" + std::to_string(o.memory_steps) + "_MiB",
          mib(end.peak_allocated_bytes), "MiB");
      put(label + "_memory_driver_allocs_after_step100",
          double(end.device_allocations - at100.device_allocations), "allocations");
    };
    memory("mlp784_256_10_b64", [] { return Trainer(mnist::Mlp<AD>::init(kGpu), 64); });
    memory("cnn_fmnist_b256", [] { return Trainer(mnist::Cnn<AD>::init(kGpu), 256); });
    memory("transformer_layer768_b8_s512_bf16", [] { return TransformerTrainer(); });

  } catch (const std::exception& e) {
    std::fprintf(stderr, "fusion_bench: %s\n", e.what());
    return 1;
  }
  fusion::Stats s = fusion::stats();
  std::printf("fusion: %lld programs, %lld kernel launches, %lld plans compiled, %lld fallbacks\n",
              (long long)s.programs, (long long)s.kernel_launches, (long long)s.plans_compiled,
              (long long)s.fallbacks);
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << "[\n";
    for (size_t i = 0; i < records.size(); ++i)
      f << "  {\"name\": \"" << records[i].name << "\", \"value\": " << records[i].value
        << ", \"unit\": \"" << records[i].unit << "\"}" << (i + 1 < records.size() ? "," : "")
        << "\n";
    f << "]\n";
  }
  return 0;
}
