// What the dashboard shows (internal): every metric's series and current values, the run's
// progress, the log and the quit prompt. The Dashboard renderer fills it; the layout draws it.
#pragma once
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "ember/train/dashboard.h"
#include "ember/train/renderer.h"

namespace ember::train::dashboard_detail {

struct MetricState {
  IterSeries train;
  struct Point {
    int64_t x;  // training iterations seen when the epoch ended
    double value;
    int64_t epoch;
  };
  std::vector<Point> valid;
  double train_now = NAN, valid_now = NAN;
  double ema = 0;     // the per-iteration values' moving average, before bias correction
  int64_t ema_n = 0;  // finite values it has seen
  bool higher_is_better = true;
  explicit MetricState(size_t cap) : train(cap) {}
};

struct DashboardState {
  Progress progress;
  bool have_progress = false;
  std::vector<std::string> names;  // the metrics in order of appearance
  std::map<std::string, MetricState> metrics;
  size_t selected = 0;      // index into names: the plotted metric
  int64_t train_iters = 0;  // training iterations seen: the plot's x axis
  double train_epoch_s = NAN, valid_epoch_s = NAN;
  int64_t train_epoch_iters = 0;
  std::deque<std::string> logs;
  bool prompt = false;  // the quit prompt is open
  StopRequest request = StopRequest::None;
};

}  // namespace ember::train::dashboard_detail
