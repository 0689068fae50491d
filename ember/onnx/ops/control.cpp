// ONNX control flow (If, Loop, Scan), sequences and optionals. Subgraphs run through the
// session's graph runner, seeing the enclosing graphs' values; conditions and trip counts
// are read on the host.
#include <algorithm>

#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

namespace {

template <Backend B>
bool host_bool(const Tn<B>& t) {
  const auto v = host_floats(t);
  return !v.empty() && v[0] != 0;
}

template <Backend B>
std::vector<RValue<B>> if_op(Ctx<B>& c) {
  const bool cond = host_bool(c.in(0));
  const Graph& g = c.attr_graph(cond ? "then_branch" : "else_branch");
  return c.run_subgraph(g, {});
}

/// Stacks per-iteration tensors along a new axis 0 (an empty list gives [0]).
template <Backend B>
Tn<B> stack0(const std::vector<Tn<B>>& items, Device dev) {
  if (items.empty()) return full<B>({0}, 0, DType::F32, dev);
  std::vector<Tn<B>> parts;
  for (const Tn<B>& t : items) parts.push_back(unsqueeze(t, 0));
  return cat<B>(parts, 0);
}

template <Backend B>
std::vector<RValue<B>> loop(Ctx<B>& c) {
  const Graph& body = c.attr_graph("body");
  int64_t max_trips = INT64_MAX;
  if (c.has(0)) {
    const auto m = host_ints(c.in(0));
    if (m.size() != 1) c.fail("the trip count M must hold one value");
    max_trips = m[0];
  }
  bool cond = c.has(1) ? host_bool(c.in(1)) : true;
  std::vector<RValue<B>> carried;
  for (size_t k = 2; k < c.num_inputs(); ++k) carried.push_back(c.value(k));
  const size_t n_carried = carried.size();
  if (body.outputs.size() < 1 + n_carried)
    c.fail("the body has " + std::to_string(body.outputs.size()) + " outputs, fewer than 1 + " +
           std::to_string(n_carried) + " loop-carried values");
  const size_t n_scan = body.outputs.size() - 1 - n_carried;
  std::vector<std::vector<Tn<B>>> scans(n_scan);
  auto tensor = [&](const RValue<B>& v, const char* what) -> const Tn<B>& {
    if (v.kind != Value::Kind::Tensor)
      c.fail(std::string("the body's ") + what + " is not a tensor");
    return v.t;
  };
  int64_t i = 0;
  for (; i < max_trips && cond; ++i) {
    if (i > 10'000'000) c.fail("more than 10 million iterations");
    std::vector<RValue<B>> args{
        RValue<B>::of(full<B>({}, static_cast<double>(i), DType::I64, c.device())),
        RValue<B>::of(full<B>({}, cond ? 1 : 0, DType::Bool, c.device()))};
    for (const RValue<B>& v : carried) args.push_back(v);
    auto out = c.run_subgraph(body, args);
    if (out.size() != 1 + n_carried + n_scan) c.fail("the body's outputs do not match");
    cond = host_bool(tensor(out[0], "condition"));
    for (size_t k = 0; k < n_carried; ++k) carried[k] = out[1 + k];
    for (size_t k = 0; k < n_scan; ++k) {
      const Tn<B>& t = tensor(out[1 + n_carried + k], "scan output");
      Dims stacked{i + 1};
      for (int64_t d : dims_of(t)) stacked.push_back(d);
      check_size(stacked, t.dtype());  // what the stacked output will take
      scans[k].push_back(t);
    }
  }
  std::vector<RValue<B>> res = carried;
  for (auto& s : scans) res.push_back(RValue<B>::of(stack0(s, c.device())));
  return res;
}

/// Runs a Scan body over time-major inputs: the final states and the per-step outputs
/// stacked along a new axis 0.
template <Backend B>
std::pair<std::vector<RValue<B>>, std::vector<Tn<B>>> scan_steps(const Ctx<B>& c, const Graph& body,
                                                                 std::vector<RValue<B>> state,
                                                                 const std::vector<Tn<B>>& xs) {
  int64_t steps = -1;
  for (const Tn<B>& x : xs) {
    if (steps >= 0 && x.shape()[0] != steps) c.fail("scan inputs differ in length");
    steps = x.shape()[0];
  }
  const size_t n_state = state.size();
  if (body.outputs.size() < n_state) c.fail("the body has fewer outputs than states");
  const size_t n_out = body.outputs.size() - n_state;
  std::vector<std::vector<Tn<B>>> outs(n_out);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<RValue<B>> args = state;
    for (const Tn<B>& x : xs) {
      Dims d = dims_of(x);
      d.erase(0);
      args.push_back(RValue<B>::of(reshape(slice_axis(x, 0, t, t + 1, 1), d)));
    }
    auto out = c.run_subgraph(body, args);
    for (size_t k = 0; k < n_state; ++k) state[k] = out[k];
    for (size_t k = 0; k < n_out; ++k) {
      if (out[n_state + k].kind != Value::Kind::Tensor) c.fail("a scan output is not a tensor");
      outs[k].push_back(out[n_state + k].t);
    }
  }
  std::vector<Tn<B>> stacked;
  for (auto& o : outs) stacked.push_back(stack0(o, c.device()));
  return {state, stacked};
}

