// Code generation (codegen.h): the model's graph as the source of an ember module.
#include "ember/onnx/codegen.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "ember/onnx/passes.h"
#include "ember/onnx/runtime.h"
#include "ember/record/safetensors.h"

namespace ember::onnx {

namespace {

bool has_subgraph(const Node& n) {
  for (const Attribute& a : n.attributes)
    if (!a.graphs.empty()) return true;
  return false;
}

const char* kind_of(DType t) {
  if (is_float(t)) return "ember::Float";
  if (t == DType::Bool) return "ember::Bool";
  return "ember::Int";
}

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o + "\"";
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  if (s == "inf") return "std::numeric_limits<double>::infinity()";
  if (s == "-inf") return "-std::numeric_limits<double>::infinity()";
  if (s == "nan" || s == "-nan") return "std::numeric_limits<double>::quiet_NaN()";
  return s;
}

std::string dtype_expr(DType t) {
  static const std::map<DType, std::string> m = {
      {DType::F64, "F64"}, {DType::F32, "F32"},  {DType::F16, "F16"}, {DType::BF16, "BF16"},
      {DType::I64, "I64"}, {DType::I32, "I32"},  {DType::I16, "I16"}, {DType::I8, "I8"},
      {DType::U8, "U8"},   {DType::Bool, "Bool"}};
  return "ember::DType::" + m.at(t);
}

void bytes_list(std::ostream& o, std::span<const std::byte> b, const std::string& indent) {
  for (size_t i = 0; i < b.size(); ++i) {
    if (i % 24 == 0) o << "\n" << indent;
    o << static_cast<int>(b[i]) << (i + 1 < b.size() ? "," : "");
  }
}

std::string tensor_expr(const TensorData& d, const std::string& indent) {
  std::ostringstream o;
  o << "ember::onnx::gen::tensor(" << dtype_expr(d.dtype()) << ", {";
  for (size_t i = 0; i < d.shape().rank(); ++i) o << (i ? ", " : "") << d.shape()[i];
  o << "}, {";
  bytes_list(o, d.bytes(), indent + "    ");
  o << "})";
  return o.str();
}

std::string attr_expr(const Attribute& a, const std::string& indent) {
  const std::string n = quote(a.name);
  std::ostringstream o;
  o << "ember::onnx::gen::attr(" << n << ", ";
  switch (a.type) {
    case Attribute::Type::Int:
      o << "int64_t{" << a.i << "}";
      break;
    case Attribute::Type::Float:
      o << number(a.f);
      break;
    case Attribute::Type::String:
      o << "std::string(" << quote(a.s) << ")";
      break;
    case Attribute::Type::Ints:
      o << "std::vector<int64_t>{";
      for (size_t i = 0; i < a.ints.size(); ++i) o << (i ? ", " : "") << a.ints[i];
      o << "}";
      break;
    case Attribute::Type::Floats:
      o << "std::vector<double>{";
      for (size_t i = 0; i < a.floats.size(); ++i) o << (i ? ", " : "") << number(a.floats[i]);
      o << "}";
      break;
    case Attribute::Type::Strings:
      o << "std::vector<std::string>{";
      for (size_t i = 0; i < a.strings.size(); ++i) o << (i ? ", " : "") << quote(a.strings[i]);
      o << "}";
      break;
    case Attribute::Type::Tensor:
      o << tensor_expr(a.tensors.at(0), indent);
      break;
    default:
      throw ValueError("[onnx] codegen: attribute " + a.name + " of an unsupported type");
  }
  o << ")";
  return o.str();
}

/// C++ identifiers for ONNX names: letters, digits and '_', unique, never a keyword.
class Names {
 public:
  std::string make(const std::string& raw, const std::string& prefix) {
    std::string s;
    for (char c : raw) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    while (!s.empty() && s[0] == '_') s.erase(0, 1);
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = prefix + s;
    if (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '_') s = prefix + s;
    std::string out = s;
    for (int k = 2; used_.contains(out) || keyword(out); ++k) out = s + "_" + std::to_string(k);
    used_.insert(out);
    return out;
  }

