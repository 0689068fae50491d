// ember's side of the transformer rows of scripts/bench.sh distributed: a pre-norm transformer
// encoder layer (by default the fusion suite's: d 768, 12 heads, ff 3072, dropout 0.1, bf16,
// batch 8 x 512 tokens a rank) trained data-parallel under ember-run: forward, mean of squares
// in f32, backward, all_reduce_grads (NCCL between GPUs, the host between CPU processes), AdamW.
// Each rank draws its own batch; rank 0's parameters start every replica. After the warm-up
// steps (the kernels' compilation) the timed steps run between a barrier and the device's last
// result; rank 0 prints one JSON line: tokens/s over all ranks and the mean step time.
//   ember-run --nproc 2 -- dist_train_bench [--device cpu|cuda] [--dtype bf16|f32]
//       [--d 768] [--heads 12] [--ff 3072] [--batch 8] [--seq 512] [--steps 20] [--warmup 5]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "ember/distributed/data_parallel.h"
#include "ember/distributed/local_device.h"
#include "ember/ember.h"
#include "ember/nn/layers/transformer.h"
#include "ember/optim/adamw.h"

using namespace ember;
using B = Autodiff<Dispatch>;

int main(int argc, char** argv) {
  std::map<std::string, std::string> a{
      {"--device", "cuda"}, {"--dtype", "bf16"}, {"--d", "768"},
      {"--heads", "12"},    {"--ff", "3072"},    {"--batch", "8"},
      {"--seq", "512"},     {"--steps", "20"},   {"--warmup", "5"}};
  for (int i = 1; i < argc; i += 2) {
    if (!a.count(argv[i]) || i + 1 >= argc) {
      std::fprintf(stderr,
                   "usage: dist_train_bench [--device cpu|cuda] [--dtype bf16|f32] [--d N] "
                   "[--heads N] [--ff N] [--batch N] [--seq N] [--steps N] [--warmup N]\n");
      return 2;
    }
    a[argv[i]] = argv[i + 1];
  }
  auto num = [&](const char* k) {
    char* end = nullptr;
    const long long v = std::strtoll(a[k].c_str(), &end, 10);
    if (a[k].empty() || *end != '\0' || v < (std::string(k) == "--warmup" ? 0 : 1))
      throw ValueError(std::string(k) + " " + a[k] + ": a whole number " +
                       (std::string(k) == "--warmup" ? "0 or more" : "1 or more") + " expected");
    return v;
  };
  int rank = 0;
  try {
    if (a["--dtype"] != "bf16" && a["--dtype"] != "f32")
      throw ValueError("--dtype " + a["--dtype"] + ": bf16 or f32 expected");
    const DType dtype = a["--dtype"] == "bf16" ? DType::BF16 : DType::F32;
    const int64_t d = num("--d"), batch = num("--batch"), seq = num("--seq");
    const int64_t heads = num("--heads"), ff = num("--ff");
    const int steps = int(num("--steps")), warmup = int(num("--warmup"));
    Device dev = Device::parse(a["--device"]);

    auto pg = dist::ProcessGroup::from_env();
    rank = pg.rank();
    if (dev.kind != DeviceKind::Cpu && a["--device"].find(':') == std::string::npos) {
      bool any = false;
      for (Device d : available_devices()) any = any || d.kind == dev.kind;
      if (!any) throw DeviceError("no " + a["--device"] + " device on this machine");
      dev = dist::local_device(a["--device"]);  // one GPU a rank under ember-run
    }

    nn::TransformerEncoderLayerConfig c;
    c.d_model = d;
    c.n_heads = heads;
    c.d_ff = ff;
    c.norm_first = true;
    seed(7 + uint64_t(rank));
    auto layer = nn::to_dtype(c.init<B>(dev), dtype);
    dist::broadcast_params(pg, layer);
    auto opt = optim::AdamWConfig{}.init<B>();
    auto x = Tensor<B, 3>::random({batch, seq, d}, Distribution::normal(0, 1), dev, dtype);
    auto step = [&] {
      auto y = layer.forward(x).cast(DType::F32);
      auto grads = optim::GradientsParams<B>::from_grads((y * y).mean().backward(), layer);
      dist::all_reduce_grads(pg, grads, layer);
      opt.step(1e-4, layer, grads);
    };
    auto finish = [&] {  // the last step's results on the host: every op before them has run
      flush(dev);
      (void)layer.ff.linear2.weight.val().to_data();
    };
    for (int i = 0; i < warmup; ++i) step();
    finish();
    pg.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) step();
    finish();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rank == 0)
      std::printf(
          "{\"name\": \"transformer_tokens_per_s\", \"ranks\": %d, \"device\": \"%s\", "
          "\"value\": %.1f, \"step_ms\": %.3f}\n",
          pg.world_size(), dev.to_string().c_str(),
          double(batch * seq) * pg.world_size() * steps / s, s / steps * 1e3);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
}
