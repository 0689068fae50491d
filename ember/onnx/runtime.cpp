// The ONNX runtime: runs a graph node by node through the operator registry, with scopes for
// subgraphs (If, Loop, Scan see their parents' values) and model-local functions inlined at
// run time.
#include "ember/onnx/runtime.h"

#include <map>
#include <set>
#include <unordered_map>

#include "ember/core/checked.h"
#include "ember/onnx/ops/context.h"
#include "ember/onnx/passes.h"

namespace ember::onnx {

using RValue = detail::RValue<Dispatch>;
using Tn = detail::Tn<Dispatch>;

Value Value::tensor(const TensorData& d, Device dev) { return tensor(Dispatch::from_data(d, dev)); }
Value Value::tensor(DispatchHandle h) {
  Value v;
  v.kind = Kind::Tensor;
  v.handle = std::move(h);
  return v;
}
Value Value::sequence_of(const std::vector<TensorData>& items, Device dev) {
  Value v;
  v.kind = Kind::Sequence;
  for (const TensorData& d : items) v.sequence.push_back(Dispatch::from_data(d, dev));
  return v;
}
TensorData Value::data() const {
  if (kind != Kind::Tensor) throw ValueError("[onnx] the value is not a tensor");
  return Dispatch::to_data(handle);
}
std::vector<TensorData> Value::sequence_data() const {
  if (kind != Kind::Sequence) throw ValueError("[onnx] the value is not a sequence");
  std::vector<TensorData> out;
  for (const auto& h : sequence) out.push_back(Dispatch::to_data(h));
  return out;
}

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}
}  // namespace

UnsupportedError::UnsupportedError(const std::string& what, std::vector<std::string> problems)
    : ValueError("[onnx] " + what + ": " + std::to_string(problems.size()) +
                 " thing(s) ember cannot run:" + join(problems)),
      problems_(std::move(problems)) {}

namespace detail {
template <Backend B>
const OpRegistry<B>& registry() {
  static const OpRegistry<B> r = [] {
    OpRegistry<B> m;
    register_elementwise_ops(m);
    register_reduce_ops(m);
    register_shape_ops(m);
    register_nn_ops(m);
    register_index_ops(m);
    register_control_ops(m);
    register_resize_ops(m);
    register_rnn_ops(m);
    register_quant_ops(m);
    register_misc_ops(m);
    register_fused_ops(m);
    return m;
  }();
  return r;
}
template const OpRegistry<Dispatch>& registry<Dispatch>();
template const OpRegistry<Autodiff<Dispatch>>& registry<Autodiff<Dispatch>>();
}  // namespace detail

namespace {

std::string op_key(std::string_view domain, std::string_view op_type) {
  if (domain.empty() || domain == "ai.onnx") return std::string(op_type);
  return std::string(domain) + "." + std::string(op_type);
}

const Function* find_function(const Model& m, const Node& n) {
  for (const Function& f : m.functions)
    if (f.name == n.op_type && f.domain == n.domain) return &f;
  return nullptr;
}

void check_graph(const Model& m, const Graph& g, std::vector<std::string>& out,
                 std::set<std::string>& seen_ops, std::map<const Function*, bool>& functions) {
  auto type_ok = [&](const ValueInfo& v, const std::string& where) {
    if ((v.kind == ValueInfo::Kind::Tensor || v.kind == ValueInfo::Kind::Sequence) &&
        v.elem.onnx != 0 && !v.elem.dtype)
      out.push_back(where + " \"" + v.name + "\": element type " +
                    std::string(onnx_type_name(v.elem.onnx)) + " has no ember dtype");
  };
  for (const auto& v : g.inputs) type_ok(v, "input");
  for (const auto& v : g.outputs) type_ok(v, "output");
  for (const auto& u : g.unsupported_initializers)
    out.push_back("initializer \"" + u.name + "\": element type " +
                  std::string(onnx_type_name(u.data_type)) + " has no ember dtype");
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const std::string key = op_key(n.domain, n.op_type);
    if (const Function* f = find_function(m, n)) {
      // Each body is checked once (false while it is being checked: a function that calls
      // itself, directly or not, would never finish).
      auto [it, first] = functions.emplace(f, false);
      if (first) {
        Graph body;
        body.nodes = f->nodes;
        check_graph(m, body, out, seen_ops, functions);
        functions[f] = true;
      } else if (!it->second) {
        out.push_back(n.label(i) + ": function " + op_key(f->domain, f->name) +
                      " calls itself (recursion is not supported)");
      }
    } else if (!detail::registry<Dispatch>().contains(key)) {
      out.push_back(n.label(i) + ": operator " + key + " is not supported");
    }
    for (const Attribute& a : n.attributes)
      for (const auto& sub : a.graphs) check_graph(m, *sub, out, seen_ops, functions);
  }
}

