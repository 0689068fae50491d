// Graph passes (passes.h).
#include "ember/onnx/passes.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "ember/onnx/ops/context.h"

namespace ember::onnx {

std::string PassReport::to_string() const {
  std::ostringstream s;
  s << "folded " << folded << " constant nodes, " << conv_bn << " conv+batch-norm pairs, " << linear
    << " matmul+add into linear, " << attention << " attention subgraphs, " << int_sums
    << " integer weights' column sums, " << common << " common subexpressions, " << dead
    << " dead nodes";
  return s.str();
}

namespace {

using RValue = detail::RValue<Dispatch>;

/// Every name a node reads, its subgraphs' references to outer values included.
void names_read(const Node& n, std::set<std::string>& out) {
  for (const auto& i : n.inputs)
    if (!i.empty()) out.insert(i);
  for (const Attribute& a : n.attributes)
    for (const auto& g : a.graphs)
      for (const Node& inner : g->nodes) names_read(inner, out);
}

bool has_subgraph(const Node& n) {
  for (const Attribute& a : n.attributes)
    if (!a.graphs.empty()) return true;
  return false;
}

bool deterministic(const Node& n) {
  static const std::set<std::string> random = {
      "RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli",
      "Multinomial",   "Dropout"};
  return !random.contains(n.op_type) && !has_subgraph(n);
}

struct GraphView {
  Graph& g;
  const Model& model;
  std::set<std::string> graph_inputs, graph_outputs;
  std::map<std::string, const TensorData*> consts;

  GraphView(Graph& graph, const Model& m) : g(graph), model(m) { refresh(); }

  void refresh() {
    graph_inputs.clear();
    graph_outputs.clear();
    consts.clear();
    for (const auto& v : g.inputs) graph_inputs.insert(v.name);
    for (const auto& v : g.outputs) graph_outputs.insert(v.name);
    for (const auto& [name, d] : g.initializers)
      if (!graph_inputs.contains(name)) consts[name] = &d;
  }

  /// How many readers each name has (node inputs, subgraph references, graph outputs).
  std::map<std::string, int> uses() const {
    std::map<std::string, int> u;
    for (const Node& n : g.nodes) {
      for (const auto& i : n.inputs)
        if (!i.empty()) ++u[i];
      std::set<std::string> inner;
      for (const Attribute& a : n.attributes)
        for (const auto& sg : a.graphs)
          for (const Node& x : sg->nodes) names_read(x, inner);
      for (const auto& i : inner) ++u[i];
    }
    for (const auto& o : graph_outputs) ++u[o];
    return u;
  }

  const TensorData* constant(const std::string& name) const {
    auto it = consts.find(name);
    return it == consts.end() ? nullptr : it->second;
  }

  void add_initializer(const std::string& name, TensorData d) {
    g.initializers.emplace_back(name, std::move(d));
    refresh();  // the vector may have moved: the pointers are rebuilt
  }
};

/// The node run on the CPU with constant inputs; nullopt when it cannot be.
std::optional<std::vector<TensorData>> evaluate(const Model& m, const Node& n, size_t index,
                                                const std::vector<const TensorData*>& in) {
  auto it =
      detail::registry<Dispatch>().find(n.domain.empty() ? n.op_type : n.domain + "." + n.op_type);
  if (it == detail::registry<Dispatch>().end()) return std::nullopt;
  std::vector<RValue> args;
  for (const TensorData* d : in)
    args.push_back(d ? RValue::of(detail::constant<Dispatch>(*d, Device::cpu())) : RValue{});
  detail::Ctx<Dispatch> ctx(n, index, m.opset(n.domain), Device::cpu(), std::move(args), nullptr);
  try {
    auto out = it->second(ctx);
    std::vector<TensorData> res;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty()) {
        res.emplace_back();
        continue;
      }
      if (k >= out.size() || out[k].kind != Value::Kind::Tensor) return std::nullopt;
      res.push_back(detail::host(out[k].t));
    }
    return res;
  } catch (const Error&) {
    return std::nullopt;  // left to fail (with its message) when the model runs
  }
}

