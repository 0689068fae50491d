#include "ember/train/dashboard_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

namespace ember::train::dashboard_detail {

// ---------------------------------------------------------------------------------------
// The series and the canvas (no terminal needed).

IterSeries::IterSeries(size_t capacity) : cap_(std::max<size_t>(2, capacity + capacity % 2)) {}

void IterSeries::push(double v) {
  if (sums_.empty() || in_last_ == stride_) {
    if (sums_.size() >= cap_) {
      // Merge neighbours: half as many buckets, each twice as long.
      const size_t half = (sums_.size() + 1) / 2;
      for (size_t i = 0; i < half; ++i) {
        const size_t a = 2 * i, b = 2 * i + 1;
        sums_[i] = sums_[a] + (b < sums_.size() ? sums_[b] : 0);
        ns_[i] = ns_[a] + (b < ns_.size() ? ns_[b] : 0);
      }
      sums_.resize(half);
      ns_.resize(half);
      stride_ *= 2;
      in_last_ = count_ - static_cast<int64_t>(half - 1) * stride_;
    }
    if (sums_.empty() || in_last_ == stride_) {
      sums_.push_back(0);
      ns_.push_back(0);
      in_last_ = 0;
    }
  }
  if (std::isfinite(v)) {
    sums_.back() += v;
    ++ns_.back();
  }
  ++in_last_;
  ++count_;
}

std::vector<double> IterSeries::resample(size_t n_cols, int64_t span) const {
  std::vector<double> sum(n_cols, 0), n(n_cols, 0);
  if (n_cols == 0) return {};
  span = std::max<int64_t>({span, count_, 1});
  for (size_t i = 0; i < sums_.size(); ++i) {
    if (ns_[i] == 0) continue;
    const int64_t start = static_cast<int64_t>(i) * stride_;
    const int64_t end = std::min(start + stride_, count_);
    const double centre = 0.5 * static_cast<double>(start + end);
    auto c = static_cast<size_t>(centre / static_cast<double>(span) * static_cast<double>(n_cols));
    c = std::min(c, n_cols - 1);
    sum[c] += sums_[i];
    n[c] += static_cast<double>(ns_[i]);
  }
  std::vector<double> out(n_cols);
  for (size_t c = 0; c < n_cols; ++c) out[c] = n[c] > 0 ? sum[c] / n[c] : NAN;
  return out;
}

Canvas::Canvas(int cols, int rows) : cols_(std::max(cols, 0)), rows_(std::max(rows, 0)) {
  const size_t cells = static_cast<size_t>(cols_) * static_cast<size_t>(rows_);
  bits_[0].assign(cells, 0);
  bits_[1].assign(cells, 0);
  marks_.assign(cells, 0);
}

void Canvas::dot(int x, int y, int layer) {
  if (x < 0 || y < 0 || x >= dot_cols() || y >= dot_rows() || layer < 0 || layer > 1) return;
  // U+2800 dot numbering: the left column is dots 1, 2, 3, 7 (bits 0, 1, 2, 6), the right
  // column dots 4, 5, 6, 8 (bits 3, 4, 5, 7), top to bottom.
  static constexpr uint8_t kBit[2][4] = {{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}};
  bits_[layer][static_cast<size_t>(y / 4) * static_cast<size_t>(cols_) +
               static_cast<size_t>(x / 2)] |= kBit[x % 2][y % 4];
}

void Canvas::line(int x0, int y0, int x1, int y1, int layer) {
  // Bresenham, all octants.
  const int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
  const int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  for (;;) {
    dot(x0, y0, layer);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

void Canvas::mark(int x, int y) {
  if (x < 0 || y < 0 || x >= dot_cols() || y >= dot_rows()) return;
  marks_[static_cast<size_t>(y / 4) * static_cast<size_t>(cols_) + static_cast<size_t>(x / 2)] = 1;
}

uint8_t Canvas::bits(int col, int row, int layer) const {
  return bits_[layer]
              [static_cast<size_t>(row) * static_cast<size_t>(cols_) + static_cast<size_t>(col)];
}

bool Canvas::marked(int col, int row) const {
  return marks_[static_cast<size_t>(row) * static_cast<size_t>(cols_) + static_cast<size_t>(col)] !=
         0;
}

std::string braille(uint8_t bits) {
  const unsigned cp = 0x2800u + bits;  // three UTF-8 bytes
  std::string s(3, '\0');
  s[0] = static_cast<char>(0xE0 | (cp >> 12));
  s[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  s[2] = static_cast<char>(0x80 | (cp & 0x3F));
  return s;
}

// ---------------------------------------------------------------------------------------
// The plot on the screen.

namespace {

/// An axis label: as many decimals as a step of `step` between labels needs.
std::string fmt_tick(double v, double step) {
  char buf[32];
  if (std::abs(v) < step * 1e-3) v = 0;  // no "-0.00"
  const double mag = std::max(std::abs(v), step);
  if (!(step > 0) || mag >= 1e6 || mag < 1e-4) {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  } else {
    const int decimals = std::clamp(1 - static_cast<int>(std::floor(std::log10(step))), 0, 8);
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  return buf;
}

}  // namespace

void draw_plot(const Painter& pen, int top, int bottom, int pw, const std::string& title,
               const MetricState* metric, int64_t iterations, bool smoothed) {
  const Glyphs& g = pen.glyphs();
  const int ch = bottom - top + 1 - 4;  // title, x axis, x labels, legend
  pen.put(top, 0, repeat(g.hline, 2), pw, A_DIM);
  pen.put(top, 2, title, pw - 2, pen.color(kTitle) | A_BOLD);
  const int after = 2 + static_cast<int>(title.size());
  pen.put(top, after, repeat(g.hline, pw - after), pw - after, A_DIM);
  if (metric == nullptr || ch < 2) return;
  const auto& st = *metric;

  // The x axis spans the training iterations so far; the y axis what is visible.
  const int64_t span = std::max<int64_t>(iterations, 1);
  double lo = INFINITY, hi = -INFINITY;
  auto see = [&](double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  };
  // Label width from a first guess of the range, then the canvas width from it.
  const int guess_cols = std::max(pw - 12, 4);
  for (double v : st.train.resample(static_cast<size_t>(guess_cols * 2), span)) see(v);
  for (const auto& pt : st.valid) see(pt.value);
  if (!(lo <= hi)) {
    pen.put(top + 1 + ch / 2, 2, "waiting for values", pw - 2, A_DIM);
    return;
  }
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
    const double pad = std::max(std::abs(hi) * 0.05, 1e-6);
    lo -= pad, hi += pad;
  } else {
    const double pad = 0.05 * (hi - lo);
    lo -= pad, hi += pad;
  }
  const int dr = ch * 4;
  auto value_at_row = [&](int r) {  // the value at the middle of text row r
    const double dot = r * 4 + 1.5;
    return hi - dot / (dr - 1) * (hi - lo);
  };
  std::vector<int> tick_rows = {0, ch / 4, ch / 2, (3 * ch) / 4, ch - 1};
  tick_rows.erase(std::unique(tick_rows.begin(), tick_rows.end()), tick_rows.end());
  std::vector<std::string> labels;
  size_t lw = 1;
  for (int r : tick_rows) {
    labels.push_back(fmt_tick(value_at_row(r), (hi - lo) / 4));
    lw = std::max(lw, labels.back().size());
  }
  const int axis_x = static_cast<int>(lw) + 1;  // labels, a space, the axis
  const int cw = pw - axis_x - 2;
  if (cw < 4) return;

  Canvas cv(cw, ch);
  auto y_dot = [&](double v) {
    return static_cast<int>(std::lround((hi - v) / (hi - lo) * (dr - 1)));
  };
  const int dc = cv.dot_cols();
  const auto train = st.train.resample(static_cast<size_t>(dc), span);
  std::optional<std::pair<int, int>> prev;
  for (int x = 0; x < dc; ++x) {
    const double v = train[static_cast<size_t>(x)];
    if (!std::isfinite(v)) continue;
    const int y = y_dot(v);
    if (prev)
      cv.line(prev->first, prev->second, x, y, 0);
    else
      cv.dot(x, y, 0);
    prev = {x, y};
  }
  auto x_dot = [&](int64_t it) {
    const auto x = static_cast<int>(static_cast<double>(it) / static_cast<double>(span) * dc);
    return std::clamp(x, 0, dc - 1);
  };
  prev.reset();
  for (const auto& pt : st.valid) {
    if (!std::isfinite(pt.value)) continue;
    const int x = x_dot(pt.x), y = y_dot(pt.value);
    if (prev) cv.line(prev->first, prev->second, x, y, 1);
    cv.mark(x, y);
    prev = {x, y};
  }

  // Rows: labels and axis, then the cells (a marker, validation, training).
  for (int r = 0; r < ch; ++r) {
    const int y = top + 1 + r;
    const auto t = std::find(tick_rows.begin(), tick_rows.end(), r);
    if (t != tick_rows.end()) {
      const auto& l = labels[static_cast<size_t>(t - tick_rows.begin())];
      pen.put(y, 0, pad_left(l, lw), static_cast<int>(lw), A_DIM);
      pen.put(y, axis_x, g.axis_tick, 1, A_DIM);
    } else {
      pen.put(y, axis_x, g.vline, 1, A_DIM);
    }
    for (int c = 0; c < cw; ++c) {
      const int x = axis_x + 1 + c;
      const uint8_t tb = cv.bits(c, r, 0), vb = cv.bits(c, r, 1);
      if (cv.marked(c, r))
        pen.put(y, x, g.marker, 1, pen.color(kValid) | A_BOLD);
      else if (vb)
        pen.put(y, x, pen.unicode() ? braille(vb | tb) : std::string("+"), 1, pen.color(kValid));
      else if (tb)
        pen.put(y, x, pen.unicode() ? braille(tb) : std::string("."), 1, pen.color(kTrain));
    }
  }
  // The x axis, with a mark at each epoch's end, and its labels.
  const int ax = top + 1 + ch;
  std::string axis = std::string(g.axis_corner) + repeat(g.hline, cw);
  pen.put(ax, axis_x, axis, cw + 1, A_DIM);
  for (const auto& pt : st.valid) pen.put(ax, axis_x + 1 + x_dot(pt.x) / 2, g.axis_mark, 1, A_DIM);
  const std::string right = std::to_string(span);
  const std::string mid = "iteration";
  pen.put(ax + 1, axis_x + 1, "0", 1, A_DIM);
  pen.put(ax + 1, axis_x + 1 + (cw - static_cast<int>(mid.size())) / 2, mid, cw, A_DIM);
  pen.put(ax + 1, axis_x + 1 + cw - static_cast<int>(right.size()), right,
          static_cast<int>(right.size()), A_DIM);
  // Legend.
  std::string tl = smoothed ? " train (iterations, smoothed)" : " train (iterations)";
  int lx = axis_x + 1;
  pen.put(ax + 2, lx, g.train_sample, 2, pen.color(kTrain));
  pen.put(ax + 2, lx + 2, tl, cw, A_NORMAL);
  lx += 2 + static_cast<int>(tl.size()) + 3;
  pen.put(ax + 2, lx, g.valid_sample, 3, pen.color(kValid) | A_BOLD);
  pen.put(ax + 2, lx + 3, " valid (epochs)", std::max(cw - (lx - axis_x - 1) - 3, 0));
}

}  // namespace ember::train::dashboard_detail
