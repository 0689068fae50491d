// Running an ONNX model without generating code: each node becomes ops of ember's op table on
// the chosen device (any device Dispatch knows: "cpu", "cuda:0", ...).
//
//   auto model = ember::onnx::load_model("model.onnx");
//   ember::onnx::Session session(model, ember::Device::parse("cpu"));
//   auto x = ember::TensorData::from<float>(std::vector<float>(2 * 4, 1.0f), {2, 4});
//   auto outputs = session.run({ember::onnx::Value::tensor(x, session.device())});
//   ember::TensorData y = outputs[0].data();       // the graph's first output
//
// Before running anything the session checks the whole model (subgraphs included) and lists
// every operator, attribute and element type it cannot run, with node names, in one
// UnsupportedError.
#pragma once
#include <string>
#include <vector>

#include "ember/backend/dispatch.h"
#include "ember/core/error.h"
#include "ember/onnx/model.h"
#include "ember/onnx/passes.h"

namespace ember::onnx {

/// What a graph input or output holds at run time: a tensor, a sequence of tensors, or an
/// absent optional.
struct EMBER_API Value {
  enum class Kind { None, Tensor, Sequence };
  Kind kind = Kind::None;
  DispatchHandle handle;                 // Tensor
  std::vector<DispatchHandle> sequence;  // Sequence

  static Value tensor(const TensorData& d, Device dev);
  static Value tensor(DispatchHandle h);
  static Value sequence_of(const std::vector<TensorData>& items, Device dev);
  /// The tensor's values on the host; throws ValueError for a sequence or None.
  TensorData data() const;
  std::vector<TensorData> sequence_data() const;
};

/// A model ember cannot run, with every reason: `problems[i]` is "Node label: what".
class EMBER_API UnsupportedError : public ValueError {
 public:
  UnsupportedError(const std::string& what, std::vector<std::string> problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

/// Everything in the model the runtime cannot run (empty: all of it runs): unknown
/// operators or domains, element types without an ember dtype, unsupported attributes.
EMBER_API std::vector<std::string> unsupported(const Model& model);

/// Whether the runtime has an implementation of this operator (domain "" = ai.onnx).
EMBER_API bool is_supported_op(std::string_view domain, std::string_view op_type);
/// The operators the runtime implements, sorted ("Abs", "Add", ...; other domains prefixed,
/// "com.microsoft.Gelu").
EMBER_API std::vector<std::string> supported_ops();

/// Limits of a session.
struct SessionOptions {
  /// The largest tensor (in bytes) a node may create: an operator whose output size comes
  /// from values (ConstantOfShape, Range, Expand, Tile, Pad, Resize, OneHot, ...) fails with a
  /// ValueError naming the node before it allocates more, and so does any node whose output is
  /// larger. A small file cannot make the runtime ask for terabytes.
  int64_t max_tensor_bytes = int64_t{16} << 30;
  /// Run the graph passes (passes.h: constant folding, Conv+BatchNorm folding, fusions,
  /// dead-code elimination) on the model first.
  bool optimize = true;
  PassOptions passes = {};
};

class EMBER_API Session {
 public:
  /// Checks the model (throws UnsupportedError listing every problem) and uploads its
  /// initializers to `device`.
  explicit Session(Model model, Device device = Device::cpu(), SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  /// Runs the graph on its inputs in graph order (initializers that are also graph inputs
  /// may be left out at the end, keeping their stored values). Returns the graph's outputs.
  std::vector<Value> run(const std::vector<Value>& inputs);

  const Model& model() const;
  Device device() const;
  /// The graph inputs a caller gives (those without an initializer), in order.
  std::vector<const ValueInfo*> inputs() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::onnx