 private:
  static bool keyword(const std::string& s) {
    static const std::set<std::string> k = {
        "int",      "float",    "double", "char",          "bool",    "auto",     "class",
        "struct",   "new",      "delete", "return",        "if",      "else",     "for",
        "while",    "do",       "switch", "case",          "default", "const",    "static",
        "template", "typename", "this",   "namespace",     "using",   "operator", "union",
        "enum",     "void",     "long",   "short",         "signed",  "unsigned", "register",
        "and",      "or",       "not",    "xor",           "in",      "out",      "forward",
        "init",     "load",     "B",      "std",           "ember",   "V",        "dev",
        "inputs",   "Model",    "m",      "forward_values"};
    // r<N> and node<N> name each node's results and description in generated code
    auto numbered = [&](const char* p) {
      const size_t n = std::strlen(p);
      return s.size() > n && s.compare(0, n, p) == 0 &&
             s.find_first_not_of("0123456789", n) == std::string::npos;
    };
    return k.contains(s) || numbered("r") || numbered("node");
  }
  std::set<std::string> used_;
};

struct Io {
  std::string name, ident;
  int rank = 0;
  DType dtype = DType::F32;
};

}  // namespace

std::vector<std::string> codegen_problems(const Model& model) {
  std::vector<std::string> out = unsupported(model);
  const Graph& g = model.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (has_subgraph(g.nodes[i]))
      out.push_back(g.nodes[i].label(i) + ": subgraph operators run on the runtime path only");
  std::set<std::string> init;
  for (const auto& [n, d] : g.initializers) init.insert(n);
  auto io = [&](const ValueInfo& v, const char* what) {
    if (v.kind != ValueInfo::Kind::Tensor)
      out.push_back(std::string(what) + " \"" + v.name + "\" is not a tensor");
    else if (!v.shape)
      out.push_back(std::string(what) + " \"" + v.name + "\" has no known rank");
    else if (!v.elem.dtype)
      out.push_back(std::string(what) + " \"" + v.name + "\" has no ember dtype");
  };
  for (const auto& v : g.inputs)
    if (!init.contains(v.name)) io(v, "input");
  for (const auto& v : g.outputs) io(v, "output");
  if (!model.functions.empty()) out.push_back("model-local functions run on the runtime path only");
  return out;
}

