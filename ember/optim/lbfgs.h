// L-BFGS (torch.optim.LBFGS's algorithm): quasi-Newton steps from a limited history of
// gradient differences, on all trainable parameters as one flat vector. Each step calls a
// closure that recomputes the loss on the module's current values.
//
//   auto opt = optim::LbfgsConfig{}.with_history_size(10)
//                  .with_line_search(optim::LineSearch::StrongWolfe).init<B>();
//   double loss = opt.step(1.0, model, [&](const Model<B>& m) {
//     return m.forward(x).sub(y).square().mean();     // the optimizer runs backward()
//   });
//
// The closure returns the loss tensor (the optimizer calls backward() and collects the
// gradients), or an optim::LossAndGrads<B> when it computes the gradients itself. It may
// take the module or nothing. A step runs up to max_iter iterations and returns the loss the
// first evaluation gave.
//
// Without a line search each iteration moves by lr along the L-BFGS direction (the first
// ever by min(1, 1 / ‖g‖₁)·lr); StrongWolfe searches for a step meeting the strong Wolfe
// conditions (c1 = 1e-4, c2 = 0.9, at most 25 evaluations) by bracketing and cubic
// interpolation. Records hold the whole state under "lbfgs/..." names. All trainable
// parameters must share one dtype and device; parameter groups are not supported.
#pragma once
#include <cmath>
#include <deque>

#include "ember/optim/optimizer.h"

namespace ember::optim {

enum class LineSearch { None, StrongWolfe };
EMBER_CONFIG_ENUM(LineSearch, {LineSearch::None, "none"}, {LineSearch::StrongWolfe, "strong_wolfe"})

template <Backend B>
class Lbfgs;

struct LbfgsConfig {
  int64_t max_iter = 20;
  int64_t max_eval = 0;  // 0: max_iter * 5 / 4
  double tolerance_grad = 1e-7;
  double tolerance_change = 1e-9;
  int64_t history_size = 100;
  LineSearch line_search = LineSearch::None;
  GradientClipping grad_clipping;  // applied to every evaluation's gradients
  EMBER_CONFIG(LbfgsConfig, max_iter, max_eval, tolerance_grad, tolerance_change, history_size,
               line_search, grad_clipping)

  template <Backend B>
  Lbfgs<B> init() const {
    return Lbfgs<B>(*this);
  }
};

/// What an L-BFGS closure may return instead of the loss tensor.
template <Backend B>
struct LossAndGrads {
  double loss;
  GradientsParams<B> grads;
};

namespace detail {
/// The minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to `[lo, hi]`
/// (the points' span by default); the middle when the cubic has no minimum.
inline double cubic_min(double x1, double f1, double g1, double x2, double f2, double g2,
                        std::optional<std::pair<double, double>> bounds = {}) {
  auto [lo, hi] = bounds ? *bounds : (x1 <= x2 ? std::pair{x1, x2} : std::pair{x2, x1});
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double disc = d1 * d1 - g1 * g2;
  if (!(disc >= 0)) return (lo + hi) / 2;
  const double d2 = std::sqrt(disc);
  const double m = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                            : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(m, lo), hi);
}
}  // namespace detail

template <Backend B>
class Lbfgs {
  static_assert(AutodiffBackend<B>, "optimizers step modules on an Autodiff backend");

 public:
  using Inner = typename B::Inner;
  using Vec = Tensor<Inner, 1>;
  static constexpr const char* kName = "Lbfgs";

  explicit Lbfgs(LbfgsConfig c) : c_(std::move(c)) {
    if (c_.max_iter < 1) throw ValueError("[Lbfgs] max_iter must be >= 1");
    if (c_.history_size < 1) throw ValueError("[Lbfgs] history_size must be >= 1");
    if (c_.max_eval < 0) throw ValueError("[Lbfgs] max_eval must be >= 0");
  }
  const LbfgsConfig& config() const { return c_; }
  int64_t max_eval() const { return c_.max_eval > 0 ? c_.max_eval : c_.max_iter * 5 / 4; }
  /// Iterations and closure evaluations over all steps so far.
  int64_t iterations() const { return n_iter_; }
  int64_t evaluations() const { return func_evals_; }

  /// L-BFGS has one set of hyper-parameters for all parameters.
  Lbfgs& set_group(const std::string&, const GroupSettings&) {
    throw ValueError("[Lbfgs] parameter groups are not supported (one flat vector)");
  }