int fold_constants(GraphView& v, const PassOptions& o) {
  int folded = 0;
  std::map<std::string, const ValueInfo*> infos;
  for (const auto& x : v.g.inputs) infos[x.name] = &x;
  for (const auto& x : v.g.value_info) infos[x.name] = &x;
  std::vector<Node> kept;
  for (size_t i = 0; i < v.g.nodes.size(); ++i) {
    const Node& n = v.g.nodes[i];
    std::optional<std::vector<TensorData>> out;
    if (n.op_type == "Shape" && n.domain.empty() && n.inputs.size() == 1 && n.outputs.size() == 1 &&
        !n.attr("start") && !n.attr("end")) {
      auto it = infos.find(n.inputs[0]);
      bool known = it != infos.end() && it->second->shape.has_value();
      std::vector<int64_t> dims;
      if (known)
        for (const Dim& d : *it->second->shape) {
          known = known && d.known();
          if (d.known()) dims.push_back(*d.size);
        }
      if (known && !v.graph_outputs.contains(n.outputs[0])) {
        v.add_initializer(n.outputs[0], TensorData::from<int64_t>(
                                            dims, Shape{static_cast<int64_t>(dims.size())}));
        ++folded;
        continue;
      }
    }
    bool all_const = deterministic(n) && !n.outputs.empty();
    std::vector<const TensorData*> in;
    for (const auto& name : n.inputs) {
      if (name.empty()) {
        in.push_back(nullptr);
        continue;
      }
      const TensorData* d = v.constant(name);
      if (!d) all_const = false;
      in.push_back(d);
    }
    if (all_const && !n.op_type.starts_with("Sequence") && n.op_type != "Optional")
      out = evaluate(v.model, n, i, in);
    bool fits = out.has_value();
    if (out)
      for (const auto& d : *out)
        fits = fits && static_cast<int64_t>(d.bytes().size()) <= o.max_folded_bytes;
    bool graph_out = false;
    for (const auto& name : n.outputs) graph_out |= v.graph_outputs.contains(name);
    if (fits && !graph_out) {
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (!n.outputs[k].empty()) {
          v.add_initializer(n.outputs[k], std::move((*out)[k]));
        }
      ++folded;
      continue;
    }
    kept.push_back(n);
  }
  v.g.nodes = std::move(kept);
  v.refresh();
  return folded;
}

int eliminate_dead(GraphView& v) {
  std::set<std::string> needed(v.graph_outputs.begin(), v.graph_outputs.end());
  std::vector<bool> keep(v.g.nodes.size(), false);
  for (size_t i = v.g.nodes.size(); i-- > 0;) {
    const Node& n = v.g.nodes[i];
    bool used = false;
    for (const auto& o : n.outputs) used |= !o.empty() && needed.contains(o);
    if (!used) continue;
    keep[i] = true;
    names_read(n, needed);
  }
  std::vector<Node> kept;
  int dead = 0;
  for (size_t i = 0; i < v.g.nodes.size(); ++i) {
    if (keep[i])
      kept.push_back(std::move(v.g.nodes[i]));
    else
      ++dead;
  }
  v.g.nodes = std::move(kept);
  std::vector<std::pair<std::string, TensorData>> inits;
  for (auto& [name, d] : v.g.initializers)
    if (needed.contains(name) || v.graph_inputs.contains(name))
      inits.emplace_back(name, std::move(d));
  v.g.initializers = std::move(inits);
  v.refresh();
  return dead;
}

std::string attr_key(const Attribute& a) {
  std::ostringstream s;
  s << a.name << ':' << static_cast<int>(a.type) << ':' << a.i << ':' << a.f << ':' << a.s << ':';
  for (auto x : a.ints) s << x << ',';
  for (auto x : a.floats) s << x << ',';
  for (const auto& x : a.strings) s << x << ',';
  for (const auto& t : a.tensors) {
    s << t.shape().to_string() << static_cast<int>(t.dtype());
    for (std::byte b : t.bytes()) s << static_cast<int>(b) << '.';
  }
  return s.str();
}

int eliminate_common(GraphView& v) {
  std::map<std::string, std::vector<std::string>> seen;  // key -> outputs
  std::map<std::string, std::string> rename;
  std::vector<Node> kept;
  int merged = 0;
  for (Node& n : v.g.nodes) {
    for (auto& i : n.inputs)
      if (auto it = rename.find(i); it != rename.end()) i = it->second;
    bool graph_out = false;
    for (const auto& o : n.outputs) graph_out |= v.graph_outputs.contains(o);
    if (!deterministic(n) || graph_out) {
      kept.push_back(std::move(n));
      continue;
    }
    std::string key = n.domain + "|" + n.op_type + "|" + std::to_string(n.outputs.size()) + "|";
    for (const auto& i : n.inputs) key += i + ",";
    for (const Attribute& a : n.attributes) key += attr_key(a) + ";";
    auto [it, fresh] = seen.emplace(key, n.outputs);
    if (fresh) {
      kept.push_back(std::move(n));
      continue;
    }
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) rename[n.outputs[k]] = it->second[k];
    ++merged;
  }
  v.g.nodes = std::move(kept);
  v.refresh();
  return merged;
}

