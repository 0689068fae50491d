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
#include <array>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/backend/device_memory.h"
#include "ember/distributed/grad_sync.h"
#include "ember/distributed/nccl.h"
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
/// gradients travel in buckets (GradSyncOptions), in the module's parameter order, which every
/// rank shares; a parameter without a gradient on this rank counts as zeros. CUDA gradients are
/// averaged on the device through NCCL (packed into buckets there): the call returns when the
/// all-reduce has run, or throws DistributedError when a rank is lost meanwhile.
template <Backend B, nn::Module M>
void all_reduce_grads(ProcessGroup& pg, optim::GradientsParams<B>& grads, const M& model,
                      const GradSyncOptions& o = {}) {
  using I = typename B::Inner;
  std::optional<Device> device;  // the first float parameter's
  nn::for_each_param(model, [&](const std::string&, const auto& p) {
    if constexpr (detail::ParamTensor<std::decay_t<decltype(p.val())>>::is_float)
      if (!device && p.trainable()) device = p.val().device();
  });
  if (!device) return;
  const GradTransport t = resolve_grad_transport(pg, *device, o.transport);
  if (t == GradTransport::Host && pg.world_size() == 1) return;  // nothing to add

  // Each float parameter's gradient (zeros where it has none), f32 and flat, with a function
  // that sets a flat f32 mean back as its gradient.
  struct Entry {
    Tensor<I, 1> flat;
    std::function<void(const Tensor<I, 1>&)> set;
  };
  std::vector<Entry> entries;
  nn::for_each_param(model, [&](const std::string&, const auto& p) {
    using V = detail::ParamTensor<std::decay_t<decltype(p.val())>>;
    constexpr int D = V::rank;
    if constexpr (V::is_float) {
      if (!p.trainable()) return;
      const auto& v = p.val();
      auto g = grads.template get<D>(p.id());
      Tensor<I, D> have = g ? *g : Tensor<I, D>::zeros(v.shape(), v.device(), v.dtype());
      auto flat = have.template reshape<1>(std::array<int64_t, 1>{v.shape().numel()});
      entries.push_back({flat.cast(DType::F32), [&grads, id = p.id(), shape = v.shape(),
                                                 dt = have.dtype()](const Tensor<I, 1>& mean) {
                           std::array<int64_t, D> dims{};
                           for (int d = 0; d < D; ++d) dims[size_t(d)] = shape[d];
                           grads.set(id, mean.cast(dt).template reshape<D>(dims));
                         }});
    }
  });

  size_t first = 0, floats = 0;
  NcclGroup* group = nullptr;
  NcclGroup::Marker queued;  // the last bucket's all-reduce on the device's stream
  auto flush = [&](size_t end) {
    if (end == first) return;
    const bool nccl = t == GradTransport::Nccl;
    std::vector<Tensor<I, 1>> parts;
    for (size_t i = first; i < end; ++i) parts.push_back(entries[i].flat);
    // One tensor a bucket, on the gradients' device (NCCL writes into it: its own buffer).
    Tensor<I, 1> bucket = parts.size() > 1 ? cat(parts, 0) : nccl ? parts[0] * 1.0f : parts[0];
    if (nccl) {  // queued on the stream: what reads the bucket later runs after it
      group = &pg.nccl(bucket.device().index);
      with_device_memory(bucket, [&](const DeviceMemory& m) {
        group->all_reduce(m.address, size_t(bucket.shape()[0]), DType::F32, Reduce::Mean, m.stream);
        queued = group->mark(m.stream);
      });
    } else {  // one copy to the host and back a bucket
      bucket =
          Tensor<I, 1>::from_data(pg.all_reduce(bucket.to_data(), Reduce::Mean), bucket.device());
    }
    int64_t at = 0;
    for (size_t i = first; i < end; ++i) {  // views of the bucket
      int64_t n = entries[i].flat.shape()[0];
      entries[i].set(bucket.slice({Slice(at, at + n)}));
      at += n;
    }
    first = end;
    floats = 0;
  };
  try {
    for (size_t i = 0; i < entries.size(); ++i) {
      floats += size_t(entries[i].flat.shape()[0]);
      if (floats * sizeof(float) >= o.bucket_bytes) flush(i + 1);
    }
    flush(entries.size());
  } catch (...) {
    // Buckets already queued are waited for (under the watch) before the error goes on: left in
    // flight, one waiting for a lost rank would hang whatever next waits for the stream.
    if (group && queued.event) {
      try {
        group->wait(queued, "all_reduce_grads");
      } catch (const std::exception&) {  // the first error is the one reported
      }
    }
    throw;
  }
  // Every bucket's all-reduce queued, the last one waited for (the stream runs them in order),
  // with the stream free for others meanwhile: a lost rank is an error here, not a hang later.
  if (group) group->wait(queued, "all_reduce_grads");
}

}  // namespace ember::dist
