// ONNX protobuf messages -> ember's graph IR (model.h). Protobuf does the wire format; every
// count, size and reference it hands over is checked here before data is copied.
#include "ember/onnx/model.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#include "ember/core/error.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

namespace ember::onnx {

namespace pb = ::onnx;

std::string_view onnx_type_name(int32_t t) {
  static constexpr std::string_view names[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
      "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4"};
  if (t < 0 || t >= static_cast<int32_t>(std::size(names))) return "UNKNOWN";
  return names[t];
}

std::optional<DType> dtype_of_onnx(int32_t t) {
  switch (t) {
    case pb::TensorProto::FLOAT:
      return DType::F32;
    case pb::TensorProto::UINT8:
      return DType::U8;
    case pb::TensorProto::INT8:
      return DType::I8;
    case pb::TensorProto::INT16:
      return DType::I16;
    case pb::TensorProto::INT32:
      return DType::I32;
    case pb::TensorProto::INT64:
      return DType::I64;
    case pb::TensorProto::BOOL:
      return DType::Bool;
    case pb::TensorProto::FLOAT16:
      return DType::F16;
    case pb::TensorProto::DOUBLE:
      return DType::F64;
    case pb::TensorProto::BFLOAT16:
      return DType::BF16;
    default:
      return std::nullopt;
  }
}

int32_t onnx_type_of(DType t) {
  switch (t) {
    case DType::F32:
      return pb::TensorProto::FLOAT;
    case DType::U8:
      return pb::TensorProto::UINT8;
    case DType::I8:
      return pb::TensorProto::INT8;
    case DType::I16:
      return pb::TensorProto::INT16;
    case DType::I32:
      return pb::TensorProto::INT32;
    case DType::I64:
      return pb::TensorProto::INT64;
    case DType::Bool:
      return pb::TensorProto::BOOL;
    case DType::F16:
      return pb::TensorProto::FLOAT16;
    case DType::F64:
      return pb::TensorProto::DOUBLE;
    case DType::BF16:
      return pb::TensorProto::BFLOAT16;
  }
  return 0;
}

std::string_view name(Attribute::Type t) {
  switch (t) {
    case Attribute::Type::Float:
      return "float";
    case Attribute::Type::Int:
      return "int";
    case Attribute::Type::String:
      return "string";
    case Attribute::Type::Tensor:
      return "tensor";
    case Attribute::Type::Graph:
      return "graph";
    case Attribute::Type::Floats:
      return "floats";
    case Attribute::Type::Ints:
      return "ints";
    case Attribute::Type::Strings:
      return "strings";
    case Attribute::Type::Tensors:
      return "tensors";
    case Attribute::Type::Graphs:
      return "graphs";
    case Attribute::Type::Other:
      return "other";
  }
  return "other";
}

const Attribute* Node::attr(std::string_view n) const {
  for (const Attribute& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

std::string Node::label(size_t index) const {
  if (!name.empty()) return op_type + " \"" + name + "\"";
  return op_type + " #" + std::to_string(index);
}

int64_t Model::opset(std::string_view domain) const {
  std::string d(domain == "ai.onnx" ? "" : domain);
  auto it = opsets.find(d);
  return it == opsets.end() ? 0 : it->second;
}

namespace {

struct Parser {
  std::string what;
  ParseOptions opt;
  int64_t tensor_bytes = 0;

  [[noreturn]] void fail(const std::string& msg) const {
    throw ValueError("[onnx] " + what + ": " + msg);
  }

  void count_bytes(int64_t n, const std::string& tensor) {
    // Compared before adding: the sum may not fit int64 (a ValueError, not an overflow).
    if (n > opt.max_tensor_bytes - tensor_bytes)
      fail("tensor \"" + tensor + "\" takes the model's tensors past the limit of " +
           std::to_string(opt.max_tensor_bytes) + " bytes");
    tensor_bytes += n;
  }

  std::vector<std::byte> read_external(const pb::TensorProto& t, int64_t expect) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      auto num = [&](const std::string& s) {
        int64_t v = 0;
        if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
          fail("tensor \"" + t.name() + "\": external data " + kv.key() + " \"" + s +
               "\" is not a byte count");
        v = std::stoll(s);
        return v;
      };
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = num(kv.value());
      else if (kv.key() == "length")
        length = num(kv.value());
    }
    if (location.empty()) fail("tensor \"" + t.name() + "\": external data without a location");
    std::filesystem::path rel(location);
    if (rel.is_absolute() || rel.lexically_normal().string().starts_with(".."))
      fail("tensor \"" + t.name() + "\": external data location \"" + location +
           "\" leaves the model's folder");
    if (opt.external_dir.empty())
      fail("tensor \"" + t.name() + "\": external data \"" + location +
           "\" but the model was parsed from memory (no folder to read it from)");
    std::filesystem::path file = opt.external_dir / rel;
    std::error_code ec;
    auto size = static_cast<int64_t>(std::filesystem::file_size(file, ec));
    if (ec) fail("tensor \"" + t.name() + "\": cannot read external data " + file.string());
    if (offset > size)
      fail("tensor \"" + t.name() + "\": external data offset " + std::to_string(offset) +
           " lies past the end of " + file.filename().string() + " (" + std::to_string(size) +
           " bytes)");
    if (length < 0) length = size - offset;
    if (length > size - offset)
      fail("tensor \"" + t.name() + "\": external data range [" + std::to_string(offset) + ", +" +
           std::to_string(length) + ") lies outside " + file.filename().string() + " (" +
           std::to_string(size) + " bytes)");
    if (length != expect)
      fail("tensor \"" + t.name() + "\": external data holds " + std::to_string(length) +
           " bytes, its shape and type need " + std::to_string(expect));
    std::vector<std::byte> out(static_cast<size_t>(length));
    std::ifstream in(file, std::ios::binary);
    in.seekg(offset);
    in.read(reinterpret_cast<char*>(out.data()), length);
    if (!in)
      fail("tensor \"" + t.name() + "\": reading external data " + file.string() + " failed");
    return out;
  }

  /// A TensorProto as TensorData; nullopt for an element type ember has no dtype for.
  std::optional<TensorData> tensor(const pb::TensorProto& t) {
    const std::string nm = t.name().empty() ? std::string("(unnamed)") : t.name();
    if (t.has_segment()) fail("tensor \"" + nm + "\" is segmented (not supported)");
    Dims dims;
    int64_t n = 1, nonzero = 1;  // the product of the dims other than 0 must fit int64 too
    for (int64_t d : t.dims()) {
      if (d < 0) fail("tensor \"" + nm + "\" has a negative dim " + std::to_string(d));
      if (__builtin_mul_overflow(nonzero, std::max<int64_t>(d, 1), &nonzero))
        fail("tensor \"" + nm + "\" has dims whose product overflows int64");
      n *= d;  // at most `nonzero`
      dims.push_back(d);
    }
    auto dt = dtype_of_onnx(t.data_type());
    if (!dt) return std::nullopt;
    const int64_t es = size_of(*dt);
    int64_t bytes = 0;
    // TensorData's rule: the bytes of the non-zero dims fit int64 too (an empty tensor's).
    if (size_fit(Shape(dims), static_cast<size_t>(es), &bytes) != SizeFit::Fits)
      fail("tensor \"" + nm + "\" " + Shape(dims).to_string() + " has more bytes than int64 holds");
    count_bytes(bytes, nm);
    std::vector<std::byte> data;
    auto typed = [&](auto field, auto conv) {
      if (static_cast<int64_t>(field.size()) != n)
        fail("tensor \"" + nm + "\" " + std::string(onnx_type_name(t.data_type())) + " " +
             Shape(dims).to_string() + " needs " + std::to_string(n) + " values, the file has " +
             std::to_string(field.size()));
      data.resize(static_cast<size_t>(bytes));
      for (int64_t i = 0; i < n; ++i) conv(field.Get(static_cast<int>(i)), data.data() + i * es);
    };
    auto store = [](auto v) {
      return [](auto x, std::byte* dst) {
        auto y = static_cast<decltype(v)>(x);
        std::memcpy(dst, &y, sizeof(y));
      };
    };
    if (t.data_location() == pb::TensorProto::EXTERNAL) {
      data = read_external(t, bytes);
    } else if (t.has_raw_data()) {
      if (static_cast<int64_t>(t.raw_data().size()) != bytes)
        fail("tensor \"" + nm + "\" " + std::string(onnx_type_name(t.data_type())) + " " +
             Shape(dims).to_string() + " needs " + std::to_string(bytes) +
             " bytes of raw data, the file has " + std::to_string(t.raw_data().size()));
      data.resize(static_cast<size_t>(bytes));
      if (bytes) std::memcpy(data.data(), t.raw_data().data(), static_cast<size_t>(bytes));
    } else {
      switch (*dt) {
        case DType::F32:
          typed(t.float_data(), store(float{}));
          break;
        case DType::F64:
          typed(t.double_data(), store(double{}));
          break;
        case DType::I64:
          typed(t.int64_data(), store(int64_t{}));
          break;
        case DType::I32:
          typed(t.int32_data(), store(int32_t{}));
          break;
        case DType::I16:
          typed(t.int32_data(), store(int16_t{}));
          break;
        case DType::I8:
          typed(t.int32_data(), store(int8_t{}));
          break;
        case DType::U8:
          typed(t.int32_data(), store(uint8_t{}));
          break;
        case DType::Bool:
          typed(t.int32_data(), [](int32_t x, std::byte* dst) { *dst = std::byte(x != 0); });
          break;
        case DType::F16:
        case DType::BF16:
          typed(t.int32_data(), store(uint16_t{}));
          break;  // the bit pattern
      }
    }
    return TensorData(std::move(data), Shape(dims), *dt);
  }

  ValueInfo value_info(const pb::ValueInfoProto& v) {
    ValueInfo out;
    out.name = v.name();
    const pb::TypeProto* tp = &v.type();
    auto tensor_type = [&](const pb::TypeProto_Tensor& tt) {
      out.elem = {tt.elem_type(), dtype_of_onnx(tt.elem_type())};
      if (tt.has_shape()) {
        std::vector<Dim> dims;
        for (const auto& d : tt.shape().dim()) {
          Dim x;
          // Some exporters write -1 for a dynamic dim: unknown, not a size.
          if (d.has_dim_value() && d.dim_value() >= 0)
            x.size = d.dim_value();
          else if (d.has_dim_param())
            x.symbol = d.dim_param();
          dims.push_back(std::move(x));
        }
        out.shape = std::move(dims);
      }
    };
    if (tp->has_tensor_type()) {
      tensor_type(tp->tensor_type());
    } else if (tp->has_sequence_type()) {
      out.kind = ValueInfo::Kind::Sequence;
      if (tp->sequence_type().elem_type().has_tensor_type())
        tensor_type(tp->sequence_type().elem_type().tensor_type());
    } else if (tp->has_optional_type()) {
      out.kind = ValueInfo::Kind::Optional;
      const auto& e = tp->optional_type().elem_type();
      if (e.has_tensor_type())
        tensor_type(e.tensor_type());
      else if (e.has_sequence_type() && e.sequence_type().elem_type().has_tensor_type())
        tensor_type(e.sequence_type().elem_type().tensor_type());
    } else {
      out.kind = ValueInfo::Kind::Other;
    }
    return out;
  }

  Attribute attribute(const pb::AttributeProto& a, int depth) {
    Attribute out;
    out.name = a.name();
    out.ref_attr_name = a.ref_attr_name();
    using T = pb::AttributeProto;
    auto one_tensor = [&](const pb::TensorProto& t) {
      auto d = tensor(t);
      if (!d)
        fail("attribute \"" + a.name() + "\" holds a " +
             std::string(onnx_type_name(t.data_type())) + " tensor (no ember dtype)");
      out.tensors.push_back(std::move(*d));
    };
    switch (a.type()) {
      case T::FLOAT:
        out.type = Attribute::Type::Float;
        out.f = a.f();
        break;
      case T::INT:
        out.type = Attribute::Type::Int;
        out.i = a.i();
        break;
      case T::STRING:
        out.type = Attribute::Type::String;
        out.s = a.s();
        break;
      case T::TENSOR:
        out.type = Attribute::Type::Tensor;
        one_tensor(a.t());
        break;
      case T::GRAPH:
        out.type = Attribute::Type::Graph;
        out.graphs.push_back(std::make_shared<Graph>(graph(a.g(), depth + 1)));
        break;
      case T::FLOATS:
        out.type = Attribute::Type::Floats;
        out.floats.assign(a.floats().begin(), a.floats().end());
        break;
      case T::INTS:
        out.type = Attribute::Type::Ints;
        out.ints.assign(a.ints().begin(), a.ints().end());
        break;
      case T::STRINGS:
        out.type = Attribute::Type::Strings;
        out.strings.assign(a.strings().begin(), a.strings().end());
        break;
      case T::TENSORS:
        out.type = Attribute::Type::Tensors;
        for (const auto& t : a.tensors()) one_tensor(t);
        break;
      case T::GRAPHS:
        out.type = Attribute::Type::Graphs;
        for (const auto& g : a.graphs())
          out.graphs.push_back(std::make_shared<Graph>(graph(g, depth + 1)));
        break;
      default:
        out.type = Attribute::Type::Other;
        break;
    }
    return out;
  }

  Node node(const pb::NodeProto& n, int depth) {
    Node out;
    out.name = n.name();
    out.op_type = n.op_type();
    out.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    out.inputs.assign(n.input().begin(), n.input().end());
    out.outputs.assign(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) out.attributes.push_back(attribute(a, depth));
    return out;
  }

  Graph graph(const pb::GraphProto& g, int depth) {
    if (depth > 32) fail("subgraphs nest deeper than 32 levels");
    Graph out;
    out.name = g.name();
    for (const auto& n : g.node()) out.nodes.push_back(node(n, depth));
    for (const auto& v : g.input()) out.inputs.push_back(value_info(v));
    for (const auto& v : g.output()) out.outputs.push_back(value_info(v));
    for (const auto& v : g.value_info()) out.value_info.push_back(value_info(v));
    for (const auto& t : g.initializer()) {
      if (t.name().empty()) fail("an initializer has no name");
      if (auto d = tensor(t))
        out.initializers.emplace_back(t.name(), std::move(*d));
      else
        out.unsupported_initializers.push_back({t.name(), t.data_type()});
    }
    if (g.sparse_initializer_size() > 0)
      fail("sparse initializers are not supported (" + std::to_string(g.sparse_initializer_size()) +
           " in graph \"" + g.name() + "\")");
    return out;
  }
};

template <class Msg>
void parse_message(Msg& msg, std::span<const std::byte> bytes, const std::string& what,
                   const char* kind) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw ValueError("[onnx] " + what + ": larger than 2 GiB (use external data for weights)");
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetRecursionLimit(200);
  if (!msg.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    throw ValueError("[onnx] " + what + ": not a valid " + kind +
                     " (malformed or truncated protobuf)");
}

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ValueError("[onnx] cannot open " + path.string());
  in.seekg(0, std::ios::end);
  const auto size = static_cast<int64_t>(in.tellg());
  if (size < 0) throw ValueError("[onnx] cannot read " + path.string());
  in.seekg(0);
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  if (!in) throw ValueError("[onnx] reading " + path.string() + " failed");
  return bytes;
}

}  // namespace