/// Axis `ax` of x moved to the front.
template <Backend B>
Tn<B> axis_first(const Tn<B>& x, int64_t ax) {
  if (ax == 0) return x;
  Dims p{ax};
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != ax) p.push_back(i);
  return permute(x, p);
}

template <Backend B>
std::vector<RValue<B>> scan(Ctx<B>& c) {
  const Graph& body = c.attr_graph("body");
  const int64_t n_scan_in = c.attr_i("num_scan_inputs", 0);
  const auto n_in = static_cast<int64_t>(c.num_inputs());
  if (c.opset() < 9) {
    // Opset 8: [sequence_lens], states and scan inputs all with a batch axis 0, time axis 1.
    const int64_t n_state = n_in - 1 - n_scan_in;
    if (n_scan_in <= 0 || n_state < 0) c.fail("num_scan_inputs does not fit the inputs");
    if (c.has(0)) c.fail("sequence_lens is not supported");
    auto dirs = c.attr_ints("directions", std::vector<int64_t>(static_cast<size_t>(n_scan_in), 0));
    const int64_t batch = c.in(1).shape()[0];
    std::vector<std::vector<Tn<B>>> per_state(static_cast<size_t>(n_state)), per_out;
    for (int64_t b = 0; b < batch; ++b) {
      auto pick = [&](const Tn<B>& t) {
        Dims d = dims_of(t);
        d.erase(0);
        return reshape(slice_axis(t, 0, b, b + 1, 1), d);
      };
      std::vector<RValue<B>> state;
      for (int64_t k = 0; k < n_state; ++k)
        state.push_back(RValue<B>::of(pick(c.in(static_cast<size_t>(1 + k)))));
      std::vector<Tn<B>> xs;
      for (int64_t k = 0; k < n_scan_in; ++k) {
        Tn<B> x = pick(c.in(static_cast<size_t>(1 + n_state + k)));
        xs.push_back(dirs[static_cast<size_t>(k)] ? x.flip({0}) : x);
      }
      auto [st, outs] = scan_steps(c, body, state, xs);
      for (int64_t k = 0; k < n_state; ++k)
        per_state[static_cast<size_t>(k)].push_back(st[static_cast<size_t>(k)].t);
      per_out.resize(outs.size());
      for (size_t k = 0; k < outs.size(); ++k) per_out[k].push_back(outs[k]);
    }
    std::vector<RValue<B>> res;
    for (auto& v : per_state) res.push_back(RValue<B>::of(stack0(v, c.device())));
    for (auto& v : per_out) res.push_back(RValue<B>::of(stack0(v, c.device())));
    return res;
  }
  const int64_t n_state = n_in - n_scan_in;
  if (n_scan_in <= 0 || n_state < 0) c.fail("num_scan_inputs does not fit the inputs");
  auto in_axes =
      c.attr_ints("scan_input_axes", std::vector<int64_t>(static_cast<size_t>(n_scan_in), 0));
  auto in_dirs =
      c.attr_ints("scan_input_directions", std::vector<int64_t>(static_cast<size_t>(n_scan_in), 0));
  std::vector<RValue<B>> state;
  for (int64_t k = 0; k < n_state; ++k) state.push_back(c.value(static_cast<size_t>(k)));
  std::vector<Tn<B>> xs;
  for (int64_t k = 0; k < n_scan_in; ++k) {
    Tn<B> x = c.in(static_cast<size_t>(n_state + k));
    x = axis_first(x, norm_axis(c, in_axes[static_cast<size_t>(k)], x.rank()));
    xs.push_back(in_dirs[static_cast<size_t>(k)] ? x.flip({0}) : x);
  }
  auto [final_state, outs] = scan_steps(c, body, state, xs);
  auto out_axes = c.attr_ints("scan_output_axes", std::vector<int64_t>(outs.size(), 0));
  auto out_dirs = c.attr_ints("scan_output_directions", std::vector<int64_t>(outs.size(), 0));
  std::vector<RValue<B>> res = final_state;
  for (size_t k = 0; k < outs.size(); ++k) {
    Tn<B> y = outs[k];
    if (out_dirs[k]) y = y.flip({0});
    const int64_t ax = norm_axis(c, out_axes[k], y.rank());
    if (ax != 0) {
      Dims p;
      for (int64_t i = 1; i <= ax; ++i) p.push_back(i);
      p.push_back(0);
      for (int64_t i = ax + 1; i < y.rank(); ++i) p.push_back(i);
      y = permute(y, p);
    }
    res.push_back(RValue<B>::of(y));
  }
  return res;
}

