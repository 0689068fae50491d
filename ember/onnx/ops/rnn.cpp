// ONNX recurrent layers: RNN, GRU and LSTM, one time step at a time over matmuls of the op
// table, forward, reverse or bidirectional, with ONNX's gate orders (LSTM i o f c, GRU z r h),
// peepholes, clip, linear_before_reset, sequence lengths and both layouts.
#include <algorithm>

#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

namespace {

enum class Cell { Rnn, Gru, Lstm };

template <Backend B>
struct Act {
  std::string name;
  double alpha = 0, beta = 0;
  Tn<B> operator()(const Tn<B>& x) const {
    if (name == "Sigmoid") return x.sigmoid();
    if (name == "Tanh") return x.unary(OpCode::Tanh);
    if (name == "Relu") return x.unary(OpCode::Relu);
    if (name == "Affine") return x * alpha + beta;
    if (name == "LeakyRelu") return where(x.lt(scalar_of(x, 0.0)), x * alpha, x);
    if (name == "ThresholdedRelu") return where(x.gt(alpha), x, x.zeros_like());
    if (name == "ScaledTanh") return (x * beta).unary(OpCode::Tanh) * alpha;
    if (name == "HardSigmoid")
      return op<B>(OpCode::Minimum, {op<B>(OpCode::Maximum, {x * alpha + beta, scalar_of(x, 0.0)}),
                                     scalar_of(x, 1.0)});
    if (name == "Elu") return where(x.gt(0.0), x, x.unary(OpCode::Expm1) * alpha);
    if (name == "Softsign") return x / (x.unary(OpCode::Abs) + 1.0);
    if (name == "Softplus") return (x.exp() + 1.0).log();
    return x;
  }
};

/// Rows [k * h, (k + 1) * h) of a [G h, ...] matrix.
template <Backend B>
Tn<B> gate_rows(const Tn<B>& w, int64_t k, int64_t h) {
  return slice_axis(w, 0, k * h, (k + 1) * h, 1);
}

template <Backend B>
std::vector<RValue<B>> recurrent(Ctx<B>& c, Cell cell) {
  Tn<B> x = c.in(0);
  const Tn<B>& w_all = c.in(1);
  const Tn<B>& r_all = c.in(2);
  const int64_t layout = c.attr_i("layout", 0);
  if (layout) x = permute(x, {1, 0, 2});  // [seq, batch, input]
  const int64_t seq = x.shape()[0], batch = x.shape()[1];
  const int64_t h = c.attr_i("hidden_size", r_all.shape()[2]);
  const std::string direction = c.attr_s("direction", "forward");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (w_all.shape()[0] != dirs) c.fail("W's first dim must be the number of directions");
  const int gates = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
  const double clip = c.attr_f("clip", 0.0);
  const bool lbr = c.attr_i("linear_before_reset", 0) != 0;
  if (cell == Cell::Lstm && c.attr_i("input_forget", 0)) c.fail("input_forget is not supported");
  // Activations: per direction, f (and g, h).
  auto names = c.has_attr("activations") ? c.node().attr("activations")->strings
                                         : std::vector<std::string>{};
  const size_t per = cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1;
  if (names.empty()) {
    std::vector<std::string> d = cell == Cell::Lstm
                                     ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                 : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                     : std::vector<std::string>{"Tanh"};
    for (int64_t k = 0; k < dirs; ++k) names.insert(names.end(), d.begin(), d.end());
  }
  if (names.size() != per * static_cast<size_t>(dirs)) c.fail("activations has the wrong count");
  auto alphas = c.attr_floats("activation_alpha"), betas = c.attr_floats("activation_beta");
  std::vector<Act<B>> acts;
  for (size_t i = 0; i < names.size(); ++i) {
    Act<B> a{names[i], 0, 0};
    const bool default_one = a.name == "ScaledTanh" || a.name == "Affine";
    a.alpha = i < alphas.size()
                  ? alphas[i]
                  : (a.name == "LeakyRelu"                                           ? 0.01
                     : a.name == "HardSigmoid"                                       ? 0.2
                     : default_one || a.name == "Elu" || a.name == "ThresholdedRelu" ? 1.0
                                                                                     : 0.0);
    a.beta = i < betas.size() ? betas[i]
                              : (a.name == "HardSigmoid" ? 0.5
                                 : default_one           ? 1.0
                                                         : 0.0);
    acts.push_back(a);
  }
  std::optional<std::vector<int64_t>> lens;
  if (c.has(4)) {
    lens = c.ints(4);
    if (std::all_of(lens->begin(), lens->end(), [&](int64_t l) { return l == seq; })) lens.reset();
  }
  auto init = [&](size_t k, int64_t d) -> Tn<B> {
    if (c.has(k)) {
      Tn<B> t = c.in(k);
      if (layout) t = permute(t, {1, 0, 2});
      return reshape(slice_axis(t, 0, d, d + 1, 1), {batch, h});
    }
    return full<B>({batch, h}, 0.0, x.dtype(), x.device());
  };
  std::vector<Tn<B>> ys(static_cast<size_t>(dirs)), hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    Tn<B> w = reshape(slice_axis(w_all, 0, d, d + 1, 1), {gates * h, x.shape()[2]});
    Tn<B> r = reshape(slice_axis(r_all, 0, d, d + 1, 1), {gates * h, h});
    std::optional<Tn<B>> wb, rb, peep;
    if (c.has(3)) {
      Tn<B> b = reshape(slice_axis(c.in(3), 0, d, d + 1, 1), {2 * gates * h});
      wb = slice_axis(b, 0, 0, gates * h, 1);
      rb = slice_axis(b, 0, gates * h, 2 * gates * h, 1);
    }
    if (cell == Cell::Lstm && c.has(7))
      peep = reshape(slice_axis(c.in(7), 0, d, d + 1, 1), {3 * h});
    const Act<B>* a = &acts[static_cast<size_t>(d) * per];
    Tn<B> ht = init(5, d);
    Tn<B> ct = cell == Cell::Lstm ? init(6, d) : ht;
    // All input projections at once: [seq, batch, G h].
    Tn<B> xw =
        reshape(reshape(x, {seq * batch, x.shape()[2]}).matmul(w.mT()), {seq, batch, gates * h});
    if (wb) xw = xw + *wb;
    std::vector<Tn<B>> out(static_cast<size_t>(seq));
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t t = reverse ? seq - 1 - s : s;
      Tn<B> xt = reshape(slice_axis(xw, 0, t, t + 1, 1), {batch, gates * h});
      auto part = [&](const Tn<B>& v, int64_t k) {
        return slice_axis(v, 1, k * h, (k + 1) * h, 1);
      };
      auto clipped = [&](const Tn<B>& v) {
        if (clip <= 0) return v;
        return op<B>(OpCode::Minimum,
                     {op<B>(OpCode::Maximum, {v, scalar_of(v, -clip)}), scalar_of(v, clip)});
      };
      Tn<B> nh, nc = ct;
      if (cell == Cell::Rnn) {
        Tn<B> pre = xt + ht.matmul(r.mT());
        if (rb) pre = pre + *rb;
        nh = a[0](clipped(pre));
      } else if (cell == Cell::Gru) {
        Tn<B> rz = ht.matmul(slice_axis(r, 0, 0, 2 * h, 1).mT());
        if (rb) rz = rz + slice_axis(*rb, 0, 0, 2 * h, 1);
        Tn<B> z = a[0](clipped(part(xt, 0) + part(rz, 0)));
        Tn<B> rr = a[0](clipped(part(xt, 1) + part(rz, 1)));
        Tn<B> rh = gate_rows(r, 2, h);
        std::optional<Tn<B>> rbh;
        if (rb) rbh = slice_axis(*rb, 0, 2 * h, 3 * h, 1);
        Tn<B> hh;
        if (lbr) {
          Tn<B> lin = ht.matmul(rh.mT());
          if (rbh) lin = lin + *rbh;
          hh = a[1](clipped(part(xt, 2) + rr * lin));
        } else {
          Tn<B> lin = (rr * ht).matmul(rh.mT());
          if (rbh) lin = lin + *rbh;
          hh = a[1](clipped(part(xt, 2) + lin));
        }
        nh = (1.0 - z) * hh + z * ht;
      } else {
        Tn<B> g = xt + ht.matmul(r.mT());
        if (rb) g = g + *rb;
        Tn<B> gi = part(g, 0), go = part(g, 1), gf = part(g, 2), gc = part(g, 3);
        if (peep) {
          gi = gi + slice_axis(*peep, 0, 0, h, 1) * ct;
          gf = gf + slice_axis(*peep, 0, 2 * h, 3 * h, 1) * ct;
        }
        Tn<B> i = a[0](clipped(gi)), f = a[0](clipped(gf)), cc = a[1](clipped(gc));
        nc = f * ct + i * cc;
        if (peep) go = go + slice_axis(*peep, 0, h, 2 * h, 1) * nc;
        Tn<B> o = a[0](clipped(go));
        nh = o * a[2](nc);
      }
      if (lens) {  // past a sequence's end: state kept, output zero
        std::vector<int64_t> live(static_cast<size_t>(batch));
        for (int64_t b = 0; b < batch; ++b)
          live[static_cast<size_t>(b)] = t < (*lens)[static_cast<size_t>(b)];
        Tn<B> m = reshape(int_tensor<B>(live, x.device()), {batch, 1}).gt(0.0);
        nh = where(m, nh, ht);
        nc = where(m, nc, ct);
        out[static_cast<size_t>(t)] = where(m, nh, nh.zeros_like());
      } else {
        out[static_cast<size_t>(t)] = nh;
      }
      ht = nh;
      ct = nc;
    }
    std::vector<Tn<B>> steps;
    for (const Tn<B>& o : out) steps.push_back(reshape(o, {1, 1, batch, h}));
    ys[static_cast<size_t>(d)] =
        seq ? cat<B>(steps, 0) : full<B>({0, 1, batch, h}, 0, x.dtype(), x.device());
    hs.push_back(reshape(ht, {1, batch, h}));
    cs.push_back(reshape(ct, {1, batch, h}));
  }
  Tn<B> y = cat<B>(ys, 1);  // [seq, dirs, batch, h]
  Tn<B> yh = cat<B>(hs, 0), yc = cat<B>(cs, 0);
  if (layout) {
    y = permute(y, {2, 0, 1, 3});  // [batch, seq, dirs, h]
    yh = permute(yh, {1, 0, 2});
    yc = permute(yc, {1, 0, 2});
  }
  std::vector<RValue<B>> res{RValue<B>::of(y), RValue<B>::of(yh)};
  if (cell == Cell::Lstm) res.push_back(RValue<B>::of(yc));
  return res;
}

template <Backend B>
std::vector<RValue<B>> rnn(Ctx<B>& c) {
  return recurrent(c, Cell::Rnn);
}
template <Backend B>
std::vector<RValue<B>> gru(Ctx<B>& c) {
  return recurrent(c, Cell::Gru);
}
template <Backend B>
std::vector<RValue<B>> lstm(Ctx<B>& c) {
  return recurrent(c, Cell::Lstm);
}

}  // namespace

template <Backend B>
void register_rnn_ops(OpRegistry<B>& r) {
  r["RNN"] = rnn<B>;
  r["GRU"] = gru<B>;
  r["LSTM"] = lstm<B>;
}

template void register_rnn_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_rnn_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
