// Run by ember-run (ctest): data-parallel training of a small model (an MLP by default), each
// rank on its shard of every batch, against one process training on the whole batches. Every rank
// starts from its own random parameters (rank 0's are broadcast); rank 0 trains the one-process
// reference from the same start. After an epoch and a half every rank's parameters must equal
// the reference's within float tolerance, and each other's exactly. Exits 1 if not.
//
//   dp_check            on the CPU, gradients through the host (2 and 4 ranks)
//   dp_check cuda       rank r on GPU r % GPUs: NCCL where every rank has a GPU of its own,
//                       the host where ranks share one; exits 77 (skipped) without a GPU
//   dp_check cuda nccl  NCCL forced, one rank too, in buckets of 256 bytes (a bucket of one
//                       gradient, buckets of several, a gradient larger than a bucket); exits
//                       77 where the ranks outnumber the GPUs (NCCL takes one GPU a rank)
//   ... cnn             the main job's CNN instead of the MLP, 28x28 images, for 300 steps on
//                       2 ranks (a global batch of 8, Adam at 1e-3)
//   ... transformer     a pre-norm transformer encoder layer (attention, layer norms, feed-
//                       forward; no dropout) under a linear head on sequences of 8 x 16
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#ifdef EMBER_DP_CUDA
#include "ember/backends/cuda/driver.h"
#endif
#include "ember/data/loader.h"
#include "ember/distributed/data_parallel.h"
#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/layers/transformer.h"
#include "ember/nn/loss.h"
#include "ember/optim/adam.h"
#include "ember/optim/sgd.h"
#include "examples/mnist/cnn.h"

using namespace ember;
using B = Autodiff<Dispatch>;