// ---- sequences --------------------------------------------------------------------------

template <Backend B>
const std::vector<Tn<B>>& seq_in(const Ctx<B>& c, size_t k) {
  const RValue<B>& v = c.value(k);
  if (v.kind != Value::Kind::Sequence) c.fail("input " + std::to_string(k) + " must be a sequence");
  return v.seq;
}

template <Backend B>
int64_t seq_pos(const Ctx<B>& c, size_t k, int64_t size, bool insert) {
  int64_t p = host_ints(c.in(k))[0];
  const int64_t hi = insert ? size : size - 1;
  if (p < -size || p > hi) c.fail("position " + std::to_string(p) + " is out of range");
  return p < 0 ? p + size : p;
}

template <Backend B>
std::vector<RValue<B>> sequence_empty(Ctx<B>&) {
  return {RValue<B>::sequence({})};
}

template <Backend B>
std::vector<RValue<B>> sequence_construct(Ctx<B>& c) {
  std::vector<Tn<B>> s;
  for (size_t k = 0; k < c.num_inputs(); ++k) s.push_back(c.in(k));
  return {RValue<B>::sequence(std::move(s))};
}

template <Backend B>
std::vector<RValue<B>> sequence_insert(Ctx<B>& c) {
  std::vector<Tn<B>> s = seq_in(c, 0);
  const auto size = static_cast<int64_t>(s.size());
  const int64_t p = c.has(2) ? seq_pos(c, 2, size, true) : size;
  s.insert(s.begin() + p, c.in(1));
  return {RValue<B>::sequence(std::move(s))};
}

template <Backend B>
std::vector<RValue<B>> sequence_at(Ctx<B>& c) {
  const auto& s = seq_in(c, 0);
  return one(s[static_cast<size_t>(seq_pos(c, 1, static_cast<int64_t>(s.size()), false))]);
}

template <Backend B>
std::vector<RValue<B>> sequence_erase(Ctx<B>& c) {
  std::vector<Tn<B>> s = seq_in(c, 0);
  const auto size = static_cast<int64_t>(s.size());
  if (size == 0) c.fail("the sequence is empty");
  const int64_t p = c.has(1) ? seq_pos(c, 1, size, false) : size - 1;
  s.erase(s.begin() + p);
  return {RValue<B>::sequence(std::move(s))};
}

template <Backend B>
std::vector<RValue<B>> sequence_length(Ctx<B>& c) {
  return one(full<B>({}, static_cast<double>(seq_in(c, 0).size()), DType::I64, c.device()));
}

