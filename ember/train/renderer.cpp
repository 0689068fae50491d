#include "ember/train/renderer.h"

#include "ember/train/dashboard.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace ember::train {

std::pair<double, double> History::best_last(const std::string& split, const std::string& metric,
                                             bool higher) const {
  auto s = epochs.find(split);
  if (s == epochs.end()) return {NAN, NAN};
  auto m = s->second.find(metric);
  if (m == s->second.end() || m->second.empty()) return {NAN, NAN};
  const auto& v = m->second;
  double best =
      higher ? *std::max_element(v.begin(), v.end()) : *std::min_element(v.begin(), v.end());
  return {best, v.back()};
}

void print_summary(std::ostream& os, const History& h) {
  os << "\n"
     << std::left << std::setw(8) << "split" << std::setw(16) << "metric" << std::right
     << std::setw(12) << "best" << std::setw(12) << "last"
     << "\n";
  for (const auto& [split, metrics] : h.epochs)
    for (const auto& [name, values] : metrics) {
      auto hb = h.higher_is_better.find(name);
      auto [best, last] = h.best_last(split, name, hb == h.higher_is_better.end() || hb->second);
      os << std::left << std::setw(8) << split << std::setw(16) << name << std::right
         << std::setw(12) << std::setprecision(5) << best << std::setw(12) << last << "\n";
    }
}

namespace {

std::string fmt_metrics(const std::vector<MetricValue>& ms, bool epoch) {
  std::ostringstream os;
  os << std::setprecision(4);
  for (const auto& m : ms) os << "  " << m.name << " " << (epoch ? m.epoch : m.last);
  return os.str();
}

std::string fmt_time(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  int t = static_cast<int>(s + 0.5);
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  return buf;
}

class PlainRenderer final : public Renderer {
 public:
  explicit PlainRenderer(std::ostream& os) : os_(os) {}
  void update(const Progress& p, const std::vector<MetricValue>& ms) override {
    // About four lines per epoch and split, or one every 30 seconds.
    const int64_t every = p.iterations > 0 ? std::max<int64_t>(1, p.iterations / 4) : 100;
    if (p.iteration % every != 0 && p.elapsed_s - last_s_ < 30) return;
    last_s_ = p.elapsed_s;
    const double eta = p.iterations > 0 && p.iteration > 0
                           ? p.elapsed_s * static_cast<double>(p.iterations - p.iteration) /
                                 static_cast<double>(p.iteration)
                           : NAN;
    os_ << "[" << p.split << "] epoch " << p.epoch << "/" << p.num_epochs << "  iter "
        << p.iteration << "/" << p.iterations << "  eta " << fmt_time(eta) << fmt_metrics(ms, false)
        << std::endl;
  }
  void epoch_end(const Progress& p, const std::vector<MetricValue>& ms) override {
    last_s_ = 0;
    os_ << "[" << p.split << "] epoch " << p.epoch << "/" << p.num_epochs << " done in "
        << fmt_time(p.elapsed_s) << fmt_metrics(ms, true) << std::endl;
  }
  void log(const std::string& line) override { os_ << line << std::endl; }
  void finish(const History& h) override { print_summary(os_, h); }

 private:
  std::ostream& os_;
  double last_s_ = 0;
};

class NullRenderer final : public Renderer {
 public:
  void update(const Progress&, const std::vector<MetricValue>&) override {}
  void epoch_end(const Progress&, const std::vector<MetricValue>&) override {}
  void log(const std::string&) override {}
  void finish(const History&) override {}
};

}  // namespace

std::unique_ptr<Renderer> plain_renderer(std::ostream& os) {
  return std::make_unique<PlainRenderer>(os);
}
std::unique_ptr<Renderer> null_renderer() { return std::make_unique<NullRenderer>(); }

std::unique_ptr<Renderer> make_renderer(RendererKind kind) {
  switch (kind) {
    case RendererKind::None:
      return null_renderer();
    case RendererKind::Plain:
      return plain_renderer(std::cout);
    case RendererKind::Dashboard:
      return dashboard_renderer();
    case RendererKind::Auto:
      // The dashboard where stdout is a terminal that can address the cursor.
      return terminal_supports_dashboard() ? dashboard_renderer() : plain_renderer(std::cout);
  }
  return plain_renderer(std::cout);
}

}  // namespace ember::train