struct Scope {
  std::unordered_map<std::string, RValue> values;
  const Scope* parent = nullptr;
  const RValue* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->values.find(name);
      if (it != s->values.end()) return &it->second;
    }
    return nullptr;
  }
};

RValue wrap(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Tensor:
      return RValue::of(Tn(v.handle));
    case Value::Kind::Sequence: {
      std::vector<Tn> s;
      for (const auto& h : v.sequence) s.emplace_back(h);
      return RValue::sequence(std::move(s));
    }
    case Value::Kind::None:
      break;
  }
  return {};
}

Value unwrap(const RValue& v) {
  Value out;
  out.kind = v.kind;
  if (v.kind == Value::Kind::Tensor) out.handle = v.t.handle();
  for (const Tn& t : v.seq) out.sequence.push_back(t.handle());
  return out;
}

}  // namespace

std::vector<std::string> unsupported(const Model& model) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& [domain, version] : model.opsets) {
    (void)version;
    if (!domain.empty() && domain != "ai.onnx" && domain != "ai.onnx.ml" &&
        domain != "ai.onnx.preview.training" && domain != "com.microsoft") {
      bool used_by_function = false;
      for (const Function& f : model.functions) used_by_function |= f.domain == domain;
      if (!used_by_function) continue;  // imported but only for functions: fine
    }
  }
  std::map<const Function*, bool> functions;
  check_graph(model, model.graph, out, seen, functions);
  return out;
}

bool is_supported_op(std::string_view domain, std::string_view op_type) {
  return detail::registry<Dispatch>().contains(op_key(domain, op_type));
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& [k, fn] : detail::registry<Dispatch>()) out.push_back(k);
  return out;
}

struct Session::Impl {
  Model model;
  Device device;
  SessionOptions options;
  std::unordered_map<const Graph*, std::vector<std::pair<std::string, RValue>>> constants;

  const std::vector<std::pair<std::string, RValue>>& initializers(const Graph& g) {
    auto it = constants.find(&g);
    if (it != constants.end()) return it->second;
    std::vector<std::pair<std::string, RValue>> v;
    for (const auto& [name, data] : g.initializers)
      v.emplace_back(name, RValue::of(detail::constant<Dispatch>(data, device)));
    return constants.emplace(&g, std::move(v)).first->second;
  }

  std::vector<RValue> run_nodes(const std::vector<Node>& nodes, Scope& scope,
                                const std::map<std::string, Attribute>* fn_attrs) {
    for (size_t i = 0; i < nodes.size(); ++i) run_node(nodes[i], i, scope, fn_attrs);
    return {};
  }

