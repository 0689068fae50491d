#include "ember/train/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "ember/core/error.h"

namespace ember::train {

namespace {

void check_scores(const char* metric, const MetricInput& in) {
  if (in.num_classes <= 0 ||
      static_cast<int64_t>(in.scores.size()) != in.batch_size * in.num_classes)
    throw ShapeError(std::string("[") + metric + "] scores hold " +
                     std::to_string(in.scores.size()) + " values, expected batch " +
                     std::to_string(in.batch_size) + " x classes " +
                     std::to_string(in.num_classes));
  const int64_t want = in.multi_label ? in.batch_size * in.num_classes : in.batch_size;
  if (static_cast<int64_t>(in.targets.size()) != want)
    throw ShapeError(std::string("[") + metric + "] " + std::to_string(in.targets.size()) +
                     " targets, expected " + std::to_string(want));
}

int64_t argmax_row(const float* row, int64_t c) { return std::max_element(row, row + c) - row; }

void check_class(const char* metric, int64_t t, int64_t c) {
  if (t < 0 || t >= c)
    throw IndexError(std::string("[") + metric + "] target " + std::to_string(t) +
                     " out of range for " + std::to_string(c) + " classes");
}

void grow(std::vector<int64_t>& v, int64_t c) {
  if (static_cast<int64_t>(v.size()) < c) v.resize(static_cast<size_t>(c), 0);
}

/// Binary AUC with ties counted one half (the Mann-Whitney statistic).
double binary_auc(std::vector<std::pair<float, bool>> s) {
  std::sort(s.begin(), s.end(), [](auto& a, auto& b) { return a.first < b.first; });
  double pos = 0, neg = 0, rank_sum = 0;
  for (size_t i = 0; i < s.size();) {
    size_t j = i;
    while (j < s.size() && s[j].first == s[i].first) ++j;
    const double avg_rank = (static_cast<double>(i) + static_cast<double>(j) + 1) / 2;  // 1-based
    for (size_t k = i; k < j; ++k)
      if (s[k].second)
        rank_sum += avg_rank, ++pos;
      else
        ++neg;
    i = j;
  }
  if (pos == 0 || neg == 0) return NAN;
  return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
}

}  // namespace

void LossMetric::update(const MetricInput& in) {
  last_ = in.loss;
  sum_ += in.loss * static_cast<double>(in.batch_size);
  n_ += in.batch_size;
}

void Accuracy::update(const MetricInput& in) {
  check_scores("accuracy", in);
  int64_t hit = 0, n = 0;
  for (int64_t i = 0; i < in.batch_size; ++i) {
    const int64_t t = in.targets[static_cast<size_t>(i)];
    if (t == ignore_) continue;
    check_class("accuracy", t, in.num_classes);
    const float* row = &in.scores[static_cast<size_t>(i * in.num_classes)];
    int64_t above = 0;
    for (int64_t c = 0; c < in.num_classes; ++c) above += row[c] > row[t];
    hit += above < k_;
    ++n;
  }
  hit_ += hit;
  n_ += n;
  last_ = n ? static_cast<double>(hit) / static_cast<double>(n) : 0;
}

ClassificationScore::ClassificationScore(Kind kind, Averaging avg, double beta, double threshold,
                                         bool scores_are_logits)
    : kind_(kind), avg_(avg), beta_(beta), threshold_(threshold), logits_(scores_are_logits) {}

std::string ClassificationScore::name() const {
  std::ostringstream os;
  if (kind_ == Kind::Precision)
    os << "precision";
  else if (kind_ == Kind::Recall)
    os << "recall";
  else
    os << 'f' << beta_;  // f1, f2, f0.5
  if (avg_ == Averaging::Micro) os << "_micro";
  return os.str();
}

void ClassificationScore::update(const MetricInput& in) {
  check_scores(name().c_str(), in);
  const int64_t c = in.num_classes;
  grow(tp_, c), grow(fp_, c), grow(fn_, c);
  if (in.multi_label) {
    const float cut = logits_ ? static_cast<float>(std::log(threshold_ / (1 - threshold_)))
                              : static_cast<float>(threshold_);
    for (size_t i = 0; i < in.scores.size(); ++i) {
      const bool p = in.scores[i] > cut, t = in.targets[i] != 0;
      const size_t k = i % static_cast<size_t>(c);
      tp_[k] += p && t, fp_[k] += p && !t, fn_[k] += !p && t;
    }
    return;
  }
  for (int64_t i = 0; i < in.batch_size; ++i) {
    const int64_t t = in.targets[static_cast<size_t>(i)];
    check_class(name().c_str(), t, c);
    const int64_t p = argmax_row(&in.scores[static_cast<size_t>(i * c)], c);
    if (p == t)
      ++tp_[static_cast<size_t>(t)];
    else
      ++fp_[static_cast<size_t>(p)], ++fn_[static_cast<size_t>(t)];
  }
}

double ClassificationScore::value() const {
  auto score = [&](double tp, double fp, double fn) {
    const double p = tp + fp > 0 ? tp / (tp + fp) : 0, r = tp + fn > 0 ? tp / (tp + fn) : 0;
    if (kind_ == Kind::Precision) return p;
    if (kind_ == Kind::Recall) return r;
    const double b2 = beta_ * beta_;
    return b2 * p + r > 0 ? (1 + b2) * p * r / (b2 * p + r) : 0;
  };
  if (avg_ == Averaging::Micro) {
    auto sum = [](const std::vector<int64_t>& v) {
      return static_cast<double>(std::accumulate(v.begin(), v.end(), int64_t{0}));
    };
    return score(sum(tp_), sum(fp_), sum(fn_));
  }
  double total = 0;
  int64_t classes = 0;
  for (size_t k = 0; k < tp_.size(); ++k) {
    if (tp_[k] + fp_[k] + fn_[k] == 0) continue;  // a class never seen nor predicted
    total += score(static_cast<double>(tp_[k]), static_cast<double>(fp_[k]),
                   static_cast<double>(fn_[k]));
    ++classes;
  }
  return classes ? total / static_cast<double>(classes) : 0;
}

std::unique_ptr<Metric> precision(Averaging avg) {
  return std::make_unique<ClassificationScore>(ClassificationScore::Kind::Precision, avg);
}
std::unique_ptr<Metric> recall(Averaging avg) {
  return std::make_unique<ClassificationScore>(ClassificationScore::Kind::Recall, avg);
}
std::unique_ptr<Metric> fbeta(double beta, Averaging avg) {
  return std::make_unique<ClassificationScore>(ClassificationScore::Kind::FBeta, avg, beta);
}

void Auroc::update(const MetricInput& in) {
  check_scores("auroc", in);
  if (c_ != 0 && c_ != in.num_classes)
    throw ShapeError("[auroc] class count changed from " + std::to_string(c_) + " to " +
                     std::to_string(in.num_classes));
  c_ = in.num_classes;
  scores_.insert(scores_.end(), in.scores.begin(), in.scores.end());
  targets_.insert(targets_.end(), in.targets.begin(), in.targets.end());
}

double Auroc::value() const {
  if (c_ == 0) return 0;
  const size_t n = scores_.size() / static_cast<size_t>(c_);
  auto one_vs_rest = [&](int64_t k) {
    std::vector<std::pair<float, bool>> s(n);
    for (size_t i = 0; i < n; ++i)
      s[i] = {scores_[i * static_cast<size_t>(c_) + static_cast<size_t>(k)],
              targets_[i] == (c_ == 1 ? 1 : k)};
    return binary_auc(std::move(s));
  };
  if (c_ <= 2) return one_vs_rest(c_ - 1);
  double total = 0;
  int64_t classes = 0;
  for (int64_t k = 0; k < c_; ++k) {
    double a = one_vs_rest(k);
    if (!std::isnan(a)) total += a, ++classes;
  }
  return classes ? total / static_cast<double>(classes) : NAN;
}

void ConfusionMatrix::update(const MetricInput& in) {
  check_scores("confusion", in);
  if (c_ == 0) {
    c_ = in.num_classes;
    counts_.assign(static_cast<size_t>(c_ * c_), 0);
  }
  if (in.num_classes != c_)
    throw ShapeError("[confusion] class count changed from " + std::to_string(c_) + " to " +
                     std::to_string(in.num_classes));
  for (int64_t i = 0; i < in.batch_size; ++i) {
    const int64_t t = in.targets[static_cast<size_t>(i)];
    check_class("confusion", t, c_);
    const int64_t p = argmax_row(&in.scores[static_cast<size_t>(i * c_)], c_);
    ++counts_[static_cast<size_t>(t * c_ + p)];
  }
}

double ConfusionMatrix::value() const {
  int64_t diag = 0, total = 0;
  for (int64_t t = 0; t < c_; ++t)
    for (int64_t p = 0; p < c_; ++p) {
      total += counts_[static_cast<size_t>(t * c_ + p)];
      if (t == p) diag += counts_[static_cast<size_t>(t * c_ + p)];
    }
  return total ? static_cast<double>(diag) / static_cast<double>(total) : 0;
}

void Perplexity::update(const MetricInput& in) {
  const int64_t tokens = in.tokens ? in.tokens : in.batch_size;
  sum_ += in.loss * static_cast<double>(tokens);
  n_ += tokens;
  last_ = std::exp(in.loss);
}
double Perplexity::value() const { return n_ ? std::exp(sum_ / static_cast<double>(n_)) : 0; }

void IterationSpeed::update(const MetricInput& in) {
  auto now = Clock::now();
  const double dt = std::chrono::duration<double>(now - prev_).count();
  last_ = dt > 0 ? static_cast<double>(in.batch_size) / dt : 0;
  prev_ = now;
  items_ += in.batch_size;
}
double IterationSpeed::value() const {
  const double dt = std::chrono::duration<double>(prev_ - start_).count();
  return dt > 0 ? static_cast<double>(items_) / dt : 0;
}
void IterationSpeed::reset() {
  start_ = prev_ = Clock::now();
  items_ = 0;
}

void CpuUse::update(const MetricInput&) {
  std::ifstream f("/proc/self/stat");
  std::string line;
  if (!std::getline(f, line)) return;
  // Fields after the command name (which may hold spaces) start after the last ')'.
  std::istringstream ss(line.substr(line.rfind(')') + 2));
  std::string tok;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && ss >> tok; ++i) {
    if (i == 14) utime = std::stod(tok);
    if (i == 15) stime = std::stod(tok);
  }
  const double cpu = (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (prev_cpu_ >= 0 && wall - prev_wall_ > 0.2) {
    value_ = 100.0 * (cpu - prev_cpu_) / (wall - prev_wall_);
    prev_cpu_ = cpu, prev_wall_ = wall;
  } else if (prev_cpu_ < 0) {
    prev_cpu_ = cpu, prev_wall_ = wall;
  }
}

void CpuMemory::update(const MetricInput&) {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "VmRSS:") {
      double kb = 0;
      f >> kb;
      value_ = kb / 1024.0;
      return;
    }
    std::getline(f, key);
  }
}

}  // namespace ember::train