GeneratedFiles write_module(Model model, const std::filesystem::path& dir,
                            const CodegenOptions& o) {
  if (o.optimize) optimize(model);
  auto problems = codegen_problems(model);
  if (!problems.empty()) throw UnsupportedError("codegen of " + o.name, std::move(problems));
  const Graph& g = model.graph;
  Names names;
  const std::string ns = names.make(o.name, "m_");

  // Parameters: float initializers of rank >= 1; the rest are constants in the source.
  std::set<std::string> graph_inputs;
  for (const auto& v : g.inputs) graph_inputs.insert(v.name);
  struct ParamInfo {
    std::string onnx, field;
    const TensorData* data;
  };
  std::vector<ParamInfo> params;
  std::vector<std::pair<std::string, const TensorData*>> consts;
  for (const auto& [n, d] : g.initializers) {
    if (graph_inputs.contains(n)) continue;  // an overridable input: passed in
    if (is_float(d.dtype()) && d.shape().rank() >= 1)
      params.push_back({n, names.make(n, "p_"), &d});
    else
      consts.emplace_back(n, &d);
  }
  if (params.size() > 250)
    throw ValueError("[onnx] codegen: " + std::to_string(params.size()) +
                     " parameters, more than the 250 one module declares");
  std::vector<Io> inputs, outputs;
  std::set<std::string> init;
  for (const auto& [n, d] : g.initializers) init.insert(n);
  for (const auto& v : g.inputs)
    if (!init.contains(v.name))
      inputs.push_back(
          {v.name, names.make(v.name, "x_"), static_cast<int>(v.shape->size()), *v.elem.dtype});
  for (const auto& v : g.outputs)
    outputs.push_back({v.name, "", static_cast<int>(v.shape->size()), *v.elem.dtype});

  std::filesystem::create_directories(dir);
  GeneratedFiles files;
  files.header = dir / (o.name + ".h");
  files.source = dir / (o.name + ".cpp");

  // The weights as a safetensors image (a file, or bytes in the source).
  record::NamedTensors weights;
  for (const auto& p : params) {
    weights.emplace_back(p.field, *p.data);
    files.params.push_back(p.field);
  }
  if (!o.embed_weights) {
    files.weights = dir / (o.name + ".safetensors");
    record::save_safetensors(files.weights, weights, {{"source", model.path.filename().string()}});
  }

  auto tensor_type = [](int rank, DType t) {
    return "ember::Tensor<B, " + std::to_string(rank) + ", " + kind_of(t) + ">";
  };
  std::ostringstream h;
  h << "// Generated by ember-onnx import from "
    << (model.path.empty() ? std::string("a model") : model.path.filename().string()) << " (opset "
    << model.opset("") << ", " << g.nodes.size() << " nodes).\n"
    << "// Regenerate rather than edit. Each node of the graph is one call of the operator that\n"
    << "// ember's ONNX runtime runs for it.\n"
    << "#pragma once\n#include <filesystem>\n#include <limits>\n#include <tuple>\n\n"
    << "#include \"ember/onnx/generated.h\"\n\nnamespace " << ns << " {\n\n"
    << "template <ember::Backend B>\nstruct Model {\n";
  for (const auto& p : params)
    h << "  ember::nn::Param<ember::Tensor<B, " << p.data->shape().rank() << ">> " << p.field
      << ";  // " << quote(p.onnx) << " " << p.data->shape().to_string() << "\n";
  h << "  EMBER_MODULE(Model";
  for (const auto& p : params) h << ", " << p.field;
  h << ")\n\n";
  // init: lazily zero parameters of the file's shapes, on `dev`.
  h << "  /// Parameters shaped as in the ONNX file (zeros until loaded: see load).\n"
    << "  static Model init(ember::Device dev = B::default_device()) {\n    Model m;\n";
  for (const auto& p : params) {
    h << "    m." << p.field << " = decltype(m." << p.field << ")::lazy(ember::Shape{";
    for (size_t i = 0; i < p.data->shape().rank(); ++i) h << (i ? ", " : "") << p.data->shape()[i];
    h << "}, dev, [](const ember::Shape& s, ember::Device d) { return ember::Tensor<B, "
      << p.data->shape().rank() << ">::zeros(s, d, " << dtype_expr(p.data->dtype()) << "); });\n";
  }
  h << "    return m;\n  }\n";
  if (!o.embed_weights) {
    h << "  /// The model with the weights ember-onnx wrote beside this header.\n"
      << "  static Model load(const std::filesystem::path& weights, ember::Device dev = "
         "B::default_device()) {\n"
      << "    Model m = init(dev);\n    ember::nn::load_module(m, weights);\n    return m;\n  }\n";
  } else {
    h << "  /// The model with the weights compiled into the program.\n"
      << "  static Model load(ember::Device dev = B::default_device());\n";
  }
  // forward: typed.
  h << "\n  /// The graph: inputs and outputs in graph order.\n  ";
  if (outputs.size() == 1) {
    h << tensor_type(outputs[0].rank, outputs[0].dtype);
  } else {
    h << "std::tuple<";
    for (size_t i = 0; i < outputs.size(); ++i)
      h << (i ? ", " : "") << tensor_type(outputs[i].rank, outputs[i].dtype);
    h << ">";
  }
  h << " forward(";
  for (size_t i = 0; i < inputs.size(); ++i)
    h << (i ? ", " : "") << "const " << tensor_type(inputs[i].rank, inputs[i].dtype) << "& "
      << inputs[i].ident;
  h << ") const {\n    auto results = forward_values({";
  for (size_t i = 0; i < inputs.size(); ++i)
    h << (i ? ", " : "") << "ember::onnx::gen::in(" << inputs[i].ident << ")";
  h << "});\n    return {";
  for (size_t i = 0; i < outputs.size(); ++i)
    h << (i ? ", " : "") << "ember::onnx::gen::out<" << outputs[i].rank << ", "
      << kind_of(outputs[i].dtype) << ">(results[" << i << "], " << quote(outputs[i].name) << ")";
  h << "};\n  }\n\n";
  // forward_values: the body.
  h << "  /// The same on rank-erased values (what tests and generic callers use).\n"
    << "  std::vector<ember::onnx::gen::Val<B>> forward_values(\n"
    << "      const std::vector<ember::onnx::gen::Val<B>>& inputs) const {\n"
    << "    using V = ember::onnx::gen::Val<B>;\n"
    << "    static_assert(sizeof(V) > 0);  // V is used by most models, not all\n";
  std::map<std::string, std::string> var;  // ONNX name -> C++ expression
  for (size_t i = 0; i < inputs.size(); ++i) {
    h << "    const V& " << inputs[i].ident << " = inputs.at(" << i << ");  // "
      << quote(inputs[i].name) << "\n";
    var[inputs[i].name] = inputs[i].ident;
  }
  h << "    const ember::Device dev = inputs.empty() ? B::default_device() : "
       "B::device(inputs[0].t.handle());\n";
  for (const auto& p : params) {
    const std::string v = names.make(p.field, "w_");
    h << "    const V " << v << " = ember::onnx::gen::in(" << p.field << ".val());\n";
    var[p.onnx] = v;
  }
  for (const auto& [n, d] : consts) {
    const std::string v = names.make(n, "c_");
    h << "    static const ember::TensorData " << v << "_data = " << tensor_expr(*d, "      ")
      << ";\n"
      << "    const V " << v << " = ember::onnx::gen::constant<B>(" << v << "_data, dev);\n";
    var[n] = v;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::string nv = "node";
    nv += std::to_string(i);
    h << "\n    // " << n.label(i) << "\n    static const ember::onnx::Node " << nv
      << " = ember::onnx::gen::node(" << quote(n.op_type) << ", " << quote(n.domain) << ", {";
    for (size_t k = 0; k < n.attributes.size(); ++k)
      h << (k ? ",\n        " : "\n        ") << attr_expr(n.attributes[k], "        ");
    h << "}, " << quote(n.name) << ", {";
    for (size_t k = 0; k < n.outputs.size(); ++k) h << (k ? ", " : "") << quote(n.outputs[k]);
    h << "});\n";
    std::string rv = "r";  // (two steps: GCC 12 warns falsely on "r" + to_string)
    rv += std::to_string(i);
    h << "    const auto " << rv << " = ember::onnx::gen::run<B>(" << nv << ", "
      << model.opset(n.domain) << ", dev, {";
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& in = n.inputs[k];
      std::string e = "V{}";
      if (!in.empty()) {
        auto it = var.find(in);
        if (it == var.end())
          throw ValueError("[onnx] codegen: " + n.label(i) + ": input \"" + in +
                           "\" is not produced before it");
        e = it->second;
      }
      h << (k ? ", " : "") << e;
    }
    h << "});\n";
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) var[n.outputs[k]] = rv + "[" + std::to_string(k) + "]";
  }
  h << "    return {";
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto it = var.find(outputs[i].name);
    if (it == var.end())
      throw ValueError("[onnx] codegen: output \"" + outputs[i].name + "\" is never produced");
    h << (i ? ", " : "") << it->second;
  }
  h << "};\n  }\n};\n\n"
    << "extern template struct Model<ember::Dispatch>;\n"
    << "extern template struct Model<ember::Autodiff<ember::Dispatch>>;\n\n}  // namespace " << ns
    << "\n";

  std::ostringstream s;
  s << "// Generated by ember-onnx import: the instantiations of " << ns << "::Model";
  if (o.embed_weights) s << " and its weights";
  s << ".\n#include \"" << o.name << ".h\"\n\nnamespace " << ns << " {\n\n";
  if (o.embed_weights) {
    record::NamedTensors w = weights;
    const auto tmp = dir / (o.name + ".weights.tmp");
    record::save_safetensors(tmp, w);
    std::ifstream in(tmp, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    std::filesystem::remove(tmp);
    s << "namespace {\nalignas(8) const unsigned char kWeights[] = {";
    bytes_list(s, std::as_bytes(std::span(bytes.data(), bytes.size())), "    ");
    s << "};\n}  // namespace\n\ntemplate <ember::Backend B>\nModel<B> "
         "Model<B>::load(ember::Device dev) {\n"
      << "  Model m = init(dev);\n"
      << "  auto file = ember::record::parse_safetensors(\n"
      << "      std::as_bytes(std::span(kWeights, sizeof kWeights)), \"" << o.name
      << " (embedded)\");\n"
      << "  ember::nn::apply_record(m, file.tensors);\n  return m;\n}\n\n";
  }
  s << "template struct Model<ember::Dispatch>;\ntemplate struct "
       "Model<ember::Autodiff<ember::Dispatch>>;\n\n}  // namespace "
    << ns << "\n";

  auto write = [](const std::filesystem::path& p, const std::string& text) {
    std::ofstream f(p);
    f << text;
    if (!f) throw ValueError("[onnx] codegen: cannot write " + p.string());
  };
  write(files.header, h.str());
  write(files.source, s.str());
  return files;
}

