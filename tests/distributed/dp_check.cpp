// Run by ember-run on 2 and 4 ranks (ctest): data-parallel training of a small MLP with Adam,
// each rank on its shard of every batch, against one process training on the whole batches.
// Every rank starts from its own random parameters (rank 0's are broadcast); rank 0 trains the
// one-process reference from the same start. After an epoch and a half every rank's parameters
// must equal the reference's within float tolerance, and each other's exactly. Exits 1 if not.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ember/data/loader.h"
#include "ember/distributed/data_parallel.h"
#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/loss.h"
#include "ember/optim/adam.h"

using namespace ember;
using B = Autodiff<Cpu>;

namespace {

struct Net {
  nn::Linear<B> fc1, fc2;
  EMBER_MODULE(Net, fc1, fc2)
  Tensor<B, 2> forward(const Tensor<B, 2>& x) const {
    return fc2.forward(activation::relu(fc1.forward(x)));
  }
  static Net init() {
    return {nn::LinearConfig{8, 16}.init<B>(), nn::LinearConfig{16, 3}.init<B>()};
  }
};

constexpr size_t kItems = 96, kBatch = 4;  // per rank

// Item i: 8 features and a class, a pure function of i.
std::pair<Tensor<B, 2>, Tensor<B, 1, Int>> batch_of(const std::vector<size_t>& items) {
  std::vector<float> f;
  std::vector<int64_t> c;
  for (size_t i : items) {
    for (int k = 0; k < 8; ++k) f.push_back(std::sin(0.37f * float(i) + 1.3f * float(k)));
    c.push_back(int64_t(i % 3));
  }
  return {Tensor<B, 2>::from_data(TensorData::from<float>(f, {int64_t(items.size()), 8})),
          Tensor<B, 1, Int>::from_data(TensorData::from<int64_t>(c, {int64_t(items.size())}))};
}

// Trains `net` for `steps` batches of `loader`; with a group of several ranks, the gradients
// are averaged over it.
template <class L>
void train(Net& net, L& loader, int steps, dist::ProcessGroup* pg) {
  auto opt = optim::AdamConfig{}.init<B>();
  auto ce = nn::CrossEntropyLossConfig{}.init();
  int done = 0;
  while (done < steps)
    for (auto& items : loader) {
      auto [x, y] = batch_of(items);
      auto grads =
          optim::GradientsParams<B>::from_grads(ce.forward(net.forward(x), y).backward(), net);
      if (pg) dist::all_reduce_grads(*pg, grads, net);
      opt.step(1e-2, net, grads);
      if (++done == steps) break;
    }
}

std::vector<float> flat(const Net& n) {
  std::vector<float> out;
  nn::for_each_param(n, [&](const std::string&, const auto& p) {
    TensorData d = p.val().to_data();
    auto v = d.template as<float>();
    out.insert(out.end(), v.begin(), v.end());
  });
  return out;
}

}  // namespace

int main() {
  int rank = 0;
  try {
    auto pg = dist::ProcessGroup::from_env();
    rank = pg.rank();
    int w = pg.world_size();
    data::InMemoryDataset<size_t> ds([] {
      std::vector<size_t> v(kItems);
      for (size_t i = 0; i < kItems; ++i) v[i] = i;
      return v;
    }());
    int steps = int(kItems / (kBatch * w)) * 3 / 2;  // an epoch and a half

    seed(100 + uint64_t(rank));  // different starts: the broadcast makes them rank 0's
    Net net = Net::init();
    (void)flat(net);  // initialized here, on this rank's seed
    dist::broadcast_params(pg, net);
    data::DataLoader shard(ds, {.batch_size = kBatch,
                                .shuffle = true,
                                .seed = 5,
                                .num_shards = size_t(w),
                                .shard = size_t(rank)});
    train(net, shard, steps, &pg);
    std::vector<float> mine = flat(net);

    // Every rank's parameters, gathered: equal to each other bit for bit.
    TensorData all = pg.all_gather(TensorData::from<float>(mine, {int64_t(mine.size())}));
    auto a = all.as<float>();
    int bad = 0;
    for (int r = 0; r < w; ++r)
      for (size_t i = 0; i < mine.size(); ++i)
        if (a[r * mine.size() + i] != mine[i]) ++bad;
    if (rank == 0) {
      seed(100);  // rank 0's start
      Net ref = Net::init();
      data::DataLoader whole(ds, {.batch_size = kBatch * size_t(w), .shuffle = true, .seed = 5});
      train(ref, whole, steps, nullptr);
      std::vector<float> want = flat(ref);
      double worst = 0;
      for (size_t i = 0; i < want.size(); ++i)
        worst = std::max(worst, double(std::abs(want[i] - mine[i])) / (1 + std::abs(want[i])));
      std::printf(
          "%d ranks x batch %zu vs one process x batch %zu: %d steps, %zu parameters, "
          "largest difference %.3g\n",
          w, kBatch, kBatch * w, steps, want.size(), worst);
      if (!(worst < 1e-5)) ++bad;
    }
    // Any rank's failure fails them all.
    int64_t failed = bad ? 1 : 0;
    pg.all_reduce(&failed, 1, DType::I64, dist::Reduce::Max);
    std::printf("rank %d of %d: %s\n", rank, w, failed ? "FAILED" : "ok");
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
}
