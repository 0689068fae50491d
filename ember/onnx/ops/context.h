// Internal: what an ONNX operator's implementation sees (its node, inputs and attributes)
// and the rank-erased tensor helpers the implementations share. Each operator family's file
// registers its operators in one table (register_*_ops).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ember/ops/dyn.h"
#include "ember/onnx/model.h"
#include "ember/onnx/runtime.h"

namespace ember::onnx::detail {

using Tn = ember::detail::Dyn<Dispatch>;

/// A value inside the runtime (the public Value with the handles wrapped).
struct RValue {
  Value::Kind kind = Value::Kind::None;
  Tn t;
  std::vector<Tn> seq;
  static RValue of(Tn t) { return {Value::Kind::Tensor, std::move(t), {}}; }
  static RValue sequence(std::vector<Tn> s) { return {Value::Kind::Sequence, {}, std::move(s)}; }
};

class Ctx;
/// Runs a subgraph with these inputs, seeing the calling graph's values (If, Loop, Scan).
using SubgraphRunner =
    std::function<std::vector<RValue>(const Graph&, const std::vector<RValue>&)>;

class Ctx {
 public:
  Ctx(const Node& node, size_t index, int64_t opset, Device dev, std::vector<RValue> in,
      SubgraphRunner sub)
      : node_(node), index_(index), opset_(opset), dev_(dev), in_(std::move(in)),
        sub_(std::move(sub)) {}

  /// The same node with other inputs (an implementation that runs itself on converted ones).
  Ctx with_inputs(std::vector<RValue> in) const {
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
  const RValue& value(size_t k) const;
  std::optional<Tn> opt(size_t k) const {
    return has(k) ? std::optional<Tn>(in(k)) : std::nullopt;
  }
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
  const Graph& attr_graph(std::string_view n) const;

  std::vector<RValue> run_subgraph(const Graph& g, const std::vector<RValue>& in) const {
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
  std::vector<RValue> in_;
  SubgraphRunner sub_;
};

using OpFn = std::vector<RValue> (*)(Ctx&);
using OpRegistry = std::map<std::string, OpFn, std::less<>>;
/// The registry of all operators (key: op_type, or "domain.op_type" outside ai.onnx).
const OpRegistry& registry();

void register_elementwise_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_shape_ops(OpRegistry& r);
void register_nn_ops(OpRegistry& r);
void register_index_ops(OpRegistry& r);
void register_control_ops(OpRegistry& r);
void register_resize_ops(OpRegistry& r);
void register_rnn_ops(OpRegistry& r);
void register_quant_ops(OpRegistry& r);
void register_misc_ops(OpRegistry& r);
void register_fused_ops(OpRegistry& r);

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

// ---- rank-erased tensor helpers (helpers.cpp) --------------------------------------------
Tn op(OpCode c, OpAttrs a, const std::vector<Tn>& in);
Tn op(OpCode c, const std::vector<Tn>& in);
Tn constant(const TensorData& d, Device dev);
Tn full(const Dims& shape, double v, DType t, Device dev);
Tn int_tensor(const std::vector<int64_t>& v, Device dev);  // 1-d i64
TensorData host(const Tn& t);
std::vector<int64_t> host_ints(const Tn& t);
std::vector<double> host_floats(const Tn& t);
Tn cast(const Tn& t, DType to);
Tn reshape(const Tn& t, const Dims& shape);
Tn permute(const Tn& t, const Dims& order);
Tn expand(const Tn& t, const Dims& shape);
Tn unsqueeze(const Tn& t, int64_t axis);
/// numpy-style slice of one axis (any step but 0; ends clamped as Python does).
Tn slice_axis(const Tn& t, int64_t axis, int64_t start, int64_t end, int64_t step);
Tn cat(const std::vector<Tn>& parts, int64_t axis);
Tn reduce(OpCode c, const Tn& t, const Dims& axes, bool keep);
Tn where(const Tn& c, const Tn& a, const Tn& b);
/// A rank-0 tensor of t's dtype and device.
Tn scalar_of(const Tn& t, double v);
/// Broadcast shape of two shapes (numpy rules); throws ShapeError.
Dims broadcast_dims(const Dims& a, const Dims& b);
/// An axis in [-rank, rank) as [0, rank); fails through ctx otherwise.
int64_t norm_axis(const Ctx& c, int64_t axis, int64_t rank);
Dims dims_of(const Tn& t);

}  // namespace ember::onnx::detail
