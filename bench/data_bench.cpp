// data_bench: what the DataLoader costs on top of the work it does. One epoch of
// Fashion-MNIST train (60000 items, batches of 64, shuffled) as MnistBatch<Cpu> tensors:
//
//   bare        the same batches made in a plain loop (get each item, run the batcher); the
//               figure is the sum of the batch times, the floor for any loader
//   workers=N   DataLoader with N worker threads (0: loads in the caller's thread)
//   +step       the same, while the caller spends a fixed time per batch (a stand-in for a
//               training step), to show how much loading the workers hide
//
//   data_bench [repetitions=5]     prints the best epoch of the repetitions (the machine noise only
//   adds)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ember/backends/cpu/cpu.h"
#include "ember/data/batcher.h"
#include "ember/data/loader.h"

using namespace ember;
using namespace ember::data;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double best(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void spin_for(double us) {
  auto end = Clock::now() + std::chrono::duration<double, std::micro>(us);
  while (Clock::now() < end) {
  }
}

constexpr size_t kBatch = 64;
constexpr uint64_t kSeed = 1;

/// The bare loop: the loader's order for epoch 0, each batch timed on its own.
double bare_epoch_ms(const MnistDataset& d, const MnistBatcher<Cpu>& batcher, int64_t& sink) {
  LoaderOptions o;
  o.batch_size = kBatch;
  o.shuffle = true;
  o.seed = kSeed;
  DataLoader<MnistDataset, MnistBatcher<Cpu>> order_of(d, batcher, o);
  std::vector<size_t> order = order_of.epoch_order(0);
  double total = 0;
  for (size_t b = 0; b < order.size(); b += kBatch) {
    auto t0 = Clock::now();
    std::vector<MnistItem> items;
    items.reserve(kBatch);
    for (size_t k = b; k < std::min(order.size(), b + kBatch); ++k)
      items.push_back(d.get(order[k]));
    MnistBatch<Cpu> batch = batcher(items);
    sink += batch.targets.numel();
    total += ms_since(t0);
  }
  return total;
}

double loader_epoch_ms(const MnistDataset& d, const MnistBatcher<Cpu>& batcher, size_t workers,
                       double step_us, int64_t& sink) {
  LoaderOptions o;
  o.batch_size = kBatch;
  o.shuffle = true;
  o.seed = kSeed;
  o.workers = workers;
  DataLoader loader(d, batcher, o);
  auto t0 = Clock::now();
  for (auto& batch : loader) {
    sink += batch.targets.numel();
    if (step_us > 0) spin_for(step_us);
  }
  return ms_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  if (!MnistDataset::available(Split::Train)) {
    std::printf("data_bench: no Fashion-MNIST in %s (Debian: dataset-fashion-mnist)\n",
                MnistDataset::default_dir().c_str());
    return 0;
  }
  auto t0 = Clock::now();
  MnistDataset train(Split::Train);
  std::printf("Fashion-MNIST train: %zu items, opened (gunzip + checks) in %.0f ms\n", train.len(),
              ms_since(t0));
  MnistBatcher<Cpu> batcher;
  const size_t batches = (train.len() + kBatch - 1) / kBatch;
  int64_t sink = 0;

  bare_epoch_ms(train, batcher, sink);  // warm-up: page in the data, fill allocator caches
  std::vector<double> bare;
  for (int r = 0; r < reps; ++r) bare.push_back(bare_epoch_ms(train, batcher, sink));
  const double bare_ms = best(bare);
  const double step_us = bare_ms * 1000.0 / static_cast<double>(batches);

  std::printf(
      "%zu batches of %zu, best of %d epochs; step = %.1f us per batch (the bare "
      "batch time)\n\n",
      batches, kBatch, reps, step_us);
  std::printf("%-22s %12s %12s %12s\n", "config", "ms/epoch", "us/batch", "vs bare");
  auto row = [&](const char* name, double ms, double reference) {
    std::printf("%-22s %12.1f %12.2f %11.2fx\n", name, ms,
                ms * 1000.0 / static_cast<double>(batches), ms / reference);
  };
  row("bare (sum of batches)", bare_ms, bare_ms);
  for (double step : {0.0, step_us}) {
    for (size_t w : {0, 1, 2}) {
      std::vector<double> t;
      for (int r = 0; r < reps; ++r) t.push_back(loader_epoch_ms(train, batcher, w, step, sink));
      char name[64];
      std::snprintf(name, sizeof(name), "workers=%zu%s", w, step > 0 ? " +step" : "");
      // With a step, the reference is bare + step done one after the other.
      row(name, best(t), step > 0 ? 2 * bare_ms : bare_ms);
    }
  }
  std::printf(
      "\n(+step rows compare with bare + step run back to back: below 1x means the "
      "workers hid loading behind the step)\n");
  return sink == 0;  // keeps the batches observable
}