  void run_node(const Node& n, size_t index, Scope& scope,
                const std::map<std::string, Attribute>* fn_attrs) {
    std::vector<RValue> in;
    for (const std::string& name : n.inputs) {
      if (name.empty()) {
        in.emplace_back();
        continue;
      }
      const RValue* v = scope.find(name);
      if (!v)
        throw ValueError("[onnx] " + n.label(index) + ": input \"" + name +
                         "\" is not produced by any earlier node, input or initializer");
      in.push_back(*v);
    }
    // Attributes referring to a calling function's attributes are resolved first.
    const Node* node = &n;
    Node resolved;
    if (fn_attrs) {
      bool refs = false;
      for (const Attribute& a : n.attributes) refs |= !a.ref_attr_name.empty();
      if (refs) {
        resolved = n;
        resolved.attributes.clear();
        for (const Attribute& a : n.attributes) {
          if (a.ref_attr_name.empty()) {
            resolved.attributes.push_back(a);
          } else if (auto it = fn_attrs->find(a.ref_attr_name); it != fn_attrs->end()) {
            Attribute b = it->second;
            b.name = a.name;
            resolved.attributes.push_back(std::move(b));
          }
        }
        node = &resolved;
      }
    }
    std::vector<RValue> out;
    if (const Function* f = find_function(model, *node)) {
      out = run_function(*f, *node, in, scope);
    } else {
      auto it = detail::registry<Dispatch>().find(op_key(node->domain, node->op_type));
      if (it == detail::registry<Dispatch>().end())
        throw ValueError("[onnx] " + node->label(index) + ": operator " + node->op_type +
                         " is not supported");
      const Scope* here = &scope;
      detail::SubgraphRunner<Dispatch> sub = [this, here](const Graph& g,
                                                          const std::vector<RValue>& args) {
        return run_graph(g, args, here);
      };
      detail::Ctx<Dispatch> ctx(*node, index, model.opset(node->domain), device, std::move(in),
                                sub);
      try {
        out = it->second(ctx);
      } catch (const UnsupportedError&) {
        throw;
      } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.starts_with("[onnx] " + node->label(index))) throw;
        // The runtime's own helpers say "[onnx] what": the node's label takes that place.
        if (msg.starts_with("[onnx] ")) msg.erase(0, 7);
        throw ValueError("[onnx] " + node->label(index) + ": " + msg);
      }
    }
    for (size_t k = 0; k < node->outputs.size(); ++k) {
      if (node->outputs[k].empty()) continue;
      if (k >= out.size())
        throw ValueError("[onnx] " + node->label(index) + ": output " + std::to_string(k) + " (\"" +
                         node->outputs[k] + "\") is not produced");
      check_output(*node, index, k, out[k]);
      scope.values[node->outputs[k]] = std::move(out[k]);
    }
  }

  // Keeps every value a node hands on within the session's limit, so that no later node
  // starts from a tensor the limit would have refused.
  void check_output(const Node& n, size_t index, size_t k, const RValue& v) const {
    auto check = [&](const Tn& t) {
      const int64_t bytes = checked_mul(t.shape().numel(), size_of(t.dtype()), "[onnx] output");
      if (bytes > options.max_tensor_bytes)
        throw ValueError("[onnx] " + n.label(index) + ": output " + std::to_string(k) + " " +
                         t.shape().to_string() + " takes " + std::to_string(bytes) +
                         " bytes, more than the session's limit of " +
                         std::to_string(options.max_tensor_bytes) +
                         " (SessionOptions::max_tensor_bytes)");
    };
    if (v.kind == Value::Kind::Tensor) check(v.t);
    for (const Tn& t : v.seq) check(t);
  }

  std::vector<RValue> run_function(const Function& f, const Node& call,
                                   const std::vector<RValue>& in, const Scope& outer) {
    Scope s;
    s.parent = nullptr;  // a function body sees only its inputs
    (void)outer;
    for (size_t i = 0; i < f.inputs.size(); ++i)
      s.values[f.inputs[i]] = i < in.size() ? in[i] : RValue{};
    std::map<std::string, Attribute> attrs;
    for (const Attribute& a : call.attributes) attrs[a.name] = a;
    for (size_t i = 0; i < f.nodes.size(); ++i) run_node(f.nodes[i], i, s, &attrs);
    std::vector<RValue> out;
    for (const auto& name : f.outputs) {
      const RValue* v = s.find(name);
      out.push_back(v ? *v : RValue{});
    }
    return out;
  }

  std::vector<RValue> run_graph(const Graph& g, const std::vector<RValue>& args,
                                const Scope* parent) {
    Scope s;
    s.parent = parent;
    for (const auto& [name, v] : initializers(g)) s.values[name] = v;
    size_t k = 0;
    for (const ValueInfo& in : g.inputs) {
      if (k < args.size())
        s.values[in.name] = args[k];
      else if (!s.values.contains(in.name))
        throw ValueError("[onnx] graph \"" + g.name + "\": input \"" + in.name + "\" is not given");
      ++k;
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) run_node(g.nodes[i], i, s, nullptr);
    std::vector<RValue> out;
    for (const ValueInfo& o : g.outputs) {
      const RValue* v = s.find(o.name);
      if (!v)
        throw ValueError("[onnx] graph \"" + g.name + "\": output \"" + o.name +
                         "\" is never produced");
      out.push_back(*v);
    }
    return out;
  }
};

Session::Session(Model model, Device device, SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  auto problems = unsupported(model);
  if (!problems.empty())
    throw UnsupportedError(model.path.empty() ? std::string("model") : model.path.string(),
                           std::move(problems));
  if (options.optimize) {
    detail::TensorLimit limit(options.max_tensor_bytes);  // constant folding runs operators
    optimize(model, options.passes);
  }
  impl_->model = std::move(model);
  impl_->device = device;
  impl_->options = options;
}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const Model& Session::model() const { return impl_->model; }
Device Session::device() const { return impl_->device; }

std::vector<const ValueInfo*> Session::inputs() const {
  std::set<std::string> init;
  for (const auto& [n, d] : impl_->model.graph.initializers) init.insert(n);
  std::vector<const ValueInfo*> out;
  for (const auto& v : impl_->model.graph.inputs)
    if (!init.contains(v.name)) out.push_back(&v);
  return out;
}

std::vector<Value> Session::run(const std::vector<Value>& inputs) {
  const Graph& g = impl_->model.graph;
  if (inputs.size() > g.inputs.size())
    throw ValueError("[onnx] the graph takes " + std::to_string(g.inputs.size()) + " inputs, " +
                     std::to_string(inputs.size()) + " given");
  std::vector<RValue> args;
  for (const Value& v : inputs) args.push_back(wrap(v));
  detail::TensorLimit limit(impl_->options.max_tensor_bytes);
  auto out = impl_->run_graph(g, args, nullptr);
  std::vector<Value> res;
  for (const RValue& v : out) res.push_back(unwrap(v));
  return res;
}

}  // namespace ember::onnx