/// The single node that reads `name`, when exactly one does (and no graph output).
Node* only_reader(GraphView& v, const std::map<std::string, int>& uses, const std::string& name) {
  auto u = uses.find(name);
  if (u == uses.end() || u->second != 1 || v.graph_outputs.contains(name)) return nullptr;
  for (Node& n : v.g.nodes)
    for (const auto& i : n.inputs)
      if (i == name) return &n;
  return nullptr;
}

std::vector<double> values(const TensorData& d) {
  std::vector<double> out(static_cast<size_t>(d.numel()));
  convert_elements(d.bytes().data(), d.dtype(), out.data(), DType::F64, out.size());
  return out;
}

TensorData from_values(const std::vector<double>& v, const Shape& s, DType t) {
  TensorData d(s, t);
  convert_elements(v.data(), DType::F64, d.bytes().data(), t, v.size());
  return d;
}

int fold_conv_batch_norm(GraphView& v) {
  int folded = 0;
  auto uses = v.uses();
  std::set<const Node*> drop;
  for (Node& conv : v.g.nodes) {
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1) continue;
    Node* bn = only_reader(v, uses, conv.outputs[0]);
    if (!bn || bn->op_type != "BatchNormalization" || bn->inputs.size() < 5 ||
        bn->outputs.empty() || bn->inputs[0] != conv.outputs[0])
      continue;
    if (const Attribute* t = bn->attr("training_mode"); t && t->i != 0) continue;
    bool extra_outputs = false;
    for (size_t k = 1; k < bn->outputs.size(); ++k) extra_outputs |= !bn->outputs[k].empty();
    if (extra_outputs) continue;
    const TensorData* w = conv.inputs.size() > 1 ? v.constant(conv.inputs[1]) : nullptr;
    const TensorData* b =
        conv.inputs.size() > 2 && !conv.inputs[2].empty() ? v.constant(conv.inputs[2]) : nullptr;
    if (!w || !is_float(w->dtype()) || (conv.inputs.size() > 2 && !conv.inputs[2].empty() && !b))
      continue;
    const TensorData* p[4];
    bool ok = true;
    for (int k = 0; k < 4; ++k) ok = ok && (p[k] = v.constant(bn->inputs[1 + k])) != nullptr;
    if (!ok) continue;
    const Attribute* e = bn->attr("epsilon");
    const double eps = e ? e->f : 1e-5;
    const int64_t cout = w->shape()[0];
    auto scale = values(*p[0]), shift = values(*p[1]), mean = values(*p[2]), var = values(*p[3]);
    if (static_cast<int64_t>(scale.size()) != cout || shift.size() != scale.size() ||
        mean.size() != scale.size() || var.size() != scale.size())
      continue;
    auto wv = values(*w);
    std::vector<double> bias = b ? values(*b) : std::vector<double>(static_cast<size_t>(cout), 0.0);
    const size_t per = wv.size() / static_cast<size_t>(cout);
    for (int64_t o = 0; o < cout; ++o) {
      const double f = scale[static_cast<size_t>(o)] / std::sqrt(var[static_cast<size_t>(o)] + eps);
      for (size_t j = 0; j < per; ++j) wv[static_cast<size_t>(o) * per + j] *= f;
      bias[static_cast<size_t>(o)] =
          (bias[static_cast<size_t>(o)] - mean[static_cast<size_t>(o)]) * f +
          shift[static_cast<size_t>(o)];
    }
    const std::string wn = conv.outputs[0] + "/folded_weight",
                      bn_name = conv.outputs[0] + "/folded_bias";
    v.add_initializer(wn, from_values(wv, w->shape(), w->dtype()));
    v.add_initializer(bn_name, from_values(bias, Shape{cout}, w->dtype()));
    conv.inputs.resize(3);
    conv.inputs[1] = wn;
    conv.inputs[2] = bn_name;
    conv.outputs[0] = bn->outputs[0];
    drop.insert(bn);
    ++folded;
  }
  std::vector<Node> kept;
  for (Node& n : v.g.nodes)
    if (!drop.contains(&n)) kept.push_back(std::move(n));
  v.g.nodes = std::move(kept);
  v.refresh();
  return folded;
}

