// Autodiff<B>: reverse-mode automatic differentiation as a backend decorator. Every op on an
// Autodiff tensor runs on B and, when an input requires a gradient, records a graph node
// holding what the op's backward rule (the op table's grad column) needs. `backward()` walks
// the graph once, frees it as it goes, and returns the gradients of the leaves.
//
//   using B = ember::Autodiff<ember::Cpu>;
//   auto w = ember::Tensor<B, 2>::random({3, 2}, ember::Distribution::normal(0, 1)).require_grad();
//   auto loss = x.matmul(w).tanh().sum();
//   auto grads = loss.backward();
//   auto dw = w.grad(grads);            // std::optional<Tensor<Cpu, 2>>
//
// Gradient of a gradient: Autodiff<Autodiff<B>>. Memory: `Checkpointing::Balanced`
// recomputes memory-bound ops in backward instead of keeping their outputs.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/autodiff/grad_rules.h"
#include "ember/backend/backend.h"
#include "ember/core/export.h"
#include "ember/ops/decompose.h"

namespace ember {

/// How much of the forward pass the graph keeps for backward.
enum class Checkpointing {
  None,      // keep what each rule needs (fastest backward)
  Balanced,  // keep compute-bound results (matmul); recompute memory-bound ops in backward
};

namespace autodiff {
/// Disables recording on this thread while alive (inference, optimizer updates).
class EMBER_API NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};
/// Sets the checkpointing strategy for graphs recorded on this thread while alive.
class EMBER_API CheckpointScope {
 public:
  explicit CheckpointScope(Checkpointing s);
  ~CheckpointScope();
  CheckpointScope(const CheckpointScope&) = delete;
  CheckpointScope& operator=(const CheckpointScope&) = delete;

 private:
  Checkpointing prev_;
};
EMBER_API bool grad_enabled();
EMBER_API Checkpointing checkpointing();
/// Graph nodes alive in this process (all Autodiff backends): for leak tests.
EMBER_API int64_t live_nodes();
namespace detail {
EMBER_API uint64_t next_node_id();
extern EMBER_API std::atomic<int64_t> g_live_nodes;
}  // namespace detail
}  // namespace autodiff

template <Backend B>
class Autodiff;

/// Gradients of the leaves, by leaf id, as tensors of the inner backend.
template <Backend B>
class Gradients {
 public:
  using H = typename B::Handle;
  const H* find(uint64_t id) const {
    auto it = grads_.find(id);
    return it == grads_.end() ? nullptr : &it->second;
  }
  void set(uint64_t id, H h) { grads_.insert_or_assign(id, std::move(h)); }
  bool remove(uint64_t id) { return grads_.erase(id) > 0; }
  size_t size() const { return grads_.size(); }
  bool empty() const { return grads_.empty(); }

 private:
  std::unordered_map<uint64_t, H> grads_;
};

template <Backend B>
class Autodiff {
 public:
  using Inner = B;
  using InnerHandle = typename B::Handle;
  static constexpr bool kIsAutodiff = true;

  struct Node {
    Node() { ++autodiff::detail::g_live_nodes; }
    ~Node() { --autodiff::detail::g_live_nodes; }
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    uint64_t id = autodiff::detail::next_node_id();
    bool leaf = false;
    bool consumed = false;
    Op op{OpCode::Full, {}};
    std::vector<std::shared_ptr<Node>> parents;  // per input; null where untracked
    std::vector<TensorMeta> in_meta;
    std::vector<InnerHandle> saved_in;  // inputs the rule needs (or that recompute needs)
    std::vector<bool> has_in;
    InnerHandle out{};  // the output, when kept
    bool has_out = false;
    bool recompute = false;  // output recomputed from the parents in backward
  };

  struct Handle {
    InnerHandle value{};
    std::shared_ptr<Node> node;  // null: no gradient flows through this tensor
  };