template <Backend B>
std::vector<RValue<B>> split_to_sequence(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t axis = norm_axis(c, c.attr_i("axis", 0), x.rank());
  const bool keep = c.attr_i("keepdims", 1) != 0;
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  if (c.has(1)) {
    auto sp = c.ints(1);
    if (c.in(1).rank() == 0) {
      const int64_t each = sp[0];
      if (each <= 0) c.fail("split must be > 0");
      for (int64_t at = 0; at < n; at += each) sizes.push_back(std::min(each, n - at));
    } else {
      sizes = sp;
    }
  }
  std::vector<Tn<B>> s;
  if (sizes.empty()) {
    for (int64_t i = 0; i < n; ++i) {
      Tn<B> part = slice_axis(x, axis, i, i + 1, 1);
      if (!keep) {
        Dims d = dims_of(part);
        d.erase(static_cast<size_t>(axis));
        part = reshape(part, d);
      }
      s.push_back(part);
    }
  } else {
    int64_t at = 0;
    for (int64_t sz : sizes) {
      s.push_back(slice_axis(x, axis, at, at + sz, 1));
      at += sz;
    }
    if (at != n) c.fail("split sizes do not add up to the axis size");
  }
  return {RValue<B>::sequence(std::move(s))};
}

template <Backend B>
std::vector<RValue<B>> concat_from_sequence(Ctx<B>& c) {
  const auto& s = seq_in(c, 0);
  if (s.empty()) c.fail("the sequence is empty");
  const bool new_axis = c.attr_i("new_axis", 0) != 0;
  const int64_t r = s[0].rank() + (new_axis ? 1 : 0);
  const int64_t axis = norm_axis(c, c.attr_i("axis", 0), r);
  std::vector<Tn<B>> parts;
  for (const Tn<B>& t : s) parts.push_back(new_axis ? unsqueeze(t, axis) : t);
  return one(cat<B>(parts, axis));
}

template <Backend B>
std::vector<RValue<B>> sequence_map(Ctx<B>& c) {
  const Graph& body = c.attr_graph("body");
  const auto& first = seq_in(c, 0);
  const size_t n = first.size();
  std::vector<std::vector<Tn<B>>> outs(body.outputs.size());
  for (size_t i = 0; i < n; ++i) {
    std::vector<RValue<B>> args;
    for (size_t k = 0; k < c.num_inputs(); ++k) {
      const RValue<B>& v = c.value(k);
      if (v.kind == Value::Kind::Sequence) {
        if (v.seq.size() != n) c.fail("the sequences differ in length");
        args.push_back(RValue<B>::of(v.seq[i]));
      } else {
        args.push_back(v);
      }
    }
    auto out = c.run_subgraph(body, args);
    for (size_t k = 0; k < out.size() && k < outs.size(); ++k) outs[k].push_back(out[k].t);
  }
  std::vector<RValue<B>> res;
  for (auto& o : outs) res.push_back(RValue<B>::sequence(std::move(o)));
  return res;
}

// ---- optionals ----------------------------------------------------------------------------

template <Backend B>
std::vector<RValue<B>> optional_op(Ctx<B>& c) {
  if (c.has(0)) return {c.value(0)};
  return {RValue<B>{}};
}

template <Backend B>
std::vector<RValue<B>> optional_has_element(Ctx<B>& c) {
  return one(full<B>({}, c.has(0) ? 1 : 0, DType::Bool, c.device()));
}

template <Backend B>
std::vector<RValue<B>> optional_get_element(Ctx<B>& c) {
  if (!c.has(0)) c.fail("the optional is empty");
  return {c.value(0)};
}

}  // namespace

template <Backend B>
void register_control_ops(OpRegistry<B>& r) {
  r["If"] = if_op<B>;
  r["Loop"] = loop<B>;
  r["Scan"] = scan<B>;
  r["SequenceEmpty"] = sequence_empty<B>;
  r["SequenceConstruct"] = sequence_construct<B>;
  r["SequenceInsert"] = sequence_insert<B>;
  r["SequenceAt"] = sequence_at<B>;
  r["SequenceErase"] = sequence_erase<B>;
  r["SequenceLength"] = sequence_length<B>;
  r["SplitToSequence"] = split_to_sequence<B>;
  r["ConcatFromSequence"] = concat_from_sequence<B>;
  r["SequenceMap"] = sequence_map<B>;
  r["Optional"] = optional_op<B>;
  r["OptionalHasElement"] = optional_has_element<B>;
  r["OptionalGetElement"] = optional_get_element<B>;
}

template void register_control_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_control_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
