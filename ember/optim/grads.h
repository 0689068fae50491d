// GradientsParams<B>: the gradients of a module's parameters, keyed by nn::ParamId, as
// tensors of the inner backend (B is an Autodiff backend). What optimizers, clipping and
// gradient accumulation work on.
//
//   using B = Autodiff<Cpu>;
//   auto loss = model.forward(x).sub(y).square().mean();
//   auto grads = optim::GradientsParams<B>::from_grads(loss.backward(), model);
//   std::optional<Tensor<Cpu, 2>> dw = grads.get<2>(model.fc1.weight.id());
//   grads.scale(0.5);                       // every gradient times 0.5
//
// Storage is rank-erased (inner handles); each entry remembers its rank when it is stored,
// so whole-collection operations (add, scale, clamp, norms) need no module.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "ember/backend/extern.h"
#include "ember/nn/slot.h"

namespace ember::optim {

namespace detail {
/// Operations on a gradient handle of one rank, chosen when the gradient is stored.
template <Backend I>
struct GradOps {
  using H = typename I::Handle;
  H (*add)(const H&, const H&);
  H (*mul)(const H&, const Tensor<I, 1>&);  // times a one-element factor
  H (*clamp)(const H&, double, double);
  Tensor<I, 1> (*sq_sum)(const H&, DType);  // the sum of squares, in the given dtype
};

template <Backend I, int D>
Tensor<I, D> as_rank(const Tensor<I, 1>& one) {
  std::array<int64_t, D> ones{};
  ones.fill(1);
  return one.template reshape<D>(ones);
}

template <Backend I, int D>
inline const GradOps<I> kGradOps = {
    [](const typename I::Handle& a, const typename I::Handle& b) {
      return (Tensor<I, D>(a) + Tensor<I, D>(b)).handle();
    },
    [](const typename I::Handle& a, const Tensor<I, 1>& f) {
      Tensor<I, D> t(a);
      auto fd = f.dtype() == t.dtype() ? f : f.cast(t.dtype());
      if (fd.device() != t.device()) fd = fd.to_device(t.device());
      return (t * as_rank<I, D>(fd)).handle();
    },
    [](const typename I::Handle& a, double lo, double hi) {
      return Tensor<I, D>(a).clamp(lo, hi).handle();
    },
    [](const typename I::Handle& a, DType acc) {
      Tensor<I, D> t(a);
      if (t.dtype() != acc) t = t.cast(acc);
      return t.square().sum();
    },
};
}  // namespace detail

template <Backend B>
class GradientsParams {
  static_assert(AutodiffBackend<B>, "GradientsParams<B> needs an Autodiff backend B");

 public:
  using Inner = typename B::Inner;
  using Handle = typename Inner::Handle;

  GradientsParams() = default;

  /// The gradients of `model`'s trainable parameters from a backward pass. Parameters the
  /// loss does not depend on (and frozen ones) have no entry.
  template <nn::Module M>
  static GradientsParams from_grads(Gradients<Inner> grads, const M& model) {
    return from_grads(std::move(grads), nn::slots<B>(model));
  }
  /// The same over a module's slots (nn::slots).
  static GradientsParams from_grads(Gradients<Inner> grads, const std::vector<nn::Slot>& params);

  /// The gradient of parameter `id` as a rank-D tensor, if there is one. Throws ShapeError
  /// if it was stored with another rank.
  template <int D>
  std::optional<Tensor<Inner, D>> get(nn::ParamId id) const {
    auto it = grads_.find(id);
    if (it == grads_.end()) return std::nullopt;
    return Tensor<Inner, D>(it->second.h);
  }
  template <int D>
  void set(nn::ParamId id, const Tensor<Inner, D>& g) {
    grads_.insert_or_assign(id, Entry{g.handle(), &detail::kGradOps<Inner, D>});
  }
  bool remove(nn::ParamId id) { return grads_.erase(id) > 0; }
  bool contains(nn::ParamId id) const { return grads_.count(id) > 0; }
  size_t size() const { return grads_.size(); }
  bool empty() const { return grads_.empty(); }
  void clear() { grads_.clear(); }
  /// The ids that have a gradient, in increasing order.
  std::vector<nn::ParamId> ids() const {
    std::vector<nn::ParamId> out;
    for (const auto& [id, e] : grads_) out.push_back(id);
    return out;
  }

  /// Adds `other`'s gradients into these (a parameter only in `other` is copied).
  void add(const GradientsParams& other) {
    for (const auto& [id, e] : other.grads_) {
      auto it = grads_.find(id);
      if (it == grads_.end())
        grads_.emplace(id, e);
      else
        it->second.h = it->second.ops->add(it->second.h, e.h);
    }
  }
  /// Every gradient times `factor`.
  void scale(double factor) {
    if (grads_.empty()) return;
    const Handle& first = grads_.begin()->second.h;
    auto f = Tensor<Inner, 1>::full({1}, factor, Inner::device(first), accumulation_dtype());
    mul(f);
  }
  /// Every gradient times a one-element tensor (no host round trip).
  void mul(const Tensor<Inner, 1>& factor) {
    for (auto& [id, e] : grads_) e.h = e.ops->mul(e.h, factor);
  }
  /// One gradient times a one-element tensor.
  void mul(nn::ParamId id, const Tensor<Inner, 1>& factor) {
    Entry& e = grads_.at(id);
    e.h = e.ops->mul(e.h, factor);
  }
  /// Every gradient clamped to [lo, hi].
  void clamp(double lo, double hi) {
    for (auto& [id, e] : grads_) e.h = e.ops->clamp(e.h, lo, hi);
  }
  /// The L2 norm of one gradient, as a one-element tensor.
  Tensor<Inner, 1> norm(nn::ParamId id) const {
    const Entry& e = grads_.at(id);
    return e.ops->sq_sum(e.h, accumulation_dtype()).sqrt();
  }
  /// The L2 norm of all gradients together (as if concatenated), as a one-element tensor
  /// in f32 (f64 when any gradient is f64). Zero when there are no gradients.
  Tensor<Inner, 1> global_norm() const {
    DType acc = accumulation_dtype();
    std::optional<Tensor<Inner, 1>> total;
    for (const auto& [id, e] : grads_) {
      auto s = e.ops->sq_sum(e.h, acc);
      if (total && s.device() != total->device()) s = s.to_device(total->device());
      total = total ? *total + s : s;
    }
    if (!total) return Tensor<Inner, 1>::zeros({1}, Inner::default_device(), acc);
    return total->sqrt();
  }

 private:
  struct Entry {
    Handle h;
    const detail::GradOps<Inner>* ops;
  };
  DType accumulation_dtype() const {
    for (const auto& [id, e] : grads_)
      if (Inner::meta(e.h).dtype == DType::F64) return DType::F64;
    return DType::F32;
  }

  std::map<nn::ParamId, Entry> grads_;
};

template <Backend B>
GradientsParams<B> GradientsParams<B>::from_grads(Gradients<Inner> grads,
                                                  const std::vector<nn::Slot>& params) {
  GradientsParams out;
  for (const nn::Slot& p : params) {
    if (!p.is_param() || !p.float_kind() || p.empty() || !p.trainable() || !p.is_initialized())
      continue;
    nn::visit_rank(p.rank(), [&]<int D>() {
      if (auto g = Tensor<B, D>(p.handle<B>()).grad(grads)) out.set(p.id(), *g);
    });
  }
  return out;
}

// Compiled once in the library for Autodiff<Dispatch> (ember/optim/instantiate.cpp).
extern template class EMBER_API GradientsParams<AutodiffDispatch>;

}  // namespace ember::optim
