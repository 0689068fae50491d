// A training run as one self-contained HTML page: a line chart per metric (every split's
// value per epoch), the best and last values, and optionally a confusion matrix as a heat
// map. Charts are inline SVG; no scripts, styles inline, nothing fetched.
//
//   train::write_report("runs/mnist/report.html", learner.history(),
//                       train::ConfusionCounts::from(confusion, {"T-shirt", "Trouser", /* ... */}),
//                       "Fashion-MNIST, small CNN");
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/train/metrics.h"
#include "ember/train/renderer.h"

namespace ember::train {

/// Confusion counts: counts[t * num_classes + p] items of class t predicted as p.
struct EMBER_API ConfusionCounts {
  int64_t num_classes = 0;
  std::vector<int64_t> counts;
  std::vector<std::string> class_names;  // empty: the class ids

  /// From a ConfusionMatrix metric (names may be empty).
  static ConfusionCounts from(const ConfusionMatrix& m, std::vector<std::string> names = {});
};

/// The chart geometry: an SVG of `width` x `height` whose plot area is the rectangle
/// [left, width - right] x [top, height - bottom]; values map linearly onto it.
struct ReportChartLayout {
  static constexpr double width = 560, height = 300;
  static constexpr double left = 64, right = 16, top = 16, bottom = 44;
};

/// The page as a string. `status`, when not empty, is a line under the title that says how
/// the run ended (e.g. "Aborted at epoch 2 of 3, step 14: ..."). Throws ValueError if the
/// confusion counts do not fit num_classes (or the class names their number).
EMBER_API std::string report_html(const History& h,
                                  const std::optional<ConfusionCounts>& confusion = {},
                                  const std::string& title = "Training report",
                                  const std::string& status = {});

/// Writes report_html(...) to `path` atomically (temporary file, fsync, rename), creating
/// the folder if needed.
EMBER_API void write_report(const std::filesystem::path& path, const History& h,
                            const std::optional<ConfusionCounts>& confusion = {},
                            const std::string& title = "Training report",
                            const std::string& status = {});

}  // namespace ember::train