  static std::string_view name() { return "autodiff"; }
  static Device default_device() { return B::default_device(); }
  static const TensorMeta& meta(const Handle& h) { return B::meta(h.value); }
  static Device device(const Handle& h) { return B::device(h.value); }
  static Handle from_data(const TensorData& d, Device dev) { return {B::from_data(d, dev), {}}; }
  static TensorData to_data(const Handle& h) { return B::to_data(h.value); }
  static bool supports(OpCode c) { return info(c).differentiable; }

  static Handle run(const Op& op, std::span<Handle> in, const TensorMeta& out, Device dev);

  // ---- the autodiff API (used by Tensor's require_grad, backward, grad, ...) -------------
  static Handle require_grad(Handle h) {
    if (!is_float(meta(h).dtype))
      throw DTypeError("[require_grad] only float tensors have gradients, got " +
                       std::string(ember::name(meta(h).dtype)));
    if (h.node && h.node->leaf) return h;
    auto n = std::make_shared<Node>();
    n->leaf = true;
    n->out = h.value;
    n->has_out = true;
    return {std::move(h.value), std::move(n)};
  }
  static bool is_require_grad(const Handle& h) { return h.node != nullptr; }
  static Handle detach(Handle h) { return {std::move(h.value), {}}; }
  static Gradients<B> backward(const Handle& root);
  static const InnerHandle* grad(const Gradients<B>& g, const Handle& h) {
    return h.node && h.node->leaf ? g.find(h.node->id) : nullptr;
  }
  static bool grad_remove(Gradients<B>& g, const Handle& h) {
    return h.node && h.node->leaf && g.remove(h.node->id);
  }
  static void grad_replace(Gradients<B>& g, const Handle& h, InnerHandle v) {
    if (!h.node || !h.node->leaf)
      throw ValueError("[grad_replace] the tensor is not a leaf that requires grad");
    g.set(h.node->id, std::move(v));
  }
  static const InnerHandle& inner(const Handle& h) { return h.value; }
  static Handle from_inner(InnerHandle v) { return {std::move(v), {}}; }

 private:
  static bool memory_bound(OpCode c) {
    return is_elementwise(c) || info(c).family == OpFamily::Movement;
  }
  static InnerHandle value_of(Node& n, std::unordered_map<Node*, InnerHandle>& cache);
};

template <Backend B>
typename Autodiff<B>::Handle Autodiff<B>::run(const Op& op, std::span<Handle> in,
                                              const TensorMeta& out, Device dev) {
  bool tracked = false;
  for (const Handle& h : in) tracked = tracked || h.node != nullptr;
  tracked =
      tracked && autodiff::grad_enabled() && info(op.code).differentiable && is_float(out.dtype);
  // differentiated through its decomposition: the graph records the decomposition's ops
  if (tracked && info(op.code).grad_by_decomposition) return decompose<Autodiff<B>>(op, in, out);
  detail::HandleBuffer<InnerHandle> vals(in.size());
  // untracked: hand the values over, so a temporary's buffer can be reused in place
  for (size_t i = 0; i < in.size(); ++i) vals[i] = tracked ? in[i].value : std::move(in[i].value);
  InnerHandle result = run_validated<B>(op, vals.span(), out, dev);
  if (!tracked) return {std::move(result), {}};

  auto n = std::make_shared<Node>();
  n->op = op;
  Save save = info(op.code).save;
  bool balanced = autodiff::checkpointing() == Checkpointing::Balanced;
  n->recompute = balanced && memory_bound(op.code);
  bool need_x = save == Save::X || save == Save::XY || n->recompute;
  bool need_y = save == Save::Y || save == Save::XY;
  n->parents.reserve(in.size());
  n->has_in.assign(in.size(), false);
  n->saved_in.resize(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    n->parents.push_back(in[i].node);
    n->in_meta.push_back(B::meta(vals[i]));
    // balanced: a tracked input's value comes back from its node when backward needs it
    bool from_parent = balanced && in[i].node != nullptr;
    if (need_x && !from_parent) {
      n->saved_in[i] = vals[i];
      n->has_in[i] = true;
    }
  }
  // balanced: compute-bound results are kept (checkpoints); recomputable ones never are
  if (n->recompute ? false : (need_y || balanced)) {
    n->out = result;
    n->has_out = true;
  }
  return {std::move(result), std::move(n)};
}

