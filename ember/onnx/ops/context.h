// Internal: what an ONNX operator's implementation sees (its node, inputs and attributes)
// and the rank-erased tensor helpers the implementations share. Each operator family's file
// registers its operators in one table (register_*_ops).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/autodiff/autodiff.h"
#include "ember/onnx/model.h"
#include "ember/onnx/ops/value.h"
#include "ember/onnx/runtime.h"
#include "ember/ops/dyn.h"

namespace ember::onnx::detail {

template <Backend B>
class Ctx;
/// Runs a subgraph with these inputs, seeing the calling graph's values (If, Loop, Scan).
template <Backend B>
using SubgraphRunner =
    std::function<std::vector<RValue<B>>(const Graph&, const std::vector<RValue<B>>&)>;

/// A node being run on backend B (Dispatch for the runtime; Autodiff<Dispatch> too for
/// generated code that trains).
template <Backend B>
class Ctx {
 public:
  using Tn = Dyn<B>;
  using Val = RValue<B>;
  Ctx(const Node& node, size_t index, int64_t opset, Device dev, std::vector<Val> in,
      SubgraphRunner<B> sub)
      : node_(node),
        index_(index),
        opset_(opset),
        dev_(dev),
        in_(std::move(in)),
        sub_(std::move(sub)) {}

  /// The same node with other inputs (an implementation that runs itself on converted ones).
  Ctx with_inputs(std::vector<Val> in) const {
    return Ctx(node_, index_, opset_, dev_, std::move(in), sub_);
  }
  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  Device device() const { return dev_; }
  size_t num_inputs() const { return in_.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  /// Whether output k is wanted (present and named).
  bool wants(size_t k) const { return k < node_.outputs.size() && !node_.outputs[k].empty(); }

  bool has(size_t k) const { return k < in_.size() && in_[k].kind != Value::Kind::None; }
  const Tn& in(size_t k) const;
  const Val& value(size_t k) const;
  std::optional<Tn> opt(size_t k) const { return has(k) ? std::optional<Tn>(in(k)) : std::nullopt; }
  /// An integer input's values on the host (shapes, axes, pads, ...).
  std::vector<int64_t> ints(size_t k) const;
  std::vector<double> floats(size_t k) const;

  bool has_attr(std::string_view n) const { return node_.attr(n) != nullptr; }
  int64_t attr_i(std::string_view n, int64_t def) const;
  double attr_f(std::string_view n, double def) const;
  std::string attr_s(std::string_view n, std::string def = "") const;
  std::vector<int64_t> attr_ints(std::string_view n, std::vector<int64_t> def = {}) const;
  std::vector<double> attr_floats(std::string_view n) const;
  const TensorData* attr_tensor(std::string_view n) const;
  /// An attribute holding an ONNX DataType number, as ember's dtype (`def` when absent);
  /// fails for a type ember has no dtype for.
  DType attr_dtype(std::string_view n, DType def) const;
  const Graph& attr_graph(std::string_view n) const;

  std::vector<Val> run_subgraph(const Graph& g, const std::vector<Val>& in) const {
    if (!sub_) fail("subgraphs cannot run here");
    return sub_(g, in);
  }

  /// "[onnx] Conv "conv1": msg" as ValueError.
  [[noreturn]] void fail(const std::string& msg) const;
  std::string label() const { return node_.label(index_); }

 private:
  const Node& node_;
  size_t index_;
  int64_t opset_;
  Device dev_;
  std::vector<Val> in_;
  SubgraphRunner<B> sub_;
};

template <Backend B>
using OpFn = std::vector<RValue<B>> (*)(Ctx<B>&);
template <Backend B>
using OpRegistry = std::map<std::string, OpFn<B>, std::less<>>;
/// The registry of all operators (key: op_type, or "domain.op_type" outside ai.onnx),
/// for Dispatch and Autodiff<Dispatch>.
template <Backend B>
const OpRegistry<B>& registry();

template <Backend B>
void register_elementwise_ops(OpRegistry<B>& r);
template <Backend B>
void register_reduce_ops(OpRegistry<B>& r);
template <Backend B>
void register_shape_ops(OpRegistry<B>& r);
template <Backend B>
void register_nn_ops(OpRegistry<B>& r);
template <Backend B>
void register_index_ops(OpRegistry<B>& r);
template <Backend B>
void register_control_ops(OpRegistry<B>& r);
template <Backend B>
void register_resize_ops(OpRegistry<B>& r);
template <Backend B>
void register_rnn_ops(OpRegistry<B>& r);
template <Backend B>
void register_quant_ops(OpRegistry<B>& r);
template <Backend B>
void register_misc_ops(OpRegistry<B>& r);
template <Backend B>
void register_fused_ops(OpRegistry<B>& r);
/// The node's convolution window for input x and weight w (strides, dilations, group, pads or
/// auto_pad; nn.cpp): the padding in the window where it is the same at both ends and `pad` is
/// 0, otherwise x padded with `pad` and none in the window. Conv and the quantized convs (whose
/// input is padded with its zero point) share it.
template <Backend B>
std::pair<Dyn<B>, OpAttrs> conv_window(const Ctx<B>& c, Dyn<B> x, const Dyn<B>& w, double pad);

// ---- the session's tensor size limit (SessionOptions::max_tensor_bytes) -----------------
/// Sets the limit for the runs on this thread while it lives (Session::run holds one).
class TensorLimit {
 public:
  explicit TensorLimit(int64_t max_bytes);
  ~TensorLimit();
  TensorLimit(const TensorLimit&) = delete;
  TensorLimit& operator=(const TensorLimit&) = delete;

