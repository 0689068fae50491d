// The live terminal dashboard: a Renderer that draws training progress in the terminal's
// alternate screen (ncurses) and turns the quit key into a stop request.
//
//   learner.with_renderer(train::dashboard_renderer());
//   // or train::make_renderer(RendererKind::Auto): the dashboard on a terminal
//
// What it shows, redrawn at most `max_fps` times a second (never once per iteration when
// iterations are fast):
//   - a status line (epoch, split, iteration, items/s, elapsed, ETA) and a progress bar;
//   - a plot of one metric: the training series per iteration (an exponential moving
//     average, averaged down to the plot's width) and the validation series per epoch, with
//     y-axis labels and a legend;
//     ←/→ or Tab switch metrics; beside it every metric's current values;
//   - the last log lines;
//   - `q` opens a prompt: `s` stops after this step (the Learner writes a checkpoint and
//     ends cleanly), `a` aborts, any other key continues.
//
// The screen is set up lazily on the first call, input is read without blocking, and the
// terminal is restored on finish(), when the renderer is destroyed (an exception unwinding
// through the Learner), on std::terminate, at exit, and on SIGINT, SIGTERM, SIGHUP and SIGQUIT
// (restored, then the signal is raised again with the program's own disposition).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/train/renderer.h"

namespace ember::train {

struct DashboardOptions {
  double max_fps = 10;          // redraws per second, at most
  size_t log_lines = 200;       // log lines kept (the screen shows the newest that fit)
  size_t series_points = 4096;  // per-iteration values kept per metric before merging
  double smoothing = 0.6;       // per-iteration EMA weight of the past (0: raw values)
};

/// True when stdout is a terminal and TERM names a terminfo entry that can address the
/// cursor: what RendererKind::Auto checks before picking the dashboard.
EMBER_API bool terminal_supports_dashboard();

/// The dashboard. If the terminal cannot be set up when it first draws, it falls back to
/// plain lines on stdout.
EMBER_API std::unique_ptr<Renderer> dashboard_renderer(DashboardOptions options = {});

namespace dashboard_detail {

/// A metric's per-iteration values in bounded memory: consecutive values are averaged into
/// buckets of `stride()` iterations; when `capacity` buckets are full, neighbouring buckets
/// merge and the stride doubles, so the series always spans the whole run.
class EMBER_API IterSeries {
 public:
  explicit IterSeries(size_t capacity = 4096);
  /// Non-finite values count as iterations but not in the means.
  void push(double v);
  int64_t count() const { return count_; }
  int64_t stride() const { return stride_; }
  size_t buckets() const { return sums_.size(); }
  /// Means over `n_cols` equal spans of the iterations [0, span) (span >= count()), each
  /// bucket counted in the column of its centre; NaN where a column has no value.
  std::vector<double> resample(size_t n_cols, int64_t span) const;

 private:
  size_t cap_;
  int64_t stride_ = 1, count_ = 0, in_last_ = 0;
  std::vector<double> sums_;
  std::vector<int64_t> ns_;
};

/// A character canvas with 2x4 dots per cell (braille) and two layers: layer 0 (training) and
/// layer 1 (validation), plus cell markers.
class EMBER_API Canvas {
 public:
  Canvas(int cols, int rows);
  int cols() const { return cols_; }
  int rows() const { return rows_; }
  int dot_cols() const { return cols_ * 2; }
  int dot_rows() const { return rows_ * 4; }
  /// A dot; (0, 0) is the top left. Outside the canvas: ignored.
  void dot(int x, int y, int layer);
  /// The dots of a straight line between two dots.
  void line(int x0, int y0, int x1, int y1, int layer);
  /// A marker on the cell holding dot (x, y).
  void mark(int x, int y);
  /// The braille bits of a cell's layer (0..255, bit order of U+2800).
  uint8_t bits(int col, int row, int layer) const;
  bool marked(int col, int row) const;

 private:
  int cols_, rows_;
  std::vector<uint8_t> bits_[2];
  std::vector<uint8_t> marks_;
};

/// The UTF-8 encoding of the braille character with these dot bits.
EMBER_API std::string braille(uint8_t bits);

/// Frames the dashboards of this process have drawn (to check the redraw limit).
EMBER_API int64_t frames_drawn();

}  // namespace dashboard_detail
}  // namespace ember::train
