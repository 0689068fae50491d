// The Dashboard renderer: turns the Learner's events into DashboardState, reads the keys,
// limits the redraws and holds the terminal while it draws. The pieces live beside it:
//   terminal.{h,cpp}          ncurses and terminal setup, restore guards, the terminfo probe
//   dashboard_state.h         what the screen shows
//   dashboard_layout.{h,cpp}  the screen's panels
//   dashboard_plot.{h,cpp}    IterSeries, the braille Canvas and the metric plot
//   dashboard_paint.{h,cpp}   glyphs and clipped text output
#include "ember/train/dashboard.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include "ember/train/dashboard_layout.h"
#include "ember/train/dashboard_paint.h"
#include "ember/train/dashboard_state.h"
#include "ember/train/terminal.h"

namespace ember::train {

namespace {

using Clock = std::chrono::steady_clock;
using dashboard_detail::DashboardState;
using dashboard_detail::MetricState;
using dashboard_detail::Painter;
using dashboard_detail::Terminal;

class Dashboard final : public Renderer {
 public:
  explicit Dashboard(DashboardOptions o) : opt_(o) {}
  ~Dashboard() override { stop_screen(); }

  void update(const Progress& p, const std::vector<MetricValue>& ms) override {
    if (!ready()) return plain_->update(p, ms);
    state_.progress = p;
    state_.have_progress = true;
    if (p.split == "train") ++state_.train_iters;
    for (const auto& m : ms) {
      auto& st = metric(m);
      if (p.split == "train") {
        st.train.push(smooth(st, m.last));
        st.train_now = m.epoch;
      } else {
        st.valid_now = m.epoch;
      }
    }
    read_keys();
    maybe_draw(false);
  }

  void epoch_end(const Progress& p, const std::vector<MetricValue>& ms) override {
    if (!ready()) return plain_->epoch_end(p, ms);
    state_.progress = p;
    state_.have_progress = true;
    if (p.split == "train") {
      state_.train_epoch_s = p.elapsed_s;
      state_.train_epoch_iters = p.iteration;
    } else {
      state_.valid_epoch_s = p.elapsed_s;
    }
    for (const auto& m : ms) {
      auto& st = metric(m);
      if (p.split == "train") {
        st.train_now = m.epoch;
      } else {
        st.valid.push_back({state_.train_iters, m.epoch, p.epoch});
        st.valid_now = m.epoch;
      }
    }
    read_keys();
    maybe_draw(false);
  }

  void log(const std::string& line) override {
    state_.logs.push_back(line);
    while (state_.logs.size() > std::max<size_t>(opt_.log_lines, 1)) state_.logs.pop_front();
    if (finished_) {
      std::cout << line << std::endl;
      return;
    }
    if (!ready()) return plain_->log(line);
    maybe_draw(false);
  }

  StopRequest poll() override {
    if (mode_ == Mode::Screen) {
      lost_check();
      if (mode_ == Mode::Screen) read_keys();
    }
    return state_.request;
  }

  void finish(const History& h) override {
    if (mode_ == Mode::Plain) {
      plain_->finish(h);
      plain_.reset();
      mode_ = Mode::Idle;
    } else {
      stop_screen();
      // The screen is gone: what it logged is printed, then the summary.
      const auto& logs = state_.logs;
      const size_t show = std::min<size_t>(logs.size(), 20);
      if (logs.size() > show)
        std::cout << "(" << logs.size() - show << " earlier log lines not shown)\n";
      for (size_t i = logs.size() - show; i < logs.size(); ++i) std::cout << logs[i] << "\n";
      if (state_.request == StopRequest::Abort)
        std::cout << "training aborted from the dashboard\n";
      print_summary(std::cout, h);
      std::cout.flush();
    }
    state_.request = StopRequest::None;
    state_.prompt = false;
    finished_ = true;
  }

 private:
  enum class Mode { Idle, Screen, Plain };