template <Backend B>
typename B::Handle Autodiff<B>::value_of(Node& n, std::unordered_map<Node*, InnerHandle>& cache) {
  if (n.has_out) return n.out;
  if (auto it = cache.find(&n); it != cache.end()) return it->second;
  if (!n.recompute)
    throw Error("[backward] the value of a '" + std::string(ember::name(n.op.code)) +
                "' node was not kept");
  std::vector<InnerHandle> ins(n.parents.size());
  for (size_t i = 0; i < ins.size(); ++i)
    ins[i] = n.has_in[i] ? n.saved_in[i] : value_of(*n.parents[i], cache);
  Op op = n.op;
  SmallVec<const TensorMeta*, 4> metas;
  for (auto& h : ins) metas.push_back(&B::meta(h));
  TensorMeta out = infer(op, std::span<const TensorMeta* const>(metas.data(), metas.size()));
  InnerHandle v = run_validated<B>(op, std::span<InnerHandle>(ins), out, B::device(ins[0]));
  cache.emplace(&n, v);
  return v;
}

template <Backend B>
Gradients<B> Autodiff<B>::backward(const Handle& root) {
  using D = detail::Dyn<B>;
  Gradients<B> result;
  if (!root.node) throw ValueError("[backward] the tensor does not require grad");
  if (root.node->consumed)
    throw ValueError("[backward] this graph was already used by a backward pass");
  // topological order (iterative DFS: deep graphs must not overflow the stack)
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_map<Node*, bool> visited;
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack{{root.node, 0}};
  visited[root.node.get()] = true;
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next < n->parents.size()) {
      auto p = n->parents[next++];
      if (p && !visited[p.get()]) {
        if (p->consumed)
          throw ValueError("[backward] part of this graph was already used by a backward pass");
        visited[p.get()] = true;
        stack.push_back({p, 0});
      }
      continue;
    }
    order.push_back(n);
    stack.pop_back();
  }
  std::unordered_map<Node*, D> grads;
  std::unordered_map<Node*, InnerHandle> recomputed;
  const TensorMeta& rm = meta(root);
  grads[root.node.get()] = D::full(rm.shape, Scalar(1.0), rm.dtype, device(root));
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node& n = **it;
    auto git = grads.find(&n);
    if (git == grads.end()) continue;  // nothing flowed here
    D g = std::move(git->second);
    grads.erase(git);
    if (n.leaf) {
      result.set(n.id, g.handle());
      continue;
    }
    std::vector<D> xs(n.parents.size());
    Save save = info(n.op.code).save;
    if (save == Save::X || save == Save::XY)
      for (size_t i = 0; i < xs.size(); ++i)
        xs[i] = D(n.has_in[i] ? n.saved_in[i] : value_of(*n.parents[i], recomputed));
    D y;
    if (save == Save::Y || save == Save::XY) y = D(value_of(n, recomputed));
    grad::Ctx<B> ctx{n.op, n.in_meta, xs, y, g};
    ctx.needs = 0;  // the inputs a gradient flows to (the others have no node)
    for (size_t i = 0; i < n.parents.size() && i < 64; ++i)
      if (n.parents[i]) ctx.needs |= uint64_t{1} << i;
    std::vector<D> gin = grad::backward_rule<B>(ctx);
    for (size_t i = 0; i < n.parents.size() && i < gin.size(); ++i) {
      Node* p = n.parents[i].get();
      if (!p || !gin[i].defined()) continue;
      D gi = gin[i].shape() == n.in_meta[i].shape ? gin[i] : gin[i].sum_to(n.in_meta[i].shape);
      auto [slot, fresh] = grads.try_emplace(p, gi);
      if (!fresh) slot->second = slot->second + gi;
    }
    // this node is done: free what it kept
    n.consumed = true;
    n.saved_in.clear();
    n.out = InnerHandle{};
    n.has_out = false;
    recomputed.erase(&n);
  }
  for (auto& n : order)
    if (!n->leaf) n->parents.clear();
  return result;
}

}  // namespace ember