 private:
  int64_t previous_;
};
/// Throws ValueError unless a tensor of this shape and dtype fits the limit: called before an
/// output is allocated (op, full and expand below call it, and so do the operators that
/// allocate on the host from sizes they read).
void check_size(const Dims& shape, DType t);

// ---- rank-erased tensor helpers (helpers.cpp), templates over the backend -----------------
template <Backend B>
using Tn = Dyn<B>;
template <Backend B>
Dyn<B> op(OpCode c, OpAttrs a, const std::vector<Dyn<B>>& in);
template <Backend B>
Dyn<B> op(OpCode c, const std::vector<Dyn<B>>& in);
template <Backend B>
Dyn<B> constant(const TensorData& d, Device dev);
template <Backend B>
Dyn<B> full(const Dims& shape, double v, DType t, Device dev);
template <Backend B>
Dyn<B> int_tensor(const std::vector<int64_t>& v, Device dev);  // 1-d i64
template <Backend B>
TensorData host(const Dyn<B>& t);
template <Backend B>
std::vector<int64_t> host_ints(const Dyn<B>& t);
template <Backend B>
std::vector<double> host_floats(const Dyn<B>& t);
template <Backend B>
Dyn<B> cast(const Dyn<B>& t, DType to);
template <Backend B>
Dyn<B> reshape(const Dyn<B>& t, const Dims& shape);
template <Backend B>
Dyn<B> permute(const Dyn<B>& t, const Dims& order);
template <Backend B>
Dyn<B> expand(const Dyn<B>& t, const Dims& shape);
template <Backend B>
Dyn<B> unsqueeze(const Dyn<B>& t, int64_t axis);
/// numpy-style slice of one axis (any step but 0; ends clamped as Python does).
template <Backend B>
Dyn<B> slice_axis(const Dyn<B>& t, int64_t axis, int64_t start, int64_t end, int64_t step);
template <Backend B>
Dyn<B> cat(const std::vector<Dyn<B>>& parts, int64_t axis);
template <Backend B>
Dyn<B> reduce(OpCode c, const Dyn<B>& t, const Dims& axes, bool keep);
template <Backend B>
Dyn<B> where(const Dyn<B>& c, const Dyn<B>& a, const Dyn<B>& b);
/// A rank-0 tensor of t's dtype and device.
template <Backend B>
Dyn<B> scalar_of(const Dyn<B>& t, double v);
/// Broadcast shape of two shapes (numpy rules); throws ShapeError.
Dims broadcast_dims(const Dims& a, const Dims& b);
/// An axis in [-rank, rank) as [0, rank); fails through ctx otherwise.
template <Backend B>
int64_t norm_axis(const Ctx<B>& c, int64_t axis, int64_t rank);
template <Backend B>
Dims dims_of(const Dyn<B>& t);
/// An operator's one tensor output.
template <Backend B>
std::vector<RValue<B>> one(Dyn<B> t) {
  return {RValue<B>::of(std::move(t))};
}

}  // namespace ember::onnx::detail
