// Data-parallel training across the ranks of a ProcessGroup (docs/distributed.md): every rank
// holds a replica of the model, trains on its shard of each batch (LoaderOptions::num_shards
// and shard), and averages the gradients with the others before the optimizer step, so every
// replica takes the same step as one process would on the whole batch.
//
//   auto pg = ember::dist::ProcessGroup::from_env();
//   using B = ember::Autodiff<ember::Cpu>;
//   auto fc = ember::nn::LinearConfig{4, 2}.init<B>();
//   ember::dist::broadcast_params(pg, fc);           // rank 0's initial parameters everywhere
//   auto x = ember::Tensor<B, 2>::ones({8, 4});
//   auto grads = ember::optim::GradientsParams<B>::from_grads(
//       fc.forward(x).square().mean().backward(), fc);
//   ember::dist::all_reduce_grads(pg, grads, fc);    // the mean over the ranks
#pragma once
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/distributed/process_group.h"
#include "ember/nn/module.h"
#include "ember/optim/grads.h"

namespace ember::dist {

namespace detail {
template <class T>
struct ParamTensor;
template <Backend B, int D, TensorKind K>
struct ParamTensor<Tensor<B, D, K>> {
  static constexpr int rank = D;
  static constexpr bool is_float = std::is_same_v<K, Float>;
};
}  // namespace detail

/// Sets every parameter of `model` to rank `root`'s value.
template <nn::Module M>
void broadcast_params(ProcessGroup& pg, M& model, int root = 0) {
  if (pg.world_size() == 1) return;
  nn::for_each_param(model, [&](const std::string&, auto& p) {
    auto v = p.val();
    using T = std::decay_t<decltype(v)>;
    p.set(T::from_data(pg.broadcast(v.to_data(), root), v.device()));
  });
}

/// Replaces each gradient of `model`'s float parameters by its mean over the ranks. The
/// gradients travel in buckets of about `bucket_bytes` (f32), in the module's parameter order,
/// which every rank shares; a parameter without a gradient on this rank counts as zeros.
template <Backend B, nn::Module M>
void all_reduce_grads(ProcessGroup& pg, optim::GradientsParams<B>& grads, const M& model,
                      size_t bucket_bytes = size_t(25) << 20) {
  if (pg.world_size() == 1) return;
  using I = typename B::Inner;
  std::vector<float> bucket;
  std::vector<std::function<void(const float*)>> unpack;  // each entry's gradient, set back
  std::vector<size_t> offsets;
  auto flush = [&] {
    if (bucket.empty()) return;
    pg.all_reduce(bucket.data(), bucket.size(), Reduce::Mean);
    for (size_t i = 0; i < unpack.size(); ++i) unpack[i](bucket.data() + offsets[i]);
    bucket.clear();
    unpack.clear();
    offsets.clear();
  };
  nn::for_each_param(model, [&](const std::string&, const auto& p) {
    using V = detail::ParamTensor<std::decay_t<decltype(p.val())>>;
    constexpr int D = V::rank;
    if constexpr (V::is_float) {
      if (!p.trainable()) return;
      const auto& v = p.val();
      auto g = grads.template get<D>(p.id());
      Tensor<I, D> have = g ? *g : Tensor<I, D>::zeros(v.shape(), v.device(), v.dtype());
      TensorData d = have.to_data().convert(DType::F32);
      std::span<const float> f = d.template as<float>();
      offsets.push_back(bucket.size());
      bucket.insert(bucket.end(), f.begin(), f.end());
      unpack.push_back([&grads, id = p.id(), shape = v.shape(), dev = v.device(),
                        dt = have.dtype()](const float* mean) {
        TensorData back =
            TensorData::from<float>(std::span<const float>(mean, size_t(shape.numel())), shape);
        grads.set(id, Tensor<I, D>::from_data(back.convert(dt), dev));
      });
      if (bucket.size() * sizeof(float) >= bucket_bytes) flush();
    }
  });
  flush();
}

}  // namespace ember::dist