int fuse_matmul_add(GraphView& v) {
  int fused = 0;
  auto uses = v.uses();
  std::set<const Node*> drop;
  for (Node& mm : v.g.nodes) {
    if (mm.op_type != "MatMul" || !mm.domain.empty() || mm.inputs.size() != 2 ||
        mm.outputs.size() != 1)
      continue;
    const TensorData* w = v.constant(mm.inputs[1]);
    if (!w || w->shape().rank() != 2) continue;
    Node* add = only_reader(v, uses, mm.outputs[0]);
    if (!add || add->op_type != "Add" || add->inputs.size() != 2 || add->outputs.size() != 1)
      continue;
    const std::string& other = add->inputs[0] == mm.outputs[0] ? add->inputs[1] : add->inputs[0];
    const TensorData* b = v.constant(other);
    if (!b || b->dtype() != w->dtype() || b->numel() != w->shape()[1] || b->shape().rank() > 1)
      continue;
    mm.op_type = "Linear";
    mm.domain = "ember";
    mm.inputs.push_back(other);
    mm.outputs[0] = add->outputs[0];
    drop.insert(add);
    ++fused;
  }
  std::vector<Node> kept;
  for (Node& n : v.g.nodes)
    if (!drop.contains(&n)) kept.push_back(std::move(n));
  v.g.nodes = std::move(kept);
  v.refresh();
  return fused;
}

// MatMulInteger by a constant 2-d weight with a zero point for its input a: sum_k (a - za) b
// needs the weight's column sums, the same for every run; they are taken here once, as an
// initializer, and the node becomes ember.MatMulInteger (a, b, za, zb, the sums), which reads
// them instead of summing the weight on every run.
int fold_integer_weight_sums(GraphView& v) {
  int folded = 0;
  for (Node& mm : v.g.nodes) {
    if (mm.op_type != "MatMulInteger" || !mm.domain.empty() || mm.inputs.size() < 3 ||
        mm.inputs[2].empty() || mm.outputs.size() != 1)
      continue;
    const TensorData* w = v.constant(mm.inputs[1]);
    if (!w || w->shape().rank() != 2 || (w->dtype() != DType::I8 && w->dtype() != DType::U8))
      continue;
    const int64_t k = w->shape()[0], n = w->shape()[1];
    // modulo 2^32, as the i32 arithmetic that reads them
    std::vector<uint32_t> acc(static_cast<size_t>(n), 0);
    const auto* bytes = reinterpret_cast<const uint8_t*>(w->bytes().data());
    const bool is_signed = w->dtype() == DType::I8;
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) {
        const uint8_t b = bytes[p * n + j];
        acc[static_cast<size_t>(j)] +=
            static_cast<uint32_t>(is_signed ? int32_t{static_cast<int8_t>(b)} : int32_t{b});
      }
    std::vector<int32_t> sums(acc.size());
    for (size_t j = 0; j < acc.size(); ++j) sums[j] = static_cast<int32_t>(acc[j]);
    const std::string name = mm.outputs[0] + "/weight_column_sums";
    v.add_initializer(name, TensorData::from<int32_t>(sums, Shape{n}));
    mm.inputs.resize(4);  // a, b, za, zb ("" where absent)
    mm.inputs.push_back(name);
    mm.op_type = "MatMulInteger";
    mm.domain = "ember";
    ++folded;
  }
  v.refresh();
  return folded;
}

/// The node producing `name` (nullptr for graph inputs and initializers).
Node* producer(GraphView& v, const std::string& name) {
  for (Node& n : v.g.nodes)
    for (const auto& o : n.outputs)
      if (o == name) return &n;
  return nullptr;
}

std::optional<double> scalar_constant(const GraphView& v, const std::string& name) {
  const TensorData* d = v.constant(name);
  if (!d || d->numel() != 1 || !is_float(d->dtype())) return std::nullopt;
  return values(*d)[0];
}