  /// Starts the screen on first use; false when drawing goes to the plain fallback.
  bool ready() {
    finished_ = false;
    if (mode_ == Mode::Idle) start();
    lost_check();
    return mode_ == Mode::Screen;
  }

  void go_plain() {
    plain_ = plain_renderer(std::cout);
    mode_ = Mode::Plain;
  }

  void start() {
    if (!term_.open()) return go_plain();  // another dashboard has it, or no screen
    pen_ = Painter(term_.unicode(), term_.color());
    mode_ = Mode::Screen;
    last_draw_ = Clock::time_point{};
  }

  void stop_screen() {
    if (mode_ != Mode::Screen) return;
    term_.close();
    mode_ = Mode::Idle;
  }

  /// A signal whose handler returned (the program ignores or handles it) restored the
  /// terminal behind our back: continue with plain lines.
  void lost_check() {
    if (mode_ == Mode::Screen && term_.lost()) {
      stop_screen();
      go_plain();
    }
  }

  MetricState& metric(const MetricValue& m) {
    auto it = state_.metrics.find(m.name);
    if (it == state_.metrics.end()) {
      state_.names.push_back(m.name);
      it = state_.metrics.emplace(m.name, MetricState(opt_.series_points)).first;
    }
    it->second.higher_is_better = m.higher_is_better;
    return it->second;
  }

  /// The exponential moving average of a metric's per-iteration values, bias-corrected
  /// (the first values are not pulled towards 0); non-finite values pass through.
  double smooth(MetricState& st, double v) const {
    const double beta = std::clamp(opt_.smoothing, 0.0, 0.999);
    if (!std::isfinite(v) || beta == 0) return v;
    st.ema = beta * st.ema + (1 - beta) * v;
    ++st.ema_n;
    return st.ema / (1 - std::pow(beta, static_cast<double>(st.ema_n)));
  }

  void read_keys() {
    bool now = false;
    for (int ch = getch(); ch != ERR; ch = getch()) {
      if (ch == KEY_RESIZE) continue;  // the next draw uses the new size
      if (state_.prompt) {
        state_.prompt = false;
        now = true;
        if (ch == 's' || ch == 'S') {
          state_.request = StopRequest::StopAfterStep;
          log_line("stop requested: stopping after this step");
        } else if (ch == 'a' || ch == 'A') {
          state_.request = StopRequest::Abort;
          log_line("abort requested");
        }
        continue;
      }
      switch (ch) {
        case 'q':
        case 'Q':
          state_.prompt = true;
          now = true;
          break;
        case KEY_RIGHT:
        case '\t':
        case 'l':
          if (!state_.names.empty()) state_.selected = (state_.selected + 1) % state_.names.size();
          break;
        case KEY_LEFT:
        case KEY_BTAB:
        case 'h':
          if (!state_.names.empty())
            state_.selected = (state_.selected + state_.names.size() - 1) % state_.names.size();
          break;
        default:
          break;
      }
    }
    if (now) maybe_draw(true);  // the prompt opens and closes at once
  }

  void log_line(const std::string& line) {
    state_.logs.push_back(line);
    while (state_.logs.size() > std::max<size_t>(opt_.log_lines, 1)) state_.logs.pop_front();
  }

  void maybe_draw(bool force) {
    const auto t = Clock::now();
    const auto min_gap = std::chrono::duration<double>(1.0 / std::max(opt_.max_fps, 0.1));
    if (!force && last_draw_ != Clock::time_point{} && t - last_draw_ < min_gap) return;
    last_draw_ = t;
    dashboard_detail::draw_frame(pen_, state_, opt_);
  }

  DashboardOptions opt_;
  Mode mode_ = Mode::Idle;
  Terminal term_;
  Painter pen_;
  std::unique_ptr<Renderer> plain_;
  bool finished_ = false;
  DashboardState state_;
  Clock::time_point last_draw_{};
};

}  // namespace

std::unique_ptr<Renderer> dashboard_renderer(DashboardOptions options) {
  return std::make_unique<Dashboard>(options);
}

}  // namespace ember::train