namespace {

struct Net {
  nn::Linear<B> fc1, fc2;
  EMBER_MODULE(Net, fc1, fc2)
  Tensor<B, 2> forward(const Tensor<B, 2>& x) const {
    return fc2.forward(activation::relu(fc1.forward(x)));
  }
  static Net init(Device dev) {
    return {nn::LinearConfig{8, 16}.init<B>(dev), nn::LinearConfig{16, 3}.init<B>(dev)};
  }
};

constexpr size_t kBatch = 4;  // per rank

// What the check trains: the model, its input's shape per item (a pure function of the item's
// index), the classes, the items and how many epochs (in halves), the optimizer and its learning
// rate, and how far the data-parallel parameters may be from the one-process ones.
struct Mlp {
  using Model = Net;
  static constexpr const char* kName = "MLP";
  static constexpr int kRank = 2;
  static constexpr int64_t kClasses = 3;
  static constexpr size_t kItems = 96, kHalfEpochs = 3;
  static constexpr double kLr = 1e-2, kTolerance = 1e-5;
  static std::vector<int64_t> item_shape() { return {8}; }
  static Model init(Device dev) { return Net::init(dev); }
  static auto optimizer() { return optim::AdamConfig{}.init<B>(); }
};
struct Cnn {
  using Model = mnist::Cnn<B>;
  static constexpr const char* kName = "CNN";
  static constexpr int kRank = 4;
  static constexpr int64_t kClasses = 10;
  static constexpr size_t kItems = 2400, kHalfEpochs = 2;
  static constexpr double kLr = 1e-3, kTolerance = 1e-4;
  static std::vector<int64_t> item_shape() { return {1, 28, 28}; }
  static Model init(Device dev) { return Model::init(dev); }
  static auto optimizer() { return optim::AdamConfig{}.init<B>(); }
};

// A transformer encoder layer whose outputs, averaged over the sequence, a linear head classes.
struct Encoder {
  nn::TransformerEncoderLayer<B> layer;
  nn::Linear<B> head;
  EMBER_MODULE(Encoder, layer, head)
  Tensor<B, 2> forward(const Tensor<B, 3>& x) const {
    auto h = layer.forward(x).mean_dim(1);  // [n, 1, d]
    return head.forward(h.reshape<2>(std::array<int64_t, 2>{h.shape()[0], h.shape()[2]}));
  }
};
struct Transformer {
  using Model = Encoder;
  static constexpr const char* kName = "transformer";
  static constexpr int kRank = 3;
  static constexpr int64_t kClasses = 4;
  static constexpr size_t kItems = 384, kHalfEpochs = 6;
  static constexpr double kLr = 0.05, kTolerance = 1e-4;
  static std::vector<int64_t> item_shape() { return {8, 16}; }
  // SGD: the key projection's bias has a gradient of zero but for rounding (softmax ignores a
  // shift shared by a row's scores), which Adam would scale up to steps of the learning rate.
  static auto optimizer() {
    optim::SgdConfig c;
    c.momentum = 0.9;
    return c.init<B>();
  }
  static Model init(Device dev) {
    nn::TransformerEncoderLayerConfig c;
    c.d_model = 16;
    c.n_heads = 2;
    c.d_ff = 32;
    c.dropout = 0;  // dropout draws differ between the ranks and the one process
    c.norm_first = true;
    return {c.init<B>(dev), nn::LinearConfig{16, kClasses}.init<B>(dev)};
  }
};

// The items' inputs (a pure function of each index) and classes.
template <class W>
std::pair<Tensor<B, W::kRank>, Tensor<B, 1, Int>> batch_of(const std::vector<size_t>& items,
                                                           Device dev) {
  std::vector<int64_t> shape = W::item_shape();
  int64_t per = 1;
  for (int64_t d : shape) per *= d;
  std::vector<float> f;
  std::vector<int64_t> c;
  for (size_t i : items) {
    for (int64_t k = 0; k < per; ++k)
      f.push_back(std::sin(0.37f * float(i) + 1.3f * float(k % 8) + 0.011f * float(k)));
    c.push_back(int64_t(i % size_t(W::kClasses)));
  }
  shape.insert(shape.begin(), int64_t(items.size()));
  return {Tensor<B, W::kRank>::from_data(TensorData::from<float>(f, Shape(shape)), dev),
          Tensor<B, 1, Int>::from_data(TensorData::from<int64_t>(c, {int64_t(items.size())}), dev)};
}

// Trains `net` for `steps` batches of `loader`; with a group of several ranks, the gradients
// are averaged over it.
template <class W, class L>
void train(typename W::Model& net, L& loader, int steps, Device dev, dist::ProcessGroup* pg,
           const dist::GradSyncOptions& sync = {}) {
  auto opt = W::optimizer();
  auto ce = nn::CrossEntropyLossConfig{}.init();
  int done = 0;
  while (done < steps)
    for (auto& items : loader) {
      auto [x, y] = batch_of<W>(items, dev);
      auto grads =
          optim::GradientsParams<B>::from_grads(ce.forward(net.forward(x), y).backward(), net);
      if (pg) dist::all_reduce_grads(*pg, grads, net, sync);
      opt.step(W::kLr, net, grads);
      if (++done == steps) break;
    }
}

template <class M>
std::vector<float> flat(const M& n) {
  std::vector<float> out;
  nn::for_each_param(n, [&](const std::string&, const auto& p) {
    TensorData d = p.val().to_data();
    auto v = d.template as<float>();
    out.insert(out.end(), v.begin(), v.end());
  });
  return out;
}

// Trains W's model data-parallel on this group and, on rank 0, in one process on the whole
// batches; the count of mismatches (every rank's parameters against each other, rank 0's
// against the one-process ones).
template <class W>
int check(dist::ProcessGroup& pg, Device dev, const dist::GradSyncOptions& sync) {
  const int rank = pg.rank(), w = pg.world_size();
  data::InMemoryDataset<size_t> ds([] {
    std::vector<size_t> v(W::kItems);
    for (size_t i = 0; i < W::kItems; ++i) v[i] = i;
    return v;
  }());
  int steps = int(W::kItems / (kBatch * w) * W::kHalfEpochs / 2);

  seed(100 + uint64_t(rank));  // different starts: the broadcast makes them rank 0's
  auto net = W::init(dev);
  (void)flat(net);  // initialized here, on this rank's seed
  dist::broadcast_params(pg, net);
  data::DataLoader shard(ds, {.batch_size = kBatch,
                              .shuffle = true,
                              .seed = 5,
                              .num_shards = size_t(w),
                              .shard = size_t(rank)});
  train<W>(net, shard, steps, dev, &pg, sync);
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
    auto ref = W::init(dev);
    data::DataLoader whole(ds, {.batch_size = kBatch * size_t(w), .shuffle = true, .seed = 5});
    train<W>(ref, whole, steps, dev, nullptr);
    std::vector<float> want = flat(ref);
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, double(std::abs(want[i] - mine[i])) / (1 + std::abs(want[i])));
    std::printf(
        "%s: %d ranks x batch %zu vs one process x batch %zu: %d steps, %zu parameters, "
        "largest difference %.3g\n",
        W::kName, w, kBatch, kBatch * w, steps, want.size(), worst);
    if (!(worst < W::kTolerance)) ++bad;
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0;
  try {
    auto pg = dist::ProcessGroup::from_env();
    rank = pg.rank();
    int w = pg.world_size();
    // [cpu | cuda [nccl]] [cnn | transformer], checked before any device work
    int i = 1;
    const auto next_is = [&](const char* word) {
      if (i < argc && std::string(argv[i]) == word) return ++i, true;
      return false;
    };
    std::string kind = "cpu", model = "mlp";
    bool force_nccl = false;
    if (next_is("cuda"))
      kind = "cuda", force_nccl = next_is("nccl");
    else
      next_is("cpu");
    if (next_is("cnn"))
      model = "cnn";
    else if (next_is("transformer"))
      model = "transformer";
    if (i < argc) {
      std::fprintf(stderr, "usage: dp_check [cpu | cuda [nccl]] [cnn | transformer]\n");
      return 2;
    }
    Device dev = Device::parse("cpu");
    dist::GradSyncOptions sync;
    if (kind == "cuda") {
#ifndef EMBER_DP_CUDA
      std::printf("rank %d: skipped: built without the CUDA backend\n", rank);
      return 77;
#else
      std::string why;
      if (!cuda::available(&why)) {
        std::printf("rank %d: skipped: no CUDA GPU (%s)\n", rank, why.c_str());
        return 77;
      }
      const int gpus = cuda::device_count();
      dev = Device::parse("cuda:" + std::to_string(rank % gpus));
      if (force_nccl) {
        if (!dist::nccl_available(&why) || w > gpus) {
          std::printf("rank %d: skipped: %s\n", rank,
                      w > gpus ? "NCCL takes one GPU a rank, and the ranks outnumber the GPUs"
                               : why.c_str());
          return 77;
        }
        sync = {.bucket_bytes = 256, .transport = dist::GradTransport::Nccl};
      } else if (w > gpus) {
        sync.transport = dist::GradTransport::Host;  // NCCL takes one GPU a rank
      }
      if (rank == 0)
        std::printf(
            "%d rank(s) on %d GPU(s), gradients through %s\n", w, gpus,
            dist::resolve_grad_transport(pg, dev, sync.transport) == dist::GradTransport::Nccl
                ? "NCCL"
                : "the host");
#endif
    }
    const int bad = model == "cnn"           ? check<Cnn>(pg, dev, sync)
                    : model == "transformer" ? check<Transformer>(pg, dev, sync)
                                             : check<Mlp>(pg, dev, sync);
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