int fuse_attention(GraphView& v) {
  // MatMul(q, k^T) with a constant scale on q or on the scores, Softmax over the last axis,
  // MatMul by v: one ember.Attention(q, k, v). k^T must come from a Transpose; k is the
  // same source transposed with the last two axes of that perm swapped back.
  int fused = 0;
  auto uses = v.uses();
  std::set<const Node*> drop;
  std::map<const Node*, Node> before;  // a Transpose to add in front of a fused node
  const int64_t opset = v.model.opset("");
  auto scaled = [&](const std::string& name, const Node* reader) -> std::pair<std::string, double> {
    Node* p = producer(v, name);
    if (p && (p->op_type == "Mul" || p->op_type == "Div") && p->inputs.size() == 2 &&
        only_reader(v, uses, p->outputs[0]) == reader)
      if (auto c = scalar_constant(v, p->inputs[1]); c && *c != 0) {
        drop.insert(p);
        return {p->inputs[0], p->op_type == "Mul" ? *c : 1.0 / *c};
      }
    return {name, 1.0};
  };
  for (Node& out : v.g.nodes) {
    if (out.op_type != "MatMul" || !out.domain.empty() || out.inputs.size() != 2) continue;
    Node* sm = producer(v, out.inputs[0]);
    if (!sm || sm->op_type != "Softmax" || sm->inputs.empty() || drop.contains(sm)) continue;
    const Attribute* ax = sm->attr("axis");
    if (opset < 13 || (ax && ax->i != -1)) continue;  // only the last axis (ranks unknown here)
    if (only_reader(v, uses, sm->outputs[0]) != &out) continue;
    std::set<const Node*> tentative = drop;
    auto [scores, s1] = scaled(sm->inputs[0], sm);
    Node* qk = producer(v, scores);
    if (!qk || qk->op_type != "MatMul" || qk->inputs.size() != 2 || drop.contains(qk) ||
        only_reader(v, uses, qk->outputs[0]) != (s1 == 1.0 ? sm : producer(v, sm->inputs[0]))) {
      drop = tentative;
      continue;
    }
    auto [q, s2] = scaled(qk->inputs[0], qk);
    Node* kt = producer(v, qk->inputs[1]);
    const Attribute* perm =
        kt && kt->op_type == "Transpose" && !kt->inputs.empty() ? kt->attr("perm") : nullptr;
    if (!perm || perm->ints.size() < 2) {
      drop = tentative;
      continue;
    }
    std::vector<int64_t> p = perm->ints;
    std::swap(p[p.size() - 1], p[p.size() - 2]);
    bool identity = true;
    for (size_t i = 0; i < p.size(); ++i) identity = identity && p[i] == static_cast<int64_t>(i);
    std::string k = kt->inputs[0];
    if (!identity) {
      Node t;
      t.op_type = "Transpose";
      t.inputs = {kt->inputs[0]};
      t.outputs = {qk->outputs[0] + "/k"};
      Attribute a;
      a.name = "perm";
      a.type = Attribute::Type::Ints;
      a.ints = p;
      t.attributes.push_back(a);
      k = t.outputs[0];
      before[&out] = std::move(t);
    }
    Node f;
    f.name = out.name;
    f.op_type = "Attention";
    f.domain = "ember";
    f.inputs = {q, k, out.inputs[1]};
    f.outputs = out.outputs;
    Attribute a;
    a.name = "scale";
    a.type = Attribute::Type::Float;
    a.f = s1 * s2;
    f.attributes.push_back(a);
    drop.insert(sm);
    drop.insert(qk);
    out = std::move(f);  // k^T's Transpose stays for the dead-code pass
    ++fused;
  }
  std::vector<Node> kept;
  for (Node& n : v.g.nodes) {
    if (drop.contains(&n)) continue;
    if (auto it = before.find(&n); it != before.end()) kept.push_back(std::move(it->second));
    kept.push_back(std::move(n));
  }
  v.g.nodes = std::move(kept);
  v.refresh();
  return fused;
}

}  // namespace

PassReport optimize(Model& model, const PassOptions& o) {
  PassReport r;
  GraphView v(model.graph, model);
  if (o.fold_constants) r.folded = fold_constants(v, o);
  if (o.fold_conv_batch_norm) r.conv_bn = fold_conv_batch_norm(v);
  if (o.fuse_attention) r.attention = fuse_attention(v);
  if (o.fuse_matmul_add) r.linear = fuse_matmul_add(v);
  if (o.fold_integer_weight_sums) r.int_sums = fold_integer_weight_sums(v);
  if (o.eliminate_common) r.common = eliminate_common(v);
  if (o.eliminate_dead) r.dead = eliminate_dead(v);
  return r;
}

}  // namespace ember::onnx