  /// Up to max_iter L-BFGS iterations; returns the loss of the first evaluation.
  template <class M, class Closure>
  double step(double lr, M& model, Closure&& closure) {
    detail::check_lr(kName, lr);
    auto eval = [&] { return evaluate(model, closure); };
    auto [loss, g] = eval();
    const double orig_loss = loss;
    int64_t evals = 1;
    ++func_evals_;
    if (max_abs(g) <= c_.tolerance_grad) return orig_loss;

    for (int64_t it = 1; it <= c_.max_iter; ++it) {
      ++n_iter_;
      if (n_iter_ == 1) {
        d_ = -g;
        ys_.clear();
        ss_.clear();
        rho_.clear();
        h_diag_ = 1;
      } else {
        d_ = direction(g);
      }
      prev_g_ = g;
      prev_loss_ = loss;
      t_ = n_iter_ == 1 ? std::min(1.0, 1.0 / g.abs().sum().template into_scalar<double>()) * lr
                        : lr;
      const double gtd = dot(g, *d_);
      if (gtd > -c_.tolerance_change) break;

      int64_t ls_evals = 0;
      bool opt_cond = false;
      if (c_.line_search == LineSearch::StrongWolfe) {
        auto x0 = values(model);
        auto r = strong_wolfe(model, closure, x0, t_, *d_, loss, g, gtd);
        loss = r.f;
        g = r.g;
        t_ = r.t;
        ls_evals = r.evals;
        move(model, x0, t_, *d_);
        opt_cond = max_abs(g) <= c_.tolerance_grad;
      } else {
        move(model, values(model), t_, *d_);
        if (it != c_.max_iter) {
          std::tie(loss, g) = eval();
          opt_cond = max_abs(g) <= c_.tolerance_grad;
          ls_evals = 1;
        }
      }
      evals += ls_evals;
      func_evals_ += ls_evals;

      if (it == c_.max_iter || evals >= max_eval() || opt_cond) break;
      if (max_abs(*d_ * t_) <= c_.tolerance_change) break;
      if (std::abs(loss - prev_loss_) < c_.tolerance_change) break;
    }
    return orig_loss;
  }

  /// The state: tensors "lbfgs/d", "lbfgs/prev_grad", "lbfgs/y.<i>", "lbfgs/s.<i>"; scalars
  /// in metadata. "lbfgs/params" lists the parameter paths the flat vectors cover.
  template <class M>
  Record to_record(const M& model) const {
    Record r;
    r.metadata["format"] = "ember.optim";
    r.metadata["optimizer"] = kName;
    r.metadata["config"] = nn::config_json(c_);
    r.metadata["lbfgs/params"] = joined_paths(model);
    r.metadata["lbfgs/n_iter"] = std::to_string(n_iter_);
    r.metadata["lbfgs/func_evals"] = std::to_string(func_evals_);
    r.metadata["lbfgs/history"] = std::to_string(ys_.size());
    r.metadata["lbfgs/t"] = detail::format_double(t_);
    r.metadata["lbfgs/h_diag"] = detail::format_double(h_diag_);
    r.metadata["lbfgs/prev_loss"] = detail::format_double(prev_loss_);
    if (d_) r.tensors.emplace_back("lbfgs/d", d_->to_data());
    if (prev_g_) r.tensors.emplace_back("lbfgs/prev_grad", prev_g_->to_data());
    for (size_t i = 0; i < ys_.size(); ++i) {
      r.tensors.emplace_back("lbfgs/y." + std::to_string(i), ys_[i].to_data());
      r.tensors.emplace_back("lbfgs/s." + std::to_string(i), ss_[i].to_data());
      r.metadata["lbfgs/rho." + std::to_string(i)] = detail::format_double(rho_[i]);
    }
    return r;
  }

