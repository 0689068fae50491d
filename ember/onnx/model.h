// ONNX models as ember's own graph IR: what the importer, the runtime and the code generator
// work on. Parsing checks everything a file claims before trusting it: a truncated,
// malformed or hostile model raises ValueError naming the file and the problem (never a
// crash, never an allocation larger than the file's own data).
//
//   auto model = ember::onnx::load_model("model.onnx");
//   for (const ember::onnx::Node& n : model.graph.nodes) std::cout << n.op_type << "\n";
//   int64_t v = model.opset("");   // the default domain's opset version
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "ember/core/export.h"
#include "ember/core/tensor_data.h"

namespace ember::onnx {

/// One dimension of a value's shape: a size, a symbol (a dynamic batch: "N"), or unknown.
struct Dim {
  std::optional<int64_t> size;
  std::string symbol;
  bool known() const { return size.has_value(); }
  friend bool operator==(const Dim&, const Dim&) = default;
};

/// An element type of ONNX's TensorProto.DataType that ember has no dtype for (uint16/32/64,
/// string, complex, float8) is kept by its ONNX number; `dtype` is empty then.
struct ElemType {
  int32_t onnx = 0;            // TensorProto.DataType
  std::optional<DType> dtype;  // ember's, when there is one
  friend bool operator==(const ElemType&, const ElemType&) = default;
};
/// ONNX's name of the element type ("FLOAT", "INT64", "STRING", ...).
EMBER_API std::string_view onnx_type_name(int32_t data_type);
/// ONNX's DataType number for an ember dtype.
EMBER_API int32_t onnx_type_of(DType t);
/// ember's dtype for ONNX's DataType number, if it has one.
EMBER_API std::optional<DType> dtype_of_onnx(int32_t data_type);

/// A graph input, output or intermediate: its name and what is known of its type.
struct ValueInfo {
  enum class Kind { Tensor, Sequence, Optional, Other };
  std::string name;
  Kind kind = Kind::Tensor;
  ElemType elem;                          // of the tensor (or of a sequence's / optional's tensors)
  std::optional<std::vector<Dim>> shape;  // absent: rank unknown
};

struct Graph;

/// A node attribute, by ONNX's AttributeProto type.
struct Attribute {
  enum class Type {
    Float,
    Int,
    String,
    Tensor,
    Graph,
    Floats,
    Ints,
    Strings,
    Tensors,
    Graphs,
    Other
  };
  std::string name;
  Type type = Type::Other;
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<TensorData> tensors;                   // Tensor: one
  std::vector<std::shared_ptr<const Graph>> graphs;  // Graph: one
  std::string ref_attr_name;  // inside functions: refers to the caller's attribute
};
EMBER_API std::string_view name(Attribute::Type t);

struct Node {
  std::string name;  // may be empty in files; diagnostics then use "#index op_type"
  std::string op_type;
  std::string domain;                // "" (= "ai.onnx") or e.g. "com.microsoft"
  std::vector<std::string> inputs;   // "" for an omitted optional input
  std::vector<std::string> outputs;  // "" for an omitted optional output
  std::vector<Attribute> attributes;

  const Attribute* attr(std::string_view n) const;
  /// A label for messages: `Conv "conv1"` or `Conv #3`.
  std::string label(size_t index) const;
};

/// An initializer or constant whose element type ember has no dtype for (kept so that
/// `info` and errors can name it).
struct UnsupportedTensor {
  std::string name;
  int32_t data_type = 0;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;  // initializers that are also inputs are listed here too
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;
  std::vector<std::pair<std::string, TensorData>> initializers;
  std::vector<UnsupportedTensor> unsupported_initializers;
};

/// A model-local function (ModelProto.functions, IR version 8): a node whose (domain,
/// op_type) matches is run as this body.
struct Function {
  std::string name, domain;
  std::vector<std::string> inputs, outputs, attributes;
  std::vector<Node> nodes;
};

struct Model {
  int64_t ir_version = 0;
  std::string producer_name, producer_version, doc;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  Graph graph;
  std::vector<Function> functions;
  std::filesystem::path path;  // the file read (empty: parsed from memory)

  /// The opset version imported for `domain` ("" and "ai.onnx" are the same); 0 if none.
  int64_t opset(std::string_view domain) const;
};

/// Options for parsing.
struct ParseOptions {
  /// Folder that external-data locations are relative to (the model's folder for
  /// load_model). Locations may not leave it.
  std::filesystem::path external_dir;
  /// Upper bound on the bytes of all tensors together, external data included.
  int64_t max_tensor_bytes = int64_t{16} << 30;
  /// Run ONNX's type and shape inference (the schema's rules, symbolic dims kept) after the
  /// model passed ember's checks, adding what it finds to Graph::value_info and to outputs
  /// without shapes. A node it cannot infer is left unknown; the model still loads.
  bool infer_shapes = false;
};

EMBER_API Model load_model(const std::filesystem::path& path, const ParseOptions& options = {});
/// Parses a serialized ModelProto; `what` names it in errors.
EMBER_API Model parse_model(std::span<const std::byte> bytes, const std::string& what,
                            const ParseOptions& options = {});
/// A serialized TensorProto (the backend tests' input_K.pb / output_K.pb) as TensorData.
EMBER_API TensorData load_tensor(const std::filesystem::path& path);
EMBER_API TensorData parse_tensor(std::span<const std::byte> bytes, const std::string& what);

}  // namespace ember::onnx