std::vector<std::string> write_suite(const std::vector<std::filesystem::path>& tests,
                                     const std::filesystem::path& dir, size_t per_file) {
  std::vector<std::string> skipped, done;
  for (const auto& t : tests) {
    const std::string name = t.filename().string();
    try {
      CodegenOptions o;
      o.name = name;
      ParseOptions po;
      po.infer_shapes = true;
      write_module(load_model(t / "model.onnx", po), dir, o);
      done.push_back(name);
    } catch (const std::exception& e) {
      skipped.push_back(name + ": " + e.what());
    }
  }
  std::filesystem::create_directories(dir);
  for (size_t f = 0; f * per_file < done.size() || f == 0; ++f) {
    std::ostringstream s;
    s << "// Generated by ember-onnx import-suite: models " << f * per_file << " to "
      << std::min(done.size(), (f + 1) * per_file) << ".\n";
    const size_t end = std::min(done.size(), (f + 1) * per_file);
    for (size_t i = f * per_file; i < end; ++i) s << "#include \"" << done[i] << ".h\"\n";
    s << "\n";
    for (size_t i = f * per_file; i < end; ++i) {
      Names n;  // the same identifier write_module made for the namespace
      const std::string ns = n.make(done[i], "m_");
      s << "template struct " << ns << "::Model<ember::Dispatch>;\n"
        << "static const bool registered_" << i << " = ember::onnx::gen::register_model(\n    "
        << quote(done[i]) << ", [](const std::filesystem::path& w, "
        << "const std::vector<ember::onnx::gen::Val<ember::Dispatch>>& in) {\n"
        << "      return " << ns
        << "::Model<ember::Dispatch>::load(w).forward_values(in);\n    });\n";
    }
    std::ofstream out(dir / ("suite_" + std::to_string(f) + ".cpp"));
    out << s.str();
    if (done.empty()) break;
  }
  return skipped;
}

}  // namespace ember::onnx
