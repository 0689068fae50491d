// How a Learner shows progress. The Learner calls a Renderer at every iteration and at the
// end of each epoch; the renderer decides what to draw (the live terminal dashboard, plain
// lines when stdout is not a terminal, or nothing) and reports a quit request back.
//
//   auto r = train::make_renderer(train::RendererKind::Auto);   // dashboard on a terminal
//   learner.with_renderer(std::move(r));
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "ember/core/export.h"

namespace ember::train {

struct Progress {
  std::string split;  // "train" or "valid"
  int64_t epoch = 0;  // from 1
  int64_t num_epochs = 0;
  int64_t iteration = 0;       // batches done in this epoch and split
  int64_t iterations = 0;      // batches per epoch (0: unknown)
  int64_t items = 0;           // items done in this epoch and split
  double elapsed_s = 0;        // since the split's epoch started
  double total_elapsed_s = 0;  // since training started
  double data_wait_s = 0;      // of elapsed_s, waiting for the loader's next batch
};

struct MetricValue {
  std::string name;
  double last = 0;   // the last batch
  double epoch = 0;  // the epoch so far
  bool higher_is_better = true;
};

/// Per split and metric, the value at the end of each epoch.
struct EMBER_API History {
  std::map<std::string, std::map<std::string, std::vector<double>>> epochs;
  /// (best, last) of a metric in a split; best by the metric's direction.
  std::pair<double, double> best_last(const std::string& split, const std::string& metric,
                                      bool higher_is_better) const;
  std::map<std::string, bool> higher_is_better;
};

/// What the user asked for from the dashboard.
enum class StopRequest { None, StopAfterStep, Abort };

class EMBER_API Renderer {
 public:
  virtual ~Renderer() = default;
  virtual void update(const Progress& p, const std::vector<MetricValue>& metrics) = 0;
  virtual void epoch_end(const Progress& p, const std::vector<MetricValue>& metrics) = 0;
  /// A line of text (checkpoint written, early stop, ...).
  virtual void log(const std::string& line) = 0;
  /// Called once after training; prints the summary table where it makes sense.
  virtual void finish(const History& h) = 0;
  /// Polled after every step: a quit key turns into a request.
  virtual StopRequest poll() { return StopRequest::None; }
};

/// The summary table: best and last value per metric and split.
EMBER_API void print_summary(std::ostream& os, const History& h);

enum class RendererKind { Auto, Dashboard, Plain, None };

/// Plain progress lines (a few per epoch, and every epoch's metrics) on `os`.
EMBER_API std::unique_ptr<Renderer> plain_renderer(std::ostream& os);
/// A renderer that shows nothing.
EMBER_API std::unique_ptr<Renderer> null_renderer();
/// Auto: the dashboard when stdout is a terminal, plain lines otherwise.
EMBER_API std::unique_ptr<Renderer> make_renderer(RendererKind kind);

}  // namespace ember::train
