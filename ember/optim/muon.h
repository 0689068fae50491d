// Muon: momentum orthogonalized by a Newton–Schulz iteration, for 2-D parameters (Jordan et
// al., 2024). Every other parameter (biases, scalars, higher ranks, and the paths listed in
// `adamw_params`) is updated by AdamW inside the same optimizer.
//
//   auto opt = optim::MuonConfig{}.with_adamw_params({"embed", "head"}).init<B>();
//   opt.step(0.02, model, grads);
//
// For a 2-D parameter with gradient g: b = μ·b + (1-μ)·g; u = (1-μ)·g + μ·b (Nesterov) or b;
// O = NS(u), the quintic Newton–Schulz iteration (a, b, c) = (3.4445, -4.7750, 2.0315), 5
// steps, on u / max(‖u‖_F, eps) with the short side first; then p = p·(1 - lr·wd) - lr·s·O.
// The shape-based scale s is sqrt(max(1, d_output / d_input)) for ember's [d_input,
// d_output] weights (`original`, the value PyTorch's Muon gives the same layer, which it
// stores transposed), or 0.2·sqrt(max(rows, cols)) (`match_rms_adamw`, RMS like AdamW's).
#pragma once
#include <cmath>

#include "ember/optim/adam.h"

namespace ember::optim {

enum class MuonLrAdjust { Original, MatchRmsAdamW };
EMBER_CONFIG_ENUM(MuonLrAdjust, {MuonLrAdjust::Original, "original"},
                  {MuonLrAdjust::MatchRmsAdamW, "match_rms_adamw"})

template <Backend B>
class Muon;

struct MuonConfig {
  double momentum = 0.95;
  bool nesterov = true;
  double weight_decay = 0.1;  // decoupled; also used by the AdamW parameters
  int64_t ns_steps = 5;
  double ns_a = 3.4445;
  double ns_b = -4.7750;
  double ns_c = 2.0315;
  double eps = 1e-7;
  MuonLrAdjust adjust_lr = MuonLrAdjust::Original;
  /// Path prefixes updated by AdamW even when 2-D (embeddings, output heads).
  std::vector<std::string> adamw_params;
  double adamw_lr_scale = 1.0;  // the AdamW parameters' lr is the step's lr times this
  double adamw_beta1 = 0.9;
  double adamw_beta2 = 0.999;
  double adamw_eps = 1e-8;
  GradientClipping grad_clipping;
  EMBER_CONFIG(MuonConfig, momentum, nesterov, weight_decay, ns_steps, ns_a, ns_b, ns_c, eps,
               adjust_lr, adamw_params, adamw_lr_scale, adamw_beta1, adamw_beta2, adamw_eps,
               grad_clipping)

  template <Backend B>
  Muon<B> init() const {
    return Muon<B>(*this);
  }
};

/// The Newton–Schulz orthogonalization Muon applies to its update (exposed for tests).
template <Backend I>
Tensor<I, 2> newton_schulz(Tensor<I, 2> x, int64_t steps, double a, double b, double c,
                           double eps) {
  const bool tall = x.dim(0) > x.dim(1);
  if (tall) x = x.transpose();
  x = x / x.square().sum().sqrt().clamp_min(eps).template reshape<2>({1, 1});
  for (int64_t k = 0; k < steps; ++k) {
    Tensor<I, 2> gram = x.matmul(x.transpose());
    Tensor<I, 2> poly = gram * b + gram.matmul(gram) * c;
    x = x * a + poly.matmul(x);
  }
  return tall ? x.transpose() : x;
}

template <Backend B>
class Muon : public Optimizer<Muon<B>, B> {
 public:
  using Inner = typename B::Inner;
  static constexpr const char* kName = "Muon";

  explicit Muon(MuonConfig c) : c_(std::move(c)) {
    if (!(c_.momentum >= 0 && c_.momentum < 1))
      throw ValueError("[Muon] momentum must be in [0, 1)");
    if (c_.ns_steps < 0) throw ValueError("[Muon] ns_steps must be >= 0");
    if (!(c_.weight_decay >= 0 && c_.eps >= 0 && c_.adamw_eps >= 0 && c_.adamw_lr_scale >= 0))
      throw ValueError("[Muon] weight_decay, eps, adamw_eps and adamw_lr_scale must be >= 0");
  }
  const MuonConfig& config() const { return c_; }

  /// Whether the parameter at `path` with this shape is orthogonalized (else AdamW).
  bool uses_muon(const Shape& shape, std::string_view path) const {
    if (shape.rank() != 2) return false;
    for (const auto& p : c_.adamw_params)
      if (detail::under_prefix(path, p)) return false;
    return true;
  }
  std::vector<std::string> slots(const Shape& shape, std::string_view path) const {
    if (uses_muon(shape, path)) return {"momentum_buffer"};
    return detail::adam_slots(false);
  }

  template <int D>
  Tensor<Inner, D> update(const Tensor<Inner, D>& x, const Tensor<Inner, D>& g,
                          ParamState<Inner>& st, const ParamContext& ctx) const {
    if constexpr (D == 2) {
      if (uses_muon(x.shape(), ctx.path)) return muon_update(x, g, st, ctx);
    }
    return detail::adam_update<Inner, D>(x, g, st, ctx.lr * c_.adamw_lr_scale, ctx.weight_decay,
                                         true, c_.adamw_beta1, c_.adamw_beta2, c_.adamw_eps, false,
                                         false);
  }

 private:
  Tensor<Inner, 2> muon_update(const Tensor<Inner, 2>& x, const Tensor<Inner, 2>& g,
                               ParamState<Inner>& st, const ParamContext& ctx) const {
    const double mu = c_.momentum;
    auto b0 = st.template get<2>("momentum_buffer");
    Tensor<Inner, 2> buf = (b0 ? *b0 : g.zeros_like()) * mu + g * (1 - mu);
    st.set("momentum_buffer", buf);
    Tensor<Inner, 2> u = c_.nesterov ? g * (1 - mu) + buf * mu : buf;
    Tensor<Inner, 2> o = newton_schulz(u, c_.ns_steps, c_.ns_a, c_.ns_b, c_.ns_c, c_.eps);
    const double rows = static_cast<double>(x.dim(0)), cols = static_cast<double>(x.dim(1));
    const double scale = c_.adjust_lr == MuonLrAdjust::Original
                             ? std::sqrt(std::max(1.0, cols / rows))
                             : 0.2 * std::sqrt(std::max(rows, cols));
    Tensor<Inner, 2> y = ctx.weight_decay != 0 ? x * (1 - ctx.lr * ctx.weight_decay) : x;
    return y - o * (ctx.lr * scale);
  }

  MuonConfig c_;
};

// Compiled once in the library for Autodiff<Dispatch> (ember/optim/instantiate.cpp).
extern template class EMBER_API Optimizer<Muon<AutodiffDispatch>, AutodiffDispatch>;

}  // namespace ember::optim
