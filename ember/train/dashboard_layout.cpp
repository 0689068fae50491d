#include "ember/train/dashboard_layout.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ember/train/dashboard_plot.h"

namespace ember::train::dashboard_detail {

namespace {

std::atomic<int64_t> g_frames{0};

std::string fmt_num(double v, int digits = 4) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string fmt_time(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<long long>(s + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
  return buf;
}

std::string fmt_rate(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.3g", v);
  return buf;
}

/// The status line: epoch, split, iteration, items/s, elapsed time, ETA of the run.
void draw_status(const Painter& pen, const DashboardState& state, int y, int w) {
  if (!state.have_progress) {
    pen.put(y, 0, " ember  waiting for the first step", w, A_BOLD);
    return;
  }
  const Progress& p = state.progress;
  const double rate = p.elapsed_s > 0 ? static_cast<double>(p.items) / p.elapsed_s : NAN;
  const double per_iter = p.iteration > 0 ? p.elapsed_s / static_cast<double>(p.iteration) : NAN;
  const double split_eta = p.iterations > 0 && p.iteration > 0
                               ? per_iter * static_cast<double>(p.iterations - p.iteration)
                               : NAN;
  // The run: this split's rest, this epoch's validation, then whole epochs, timed by the
  // current split (train) or the last train epoch, and the last validation.
  double train_s = state.train_epoch_s;
  if (p.split == "train" && p.iterations > 0 && p.iteration > 0)
    train_s = per_iter * static_cast<double>(p.iterations);
  const double valid_s = std::isfinite(state.valid_epoch_s) ? state.valid_epoch_s : 0;
  const double run_eta =
      split_eta + (p.split == "train" ? valid_s : 0) +
      static_cast<double>(std::max<int64_t>(p.num_epochs - p.epoch, 0)) * (train_s + valid_s);
  std::string s = " epoch " + std::to_string(p.epoch) + "/" + std::to_string(p.num_epochs) + "  " +
                  p.split + " " + std::to_string(p.iteration);
  if (p.iterations > 0) s.append("/").append(std::to_string(p.iterations));
  s += "  " + fmt_rate(rate) + " items/s  elapsed " + fmt_time(p.total_elapsed_s) + "  eta " +
       fmt_time(run_eta);
  if (state.request == StopRequest::StopAfterStep) s += "  stopping...";
  pen.put(y, 0, s, w, A_BOLD);
}

/// The progress bar of the current split.
void draw_progress(const Painter& pen, const DashboardState& state, int y, int w) {
  if (!state.have_progress) return;
  const Progress& p = state.progress;
  const std::string label = std::string(" ").append(pad_left(p.split, 5)).append(" ");
  if (p.iterations <= 0) {
    pen.put(y, 0, label + "iteration " + std::to_string(p.iteration) + " (length unknown)", w);
    return;
  }
  const double frac =
      std::clamp(static_cast<double>(p.iteration) / static_cast<double>(p.iterations), 0.0, 1.0);
  char pct[16];
  std::snprintf(pct, sizeof pct, " %3d%%", static_cast<int>(frac * 100 + 1e-9));
  const double split_eta = p.iteration > 0 ? p.elapsed_s / static_cast<double>(p.iteration) *
                                                 static_cast<double>(p.iterations - p.iteration)
                                           : NAN;
  const std::string tail = std::string(pct) + "  " + std::to_string(p.iteration) + "/" +
                           std::to_string(p.iterations) + "  " + p.split + " eta " +
                           fmt_time(split_eta) + " ";
  const int bar_w = w - static_cast<int>(label.size() + tail.size()) - 2;
  if (bar_w < 4) return pen.put(y, 0, label + tail, w);
  const double cells = frac * bar_w;
  const int full = static_cast<int>(cells);
  std::string bar = repeat(pen.glyphs().bar_full, full);
  int used = full;
  if (pen.unicode() && full < bar_w) {
    static const char* kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    const int e = static_cast<int>((cells - full) * 8);
    if (e > 0) bar += kEighths[e], ++used;
  }
  pen.put(y, 0, label + "[", w);
  pen.put(y, static_cast<int>(label.size()) + 1, bar, bar_w, pen.color(kBar) | A_BOLD);
  pen.put(y, static_cast<int>(label.size()) + 1 + used,
          repeat(pen.glyphs().bar_empty, bar_w - used), bar_w - used, A_DIM);
  pen.put(y, static_cast<int>(label.size()) + 1 + bar_w, "]" + tail, w);
}

/// The metric list (every metric's current values) and the best validation epoch.
void draw_sidebar(const Painter& pen, const DashboardState& state, int top, int bottom, int x,
                  int sw) {
  const int name_w = sw - 2 - 2 * 9;
  std::string head = "  metric";
  head.resize(static_cast<size_t>(std::max(name_w + 2, 8)), ' ');
  pen.put(top, x, head + pad_left("train", 9) + pad_left("valid", 9), sw, A_BOLD);
  int y = top + 1;
  for (size_t i = 0; i < state.names.size() && y <= bottom; ++i, ++y) {
    const auto& st = state.metrics.at(state.names[i]);
    std::string name = state.names[i];
    if (static_cast<int>(name.size()) > name_w) name.resize(static_cast<size_t>(name_w));
    name.append(static_cast<size_t>(name_w) - name.size(), ' ');
    const std::string row = std::string(i == state.selected ? pen.glyphs().selected : " ") + " " +
                            name + pad_left(fmt_num(st.train_now), 9) +
                            pad_left(fmt_num(st.valid_now), 9);
    pen.put(y, x, row, sw, i == state.selected ? A_REVERSE : A_NORMAL);
  }
  if (state.names.empty() || y + 1 > bottom) return;
  // The selected metric's best validation epoch.
  const auto& st = state.metrics.at(state.names[state.selected]);
  if (st.valid.empty()) return;
  size_t best = 0;
  for (size_t i = 1; i < st.valid.size(); ++i)
    if (st.higher_is_better ? st.valid[i].value > st.valid[best].value
                            : st.valid[i].value < st.valid[best].value)
      best = i;
  pen.put(y + 1, x, "  best valid " + state.names[state.selected], sw);
  if (y + 2 <= bottom)
    pen.put(y + 2, x,
            "  " + fmt_num(st.valid[best].value, 5) + " at epoch " +
                std::to_string(st.valid[best].epoch),
            sw);
}

/// The metrics panel: the plot and, on a wide screen, the metric list beside it.
void draw_metrics(const Painter& pen, const DashboardState& state, bool smoothed, int top,
                  int bottom, int w) {
  const int side_w = w >= 72 ? std::clamp(w / 3, 28, 44) : 0;
  const int plot_w = w - side_w - (side_w ? 1 : 0);
  if (side_w) draw_sidebar(pen, state, top, bottom, w - side_w, side_w);
  std::string title =
      " " + (state.names.empty() ? std::string("metrics") : state.names[state.selected]) + " ";
  if (state.names.size() > 1)
    title.append("(")
        .append(std::to_string(state.selected + 1))
        .append("/")
        .append(std::to_string(state.names.size()))
        .append(") ");
  const MetricState* metric =
      state.names.empty() ? nullptr : &state.metrics.at(state.names[state.selected]);
  draw_plot(pen, top, bottom, plot_w, title, metric, state.train_iters, smoothed);
}

/// The newest log lines below a rule.
void draw_logs(const Painter& pen, const DashboardState& state, int sep, int n, int w) {
  const std::string title = " log ";
  pen.put(sep, 0, repeat(pen.glyphs().hline, 2), w, A_DIM);
  pen.put(sep, 2, title, w, A_BOLD);
  pen.put(sep, 2 + static_cast<int>(title.size()),
          repeat(pen.glyphs().hline, w - 2 - static_cast<int>(title.size())), w, A_DIM);
  const size_t show = std::min(state.logs.size(), static_cast<size_t>(n));
  for (size_t i = 0; i < show; ++i)
    pen.put(sep + 1 + static_cast<int>(i), 1, state.logs[state.logs.size() - show + i], w - 1);
}

/// The quit prompt, a box in the middle of the screen.
void draw_prompt(const Painter& pen, int h, int w) {
  const Glyphs& g = pen.glyphs();
  const std::vector<std::string> body = {
      "  s   stop after this step",
      "      (writes a checkpoint, ends cleanly)",
      "  a   abort now",
      "  any other key: continue",
  };
  const int bw = 46, bh = static_cast<int>(body.size()) + 2;
  const int x = std::max((w - bw) / 2, 0), y = std::max((h - bh) / 2, 0);
  const int attr = pen.has_color() ? pen.color(kPrompt) : A_REVERSE;
  const std::string title = " Quit? ";
  pen.put(y, x,
          std::string(g.tl) + g.hline + title +
              repeat(g.hline, bw - 3 - static_cast<int>(title.size())) + g.tr,
          bw, attr | A_BOLD);
  for (size_t i = 0; i < body.size(); ++i) {
    std::string line = body[i];
    line.resize(static_cast<size_t>(bw - 2), ' ');
    pen.put(y + 1 + static_cast<int>(i), x, std::string(g.vline) + line + g.vline, bw, attr);
  }
  pen.put(y + bh - 1, x, std::string(g.bl) + repeat(g.hline, bw - 2) + g.br, bw, attr);
}

}  // namespace

int64_t frames_drawn() { return g_frames; }

void draw_frame(const Painter& pen, const DashboardState& state, const DashboardOptions& opt) {
  ++g_frames;
  werase(stdscr);
  const int h = LINES, w = COLS;
  if (w < 40 || h < 12) {
    pen.put(0, 0, "terminal too small for the dashboard", w);
    draw_status(pen, state, 1, w);
    wrefresh(stdscr);
    return;
  }
  draw_status(pen, state, 0, w);
  draw_progress(pen, state, 1, w);
  const int log_h = std::clamp(h / 5, 2, 10);
  const int log_sep = h - 2 - log_h;
  draw_metrics(pen, state, opt.smoothing > 0, 2, log_sep - 1, w);
  draw_logs(pen, state, log_sep, log_h, w);
  pen.put(h - 1, 0,
          pen.unicode() ? " q quit   ←/→ or Tab: switch metric"
                        : " q quit   <-/-> or Tab: switch metric",
          w, A_DIM);
  if (state.prompt) draw_prompt(pen, h, w);
  wrefresh(stdscr);
}

}  // namespace ember::train::dashboard_detail