namespace {

/// ONNX's shape inference on the (already checked) proto; what it finds joins the IR.
void infer_shapes(pb::ModelProto& m, Model& out, Parser& p) {
  try {
    ::onnx::shape_inference::InferShapes(m);
  } catch (const std::exception&) {
    return;  // a model ONNX's rules reject still runs: its values stay as the file says
  }
  std::set<std::string> known;
  for (const auto& v : out.graph.value_info) known.insert(v.name);
  for (const auto& v : out.graph.inputs) known.insert(v.name);
  for (const auto& v : m.graph().value_info())
    if (!known.contains(v.name())) out.graph.value_info.push_back(p.value_info(v));
  for (int k = 0; k < m.graph().output_size() && k < static_cast<int>(out.graph.outputs.size());
       ++k) {
    ValueInfo& o = out.graph.outputs[static_cast<size_t>(k)];
    if (!o.shape || o.elem.onnx == 0) o = p.value_info(m.graph().output(k));
  }
}

}  // namespace

Model parse_model(std::span<const std::byte> bytes, const std::string& what,
                  const ParseOptions& options) {
  pb::ModelProto m;
  parse_message(m, bytes, what, "ONNX model");
  Parser p{what, options};
  Model out;
  out.ir_version = m.ir_version();
  out.producer_name = m.producer_name();
  out.producer_version = m.producer_version();
  out.doc = m.doc_string();
  for (const auto& o : m.opset_import()) {
    std::string d = o.domain() == "ai.onnx" ? "" : o.domain();
    out.opsets[d] = o.version();
  }
  if (out.opsets.empty()) {
    if (m.ir_version() >= 3) p.fail("the model imports no opset");
    out.opsets[""] = 1;
  }
  if (!m.has_graph()) p.fail("the model has no graph");
  out.graph = p.graph(m.graph(), 0);
  for (const auto& f : m.functions()) {
    Function fn;
    fn.name = f.name();
    fn.domain = f.domain();
    fn.inputs.assign(f.input().begin(), f.input().end());
    fn.outputs.assign(f.output().begin(), f.output().end());
    fn.attributes.assign(f.attribute().begin(), f.attribute().end());
    for (const auto& n : f.node()) fn.nodes.push_back(p.node(n, 1));
    out.functions.push_back(std::move(fn));
  }
  if (options.infer_shapes) infer_shapes(m, out, p);
  return out;
}

Model load_model(const std::filesystem::path& path, const ParseOptions& options) {
  auto bytes = read_file(path);
  ParseOptions o = options;
  if (o.external_dir.empty())
    o.external_dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  Model m = parse_model(bytes, path.string(), o);
  m.path = path;
  return m;
}

TensorData parse_tensor(std::span<const std::byte> bytes, const std::string& what) {
  pb::TensorProto t;
  parse_message(t, bytes, what, "ONNX tensor");
  Parser p{what, {}};
  auto d = p.tensor(t);
  if (!d)
    p.fail("a " + std::string(onnx_type_name(t.data_type())) + " tensor (no ember dtype for it)");
  return std::move(*d);
}

TensorData load_tensor(const std::filesystem::path& path) {
  return parse_tensor(read_file(path), path.string());
}

}  // namespace ember::onnx