  /// Replaces the state with a record's, after checking it against `model`; every problem
  /// is listed in one ValueError and leaves the state unchanged.
  template <class M>
  void load_record(const M& model, const Record& r) {
    std::vector<std::string> problems;
    auto meta = [&](const std::string& k) -> std::optional<std::string> {
      auto it = r.metadata.find(k);
      if (it == r.metadata.end()) {
        problems.push_back("metadata '" + k + "' is missing");
        return std::nullopt;
      }
      return it->second;
    };
    auto as_int = [&](const std::string& k) -> int64_t {
      auto v = meta(k);
      if (!v) return 0;
      auto n = detail::parse_int(*v);
      if (!n || *n < 0) problems.push_back("metadata '" + k + "': bad count '" + *v + "'");
      return n.value_or(0);
    };
    auto as_double = [&](const std::string& k) -> double {
      auto v = meta(k);
      if (!v) return 0;
      auto x = detail::parse_double(*v);
      if (!x) problems.push_back("metadata '" + k + "': bad number '" + *v + "'");
      return x.value_or(0);
    };
    if (auto o = meta("optimizer"); o && *o != kName)
      problems.push_back("it is a record of optimizer '" + *o + "', not '" + kName + "'");
    if (auto p = meta("lbfgs/params"); p && *p != joined_paths(model))
      problems.push_back("it covers parameters [" + *p + "], the model's trainable ones are [" +
                         joined_paths(model) + "]");
    const int64_t n = numel(model);
    DType dt = DType::F32;
    Device dev = Inner::default_device();
    if (auto fp = first_param(model)) std::tie(dt, dev) = *fp;
    const int64_t n_iter = as_int("lbfgs/n_iter"), func_evals = as_int("lbfgs/func_evals");
    const int64_t hist = as_int("lbfgs/history");
    const double t = as_double("lbfgs/t"), h_diag = as_double("lbfgs/h_diag"),
                 prev_loss = as_double("lbfgs/prev_loss");
    std::map<std::string, const TensorData*> by_name;
    for (const auto& [name, data] : r.tensors) by_name[name] = &data;
    std::map<std::string, bool> used;
    auto vec = [&](const std::string& name, bool required) -> std::optional<Vec> {
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        if (required) problems.push_back("'" + name + "' is missing");
        return std::nullopt;
      }
      used[name] = true;
      const TensorData& d = *it->second;
      if (d.shape() != Shape{n}) {
        problems.push_back("'" + name + "' has shape " + d.shape().to_string() +
                           ", the parameters flatten to [" + std::to_string(n) + "]");
        return std::nullopt;
      }
      if (d.dtype() != dt) {
        problems.push_back("'" + name + "' has dtype " + std::string(ember::name(d.dtype())) +
                           ", the parameters " + std::string(ember::name(dt)));
        return std::nullopt;
      }
      return Vec::from_data(d, dev);
    };
    auto d = vec("lbfgs/d", false);
    auto prev_g = vec("lbfgs/prev_grad", false);
    std::deque<Vec> ys, ss;
    std::deque<double> rho;
    for (int64_t i = 0; i < hist && i <= c_.history_size; ++i) {
      auto y = vec("lbfgs/y." + std::to_string(i), true);
      auto s = vec("lbfgs/s." + std::to_string(i), true);
      double rh = as_double("lbfgs/rho." + std::to_string(i));
      if (y && s) {
        ys.push_back(*y);
        ss.push_back(*s);
        rho.push_back(rh);
      }
    }
    if (hist > c_.history_size)
      problems.push_back("the record has " + std::to_string(hist) +
                         " history pairs, history_size is " + std::to_string(c_.history_size));
    for (const auto& [name, data] : r.tensors)
      if (!used.count(name)) problems.push_back("unknown tensor '" + name + "'");
    if (!problems.empty())
      throw ValueError(std::string("[") + kName +
                       "] cannot load the record:" + detail::join_problems(problems));
    n_iter_ = n_iter;
    func_evals_ = func_evals;
    t_ = t;
    h_diag_ = h_diag;
    prev_loss_ = prev_loss;
    d_ = d;
    prev_g_ = prev_g;
    ys_ = std::move(ys);
    ss_ = std::move(ss);
    rho_ = std::move(rho);
  }

  /// Forgets all state (the next step starts like the first).
  void reset() {
    n_iter_ = func_evals_ = 0;
    t_ = h_diag_ = 1;
    prev_loss_ = 0;
    d_.reset();
    prev_g_.reset();
    ys_.clear();
    ss_.clear();
    rho_.clear();
  }

 private:
  struct SearchResult {
    double f;
    Vec g;
    double t;
    int64_t evals;
  };

  static double dot(const Vec& a, const Vec& b) {
    return (a * b).sum().template into_scalar<double>();
  }
  static double max_abs(const Vec& a) { return a.abs().max().template into_scalar<double>(); }

  /// Calls fn(path, param) for the parameters L-BFGS moves (trainable float ones).
  template <class M, class Fn>
  static void for_each_moved(M& model, Fn&& fn) {
    nn::for_each_param(model, [&](const std::string& path, auto& p) {
      using V = typename std::remove_cvref_t<decltype(p)>::Value;
      static_assert(std::is_same_v<typename V::backend_type, B>,
                    "the module's backend is not the optimizer's backend");
      if constexpr (std::is_same_v<typename V::kind_type, Float>)
        if (!p.empty() && p.trainable()) fn(path, p);
    });
  }
  template <class M>
  static int64_t numel(const M& model) {
    int64_t n = 0;
    for_each_moved(model, [&](const std::string&, const auto& p) { n += p.numel(); });
    return n;
  }
  template <class M>
  static std::string joined_paths(const M& model) {
    std::string s;
    for_each_moved(model, [&](const std::string& path, const auto&) {
      s.append(s.empty() ? "" : ",").append(path);
    });
    return s;
  }
  template <class M>
  static std::optional<std::pair<DType, Device>> first_param(const M& model) {
    std::optional<std::pair<DType, Device>> out;
    for_each_moved(model, [&](const std::string&, const auto& p) {
      if (!out) out = std::pair{p.val().dtype(), p.device()};
    });
    return out;
  }

  /// The moved parameters' values, in order, as inner handles.
  template <class M>
  static std::vector<typename Inner::Handle> values(const M& model) {
    std::vector<typename Inner::Handle> out;
    for_each_moved(
        model, [&](const std::string&, const auto& p) { out.push_back(p.val().inner().handle()); });
    return out;
  }
  /// Sets every moved parameter to x0 + t·d (d flat).
  template <class M>
  static void move(M& model, const std::vector<typename Inner::Handle>& x0, double t,
                   const Vec& d) {
    autodiff::NoGradGuard no_grad;
    size_t i = 0;
    int64_t off = 0;
    for_each_moved(model, [&](const std::string&, auto& p) {
      using V = typename std::remove_cvref_t<decltype(p)>::Value;
      constexpr int D = V::kRank;
      Tensor<Inner, D> x(x0.at(i++));
      const int64_t n = x.numel();
      auto step = d.narrow(0, off, n).template reshape<D>(x.shape()) * t;
      off += n;
      p.set(V::from_inner(x + step));
    });
  }
  /// Restores saved values.
  template <class M>
  static void restore(M& model, const std::vector<typename Inner::Handle>& x0) {
    size_t i = 0;
    for_each_moved(model, [&](const std::string&, auto& p) {
      using V = typename std::remove_cvref_t<decltype(p)>::Value;
      p.set(V::from_inner(Tensor<Inner, V::kRank>(x0.at(i++))));
    });
  }

  /// Runs the closure: (loss, flat gradient after clipping; zeros where there is none).
  template <class M, class Closure>
  std::pair<double, Vec> evaluate(M& model, Closure& closure) {
    auto call = [&]() -> decltype(auto) {
      if constexpr (std::is_invocable_v<Closure&, M&>)
        return closure(model);
      else
        return closure();
    };
    auto out = call();
    double loss;
    GradientsParams<B> grads;
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(out)>, LossAndGrads<B>>) {
      loss = out.loss;
      grads = std::move(out.grads);
    } else {
      loss = out.template into_scalar<double>();
      grads = GradientsParams<B>::from_grads(out.backward(), model);
    }
    c_.grad_clipping.apply(grads);
    autodiff::NoGradGuard no_grad;
    std::vector<Vec> parts;
    for_each_moved(model, [&](const std::string&, const auto& p) {
      using V = typename std::remove_cvref_t<decltype(p)>::Value;
      constexpr int D = V::kRank;
      auto g = grads.template get<D>(p.id());
      const int64_t n = p.numel();
      if (g)
        parts.push_back(g->template reshape<1>({n}));
      else
        parts.push_back(Vec::zeros({n}, p.device(), p.val().dtype()));
    });
    if (parts.empty()) throw ValueError("[Lbfgs] the model has no trainable parameters");
    return {loss, cat(parts, 0)};
  }

  /// The L-BFGS direction -H·g after adding the newest pair (y, s) to the history when its
  /// curvature y·s is positive.
  Vec direction(const Vec& g) {
    Vec y = g - *prev_g_;
    Vec s = *d_ * t_;
    const double ys = dot(y, s);
    if (ys > 1e-10) {
      if (static_cast<int64_t>(ys_.size()) == c_.history_size) {
        ys_.pop_front();
        ss_.pop_front();
        rho_.pop_front();
      }
      ys_.push_back(y);
      ss_.push_back(s);
      rho_.push_back(1.0 / ys);
      h_diag_ = ys / dot(y, y);
    }
    const size_t k = ys_.size();
    std::vector<double> alpha(k);
    Vec q = -g;
    for (size_t i = k; i-- > 0;) {
      alpha[i] = dot(ss_[i], q) * rho_[i];
      q = q - ys_[i] * alpha[i];
    }
    Vec r = q * h_diag_;
    for (size_t i = 0; i < k; ++i) {
      const double beta = dot(ys_[i], r) * rho_[i];
      r = r + ss_[i] * (alpha[i] - beta);
    }
    return r;
  }

  /// A step length along d meeting the strong Wolfe conditions, starting from t. The
  /// parameters are back at x0 when it returns.
  template <class M, class Closure>
  SearchResult strong_wolfe(M& model, Closure& closure,
                            const std::vector<typename Inner::Handle>& x0, double t, const Vec& d,
                            double f, const Vec& g, double gtd) {
    constexpr double c1 = 1e-4, c2 = 0.9;
    constexpr int64_t max_ls = 25;
    const double tol = c_.tolerance_change;
    const double d_norm = max_abs(d);
    auto at = [&](double step) {
      move(model, x0, step, d);
      auto r = evaluate(model, closure);
      restore(model, x0);
      return r;
    };
    auto [f_new, g_new] = at(t);
    int64_t evals = 1;
    double gtd_new = dot(g_new, d);

    // bracketing: points (step, f, g, g·d); size 1 once the conditions hold
    std::vector<double> bt, bf, bgtd;
    std::vector<Vec> bg;
    double t_prev = 0, f_prev = f, gtd_prev = gtd;
    Vec g_prev = g;
    bool done = false;
    int64_t ls_iter = 0;
    while (ls_iter < max_ls) {
      const bool armijo_fails = f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev);
      if (!armijo_fails && std::abs(gtd_new) <= -c2 * gtd) {
        bt = {t};
        bf = {f_new};
        bg = {g_new};
        done = true;
        break;
      }
      if (armijo_fails || gtd_new >= 0) {
        bt = {t_prev, t};
        bf = {f_prev, f_new};
        bg = {g_prev, g_new};
        bgtd = {gtd_prev, gtd_new};
        break;
      }
      const double lo = t + 0.01 * (t - t_prev), hi = t * 10;
      const double next =
          detail::cubic_min(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, std::pair{lo, hi});
      t_prev = t;
      f_prev = f_new;
      g_prev = g_new;
      gtd_prev = gtd_new;
      t = next;
      std::tie(f_new, g_new) = at(t);
      ++evals;
      gtd_new = dot(g_new, d);
      ++ls_iter;
    }
    if (ls_iter == max_ls) {
      bt = {0, t};
      bf = {f, f_new};
      bg = {g, g_new};
    }

    // zoom: shrink the bracket until a point meets the conditions
    bool insufficient = false;
    size_t low = bf.front() <= bf.back() ? 0 : 1, high = 1 - low;
    while (!done && ls_iter < max_ls) {
      if (std::abs(bt[1] - bt[0]) * d_norm < tol) break;
      t = detail::cubic_min(bt[0], bf[0], bgtd[0], bt[1], bf[1], bgtd[1]);
      const double bmax = std::max(bt[0], bt[1]), bmin = std::min(bt[0], bt[1]);
      const double margin = 0.1 * (bmax - bmin);
      if (std::min(bmax - t, t - bmin) < margin) {
        if (insufficient || t >= bmax || t <= bmin) {
          t = std::abs(t - bmax) < std::abs(t - bmin) ? bmax - margin : bmin + margin;
          insufficient = false;
        } else {
          insufficient = true;
        }
      } else {
        insufficient = false;
      }
      std::tie(f_new, g_new) = at(t);
      ++evals;
      gtd_new = dot(g_new, d);
      ++ls_iter;
      if (f_new > f + c1 * t * gtd || f_new >= bf[low]) {
        bt[high] = t;
        bf[high] = f_new;
        bg[high] = g_new;
        bgtd[high] = gtd_new;
        low = bf[0] <= bf[1] ? 0 : 1;
        high = 1 - low;
      } else {
        if (std::abs(gtd_new) <= -c2 * gtd) {
          done = true;
        } else if (gtd_new * (bt[high] - bt[low]) >= 0) {
          bt[high] = bt[low];
          bf[high] = bf[low];
          bg[high] = bg[low];
          bgtd[high] = bgtd[low];
        }
        bt[low] = t;
        bf[low] = f_new;
        bg[low] = g_new;
        bgtd[low] = gtd_new;
      }
    }
    return {bf[low], bg[low], bt[low], evals};
  }

  LbfgsConfig c_;
  int64_t n_iter_ = 0;
  int64_t func_evals_ = 0;
  double t_ = 1;
  double h_diag_ = 1;
  double prev_loss_ = 0;
  std::optional<Vec> d_;
  std::optional<Vec> prev_g_;
  std::deque<Vec> ys_, ss_;  // gradient and parameter differences, oldest first
  std::deque<double> rho_;   // 1 / (y·s)
};

}  // namespace ember::optim
