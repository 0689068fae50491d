#include "ember/train/dashboard.h"

#include <errno.h>
#include <langinfo.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <clocale>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <iostream>
#include <map>
#include <optional>
#include <string_view>

// curses.h without its function-like macros (erase(), clear(), move() would clash with
// std::vector and friends); term.h for the terminfo queries. term.h defines every capability
// name as a macro: the short ones that could collide with ordinary names are undefined.
#define NCURSES_NOMACROS
#include <curses.h>
#include <term.h>
#undef lines
#undef columns
#undef tab
#undef bell
#undef newline
#undef buttons
#undef hangup

namespace ember::train {

// ---------------------------------------------------------------------------------------
// Pieces that need no terminal.

namespace dashboard_detail {

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

namespace {
std::atomic<int64_t> g_frames{0};
}  // namespace

int64_t frames_drawn() { return g_frames; }

}  // namespace dashboard_detail

// ---------------------------------------------------------------------------------------
// Restoring the terminal from anywhere: signal handlers, std::terminate, exit.

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_owned{false};    // a dashboard holds the terminal
volatile sig_atomic_t g_active = 0;  // the screen is in curses mode
char g_restore[512];                 // what leaves it: sgr0, cnorm, rmkx, rmcup
size_t g_restore_len = 0;
bool g_have_tty = false;  // g_tty holds stdout's modes from before
struct termios g_tty;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kNumSignals = static_cast<int>(sizeof kSignals / sizeof kSignals[0]);
struct sigaction g_prev_action[kNumSignals];
std::terminate_handler g_prev_terminate = nullptr;

/// Leaves the alternate screen and puts the terminal modes back. Async-signal-safe (write
/// and tcsetattr only).
void restore_terminal() noexcept {
  if (!g_active) return;
  g_active = 0;
  size_t off = 0;
  while (off < g_restore_len) {
    const ssize_t n = ::write(STDOUT_FILENO, g_restore + off, g_restore_len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  if (g_have_tty) ::tcsetattr(STDOUT_FILENO, TCSADRAIN, &g_tty);
}

void on_signal(int sig) {
  const int saved_errno = errno;
  restore_terminal();
  // Give the signal the program's own disposition back and raise it again: it is delivered
  // when this handler returns (default: the process ends with that signal).
  for (int i = 0; i < kNumSignals; ++i)
    if (kSignals[i] == sig) ::sigaction(sig, &g_prev_action[i], nullptr);
  ::raise(sig);
  errno = saved_errno;
}

[[noreturn]] void on_terminate() {
  restore_terminal();
  if (g_prev_terminate && g_prev_terminate != on_terminate) g_prev_terminate();
  std::abort();
}

void append_cap(const char* name) {
  const char* s = tigetstr(name);
  if (s == nullptr || s == reinterpret_cast<char*>(-1)) return;
  const size_t n = std::strlen(s);
  if (g_restore_len + n >= sizeof g_restore) return;
  std::memcpy(g_restore + g_restore_len, s, n);
  g_restore_len += n;
}

/// Installs the handlers that restore the terminal (once the screen is up).
void install_guards() {
  g_restore_len = 0;
  append_cap("sgr0");
  append_cap("cnorm");
  append_cap("rmkx");
  append_cap("rmcup");
  g_active = 1;
  for (int i = 0; i < kNumSignals; ++i) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : kSignals) sigaddset(&sa.sa_mask, s);
    ::sigaction(kSignals[i], &sa, nullptr);
  }
  g_prev_terminate = std::set_terminate(on_terminate);
  static const bool at_exit = [] { return std::atexit([] { restore_terminal(); }) == 0; }();
  (void)at_exit;
}

/// Gives the signals and std::terminate their previous handlers.
void remove_guards() {
  for (int i = 0; i < kNumSignals; ++i) ::sigaction(kSignals[i], &g_prev_action[i], nullptr);
  std::set_terminate(g_prev_terminate);
  g_prev_terminate = nullptr;
}

// ---------------------------------------------------------------------------------------
// Formatting.

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

std::string fmt_rate(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.3g", v);
  return buf;
}

std::string pad_left(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

/// Glyphs for a UTF-8 terminal, or plain ASCII.
struct Glyphs {
  const char *hline, *vline, *axis_tick, *axis_corner, *axis_mark, *bar_full, *bar_empty, *marker,
      *selected, *train_sample, *valid_sample, *tl, *tr, *bl, *br;
};
constexpr Glyphs kUnicode{"─", "│",  "┤",   "└", "┴", "█", "░", "●",
                          "▸", "⣀⣀", "─●─", "┌", "┐", "└", "┘"};
constexpr Glyphs kAscii{"-", "|",  "+",   "+", "+", "#", "-", "o",
                        ">", "..", "-o-", "+", "+", "+", "+"};

enum Pair : short { kTrain = 1, kValid = 2, kBar = 3, kTitle = 4, kPrompt = 5 };

struct MetricState {
  dashboard_detail::IterSeries train;
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

// ---------------------------------------------------------------------------------------

class Dashboard final : public Renderer {
 public:
  explicit Dashboard(DashboardOptions o) : opt_(o) {}
  ~Dashboard() override { stop_screen(); }

  void update(const Progress& p, const std::vector<MetricValue>& ms) override {
    if (!ready()) return plain_->update(p, ms);
    progress_ = p;
    have_progress_ = true;
    if (p.split == "train") ++train_iters_;
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
    progress_ = p;
    have_progress_ = true;
    if (p.split == "train") {
      train_epoch_s_ = p.elapsed_s;
      train_epoch_iters_ = p.iteration;
    } else {
      valid_epoch_s_ = p.elapsed_s;
    }
    for (const auto& m : ms) {
      auto& st = metric(m);
      if (p.split == "train") {
        st.train_now = m.epoch;
      } else {
        st.valid.push_back({train_iters_, m.epoch, p.epoch});
        st.valid_now = m.epoch;
      }
    }
    read_keys();
    maybe_draw(false);
  }

  void log(const std::string& line) override {
    logs_.push_back(line);
    while (logs_.size() > std::max<size_t>(opt_.log_lines, 1)) logs_.pop_front();
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
    return request_;
  }

  void finish(const History& h) override {
    if (mode_ == Mode::Plain) {
      plain_->finish(h);
      plain_.reset();
      mode_ = Mode::Idle;
    } else {
      stop_screen();
      // The screen is gone: what it logged is printed, then the summary.
      const size_t show = std::min<size_t>(logs_.size(), 20);
      if (logs_.size() > show)
        std::cout << "(" << logs_.size() - show << " earlier log lines not shown)\n";
      for (size_t i = logs_.size() - show; i < logs_.size(); ++i) std::cout << logs_[i] << "\n";
      if (request_ == StopRequest::Abort) std::cout << "training aborted from the dashboard\n";
      print_summary(std::cout, h);
      std::cout.flush();
    }
    request_ = StopRequest::None;
    prompt_ = false;
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
    if (g_owned.exchange(true)) return go_plain();  // another dashboard has the terminal
    std::cout.flush();
    std::fflush(stdout);
    // ncursesw draws UTF-8 only under a UTF-8 character locale; take the environment's if
    // the program left the default "C" one (only LC_CTYPE: number formatting is untouched).
    const char* ct = std::setlocale(LC_CTYPE, nullptr);
    saved_ctype_ = ct ? ct : "C";
    if (saved_ctype_ == "C" || saved_ctype_ == "POSIX") std::setlocale(LC_CTYPE, "");
    const char* cs = nl_langinfo(CODESET);
    unicode_ = cs && std::strcmp(cs, "UTF-8") == 0;
    glyphs_ = unicode_ ? &kUnicode : &kAscii;

    g_have_tty = ::tcgetattr(STDOUT_FILENO, &g_tty) == 0;
    for (int i = 0; i < kNumSignals; ++i) ::sigaction(kSignals[i], nullptr, &g_prev_action[i]);
    screen_ = newterm(nullptr, stdout, stdin);
    if (screen_ == nullptr) {
      std::setlocale(LC_CTYPE, saved_ctype_.c_str());
      g_owned = false;
      return go_plain();
    }
    set_term(screen_);
    cbreak();  // keys without Enter; Ctrl-C still raises SIGINT
    noecho();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);  // getch() never waits
    leaveok(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    color_ = has_colors();
    if (color_) {
      start_color();
      // The terminal's own background where it has one (-1), black otherwise.
      const short bg = use_default_colors() == OK ? -1 : COLOR_BLACK;
      init_pair(kTrain, COLOR_CYAN, bg);
      init_pair(kValid, COLOR_YELLOW, bg);
      init_pair(kBar, COLOR_GREEN, bg);
      init_pair(kTitle, COLOR_MAGENTA, bg);
      init_pair(kPrompt, COLOR_BLACK, COLOR_YELLOW);
    }
    install_guards();
    mode_ = Mode::Screen;
    last_draw_ = Clock::time_point{};
  }

  void stop_screen() {
    if (mode_ != Mode::Screen) return;
    // When a signal already restored the terminal, endwin() would leave the alternate
    // screen a second time (on some terminals that moves the cursor): only free the screen.
    if (g_active) endwin();
    g_active = 0;
    delscreen(screen_);
    screen_ = nullptr;
    remove_guards();
    std::setlocale(LC_CTYPE, saved_ctype_.c_str());
    g_owned = false;
    mode_ = Mode::Idle;
  }

  /// A signal whose handler returned (the program ignores or handles it) restored the
  /// terminal behind our back: continue with plain lines.
  void lost_check() {
    if (mode_ == Mode::Screen && !g_active) {
      stop_screen();
      go_plain();
    }
  }

  MetricState& metric(const MetricValue& m) {
    auto it = metrics_.find(m.name);
    if (it == metrics_.end()) {
      names_.push_back(m.name);
      it = metrics_.emplace(m.name, MetricState(opt_.series_points)).first;
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
      if (prompt_) {
        prompt_ = false;
        now = true;
        if (ch == 's' || ch == 'S') {
          request_ = StopRequest::StopAfterStep;
          log_line("stop requested: stopping after this step");
        } else if (ch == 'a' || ch == 'A') {
          request_ = StopRequest::Abort;
          log_line("abort requested");
        }
        continue;
      }
      switch (ch) {
        case 'q':
        case 'Q':
          prompt_ = true;
          now = true;
          break;
        case KEY_RIGHT:
        case '\t':
        case 'l':
          if (!names_.empty()) selected_ = (selected_ + 1) % names_.size();
          break;
        case KEY_LEFT:
        case KEY_BTAB:
        case 'h':
          if (!names_.empty()) selected_ = (selected_ + names_.size() - 1) % names_.size();
          break;
        default:
          break;
      }
    }
    if (now) maybe_draw(true);  // the prompt opens and closes at once
  }

  void log_line(const std::string& line) {
    logs_.push_back(line);
    while (logs_.size() > std::max<size_t>(opt_.log_lines, 1)) logs_.pop_front();
  }

  void maybe_draw(bool force) {
    const auto t = Clock::now();
    const auto min_gap = std::chrono::duration<double>(1.0 / std::max(opt_.max_fps, 0.1));
    if (!force && last_draw_ != Clock::time_point{} && t - last_draw_ < min_gap) return;
    last_draw_ = t;
    draw();
  }

  // -- drawing ----------------------------------------------------------------------------

  /// Writes `s` at (y, x), at most `max_cols` cells, clipped to the screen.
  void put(int y, int x, std::string_view s, int max_cols, int attr = A_NORMAL) {
    const int h = LINES, w = COLS;
    if (y < 0 || y >= h || x < 0 || x >= w) return;
    max_cols = std::min(max_cols, w - x - (y == h - 1 ? 1 : 0));  // never the last cell
    if (max_cols <= 0) return;
    std::string out;
    int n = 0;
    for (size_t i = 0; i < s.size() && n < max_cols;) {
      const auto c = static_cast<unsigned char>(s[i]);
      size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      len = std::min(len, s.size() - i);
      if (c < 0x20 || c == 0x7F)
        out += ' ';
      else if (c >= 0x80 && c < 0xC0)
        out += '?';  // a stray continuation byte
      else if (len == 1 || unicode_)
        out.append(s.substr(i, len));
      else
        out += '?';
      i += len;
      ++n;
    }
    wattron(stdscr, attr);
    mvaddstr(y, x, out.c_str());
    wattroff(stdscr, attr);
  }

  int color(Pair p) const { return color_ ? static_cast<int>(COLOR_PAIR(p)) : A_NORMAL; }

  std::string repeat(const char* g, int n) const {
    std::string s;
    for (int i = 0; i < n; ++i) s += g;
    return s;
  }

  void draw() {
    ++dashboard_detail::g_frames;
    werase(stdscr);
    const int h = LINES, w = COLS;
    if (w < 40 || h < 12) {
      put(0, 0, "terminal too small for the dashboard", w);
      draw_status(1, w);
      wrefresh(stdscr);
      return;
    }
    draw_status(0, w);
    draw_progress(1, w);
    const int log_h = std::clamp(h / 5, 2, 10);
    const int log_sep = h - 2 - log_h;
    draw_metrics(2, log_sep - 1, w);
    draw_logs(log_sep, log_h, w);
    put(h - 1, 0,
        unicode_ ? " q quit   ←/→ or Tab: switch metric" : " q quit   <-/-> or Tab: switch metric",
        w, A_DIM);
    if (prompt_) draw_prompt(h, w);
    wrefresh(stdscr);
  }

  void draw_status(int y, int w) {
    if (!have_progress_) {
      put(y, 0, " ember  waiting for the first step", w, A_BOLD);
      return;
    }
    const Progress& p = progress_;
    const double rate = p.elapsed_s > 0 ? static_cast<double>(p.items) / p.elapsed_s : NAN;
    const double per_iter = p.iteration > 0 ? p.elapsed_s / static_cast<double>(p.iteration) : NAN;
    const double split_eta = p.iterations > 0 && p.iteration > 0
                                 ? per_iter * static_cast<double>(p.iterations - p.iteration)
                                 : NAN;
    // The run: this split's rest, this epoch's validation, then whole epochs, timed by the
    // current split (train) or the last train epoch, and the last validation.
    double train_s = train_epoch_s_;
    if (p.split == "train" && p.iterations > 0 && p.iteration > 0)
      train_s = per_iter * static_cast<double>(p.iterations);
    const double valid_s = std::isfinite(valid_epoch_s_) ? valid_epoch_s_ : 0;
    const double run_eta =
        split_eta + (p.split == "train" ? valid_s : 0) +
        static_cast<double>(std::max<int64_t>(p.num_epochs - p.epoch, 0)) * (train_s + valid_s);
    std::string s = " epoch " + std::to_string(p.epoch) + "/" + std::to_string(p.num_epochs) +
                    "  " + p.split + " " + std::to_string(p.iteration);
    if (p.iterations > 0) s += "/" + std::to_string(p.iterations);
    s += "  " + fmt_rate(rate) + " items/s  elapsed " + fmt_time(p.total_elapsed_s) + "  eta " +
         fmt_time(run_eta);
    if (request_ == StopRequest::StopAfterStep) s += "  stopping...";
    put(y, 0, s, w, A_BOLD);
  }

  void draw_progress(int y, int w) {
    if (!have_progress_) return;
    const Progress& p = progress_;
    const std::string label = " " + pad_left(p.split, 5) + " ";
    if (p.iterations <= 0) {
      put(y, 0, label + "iteration " + std::to_string(p.iteration) + " (length unknown)", w);
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
    if (bar_w < 4) return put(y, 0, label + tail, w);
    const double cells = frac * bar_w;
    const int full = static_cast<int>(cells);
    std::string bar = repeat(glyphs_->bar_full, full);
    int used = full;
    if (unicode_ && full < bar_w) {
      static const char* kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
      const int e = static_cast<int>((cells - full) * 8);
      if (e > 0) bar += kEighths[e], ++used;
    }
    put(y, 0, label + "[", w);
    put(y, static_cast<int>(label.size()) + 1, bar, bar_w, color(kBar) | A_BOLD);
    put(y, static_cast<int>(label.size()) + 1 + used, repeat(glyphs_->bar_empty, bar_w - used),
        bar_w - used, A_DIM);
    put(y, static_cast<int>(label.size()) + 1 + bar_w, "]" + tail, w);
  }

  void draw_metrics(int top, int bottom, int w) {
    const int side_w = w >= 72 ? std::clamp(w / 3, 28, 44) : 0;
    const int plot_w = w - side_w - (side_w ? 1 : 0);
    if (side_w) draw_sidebar(top, bottom, w - side_w, side_w);
    draw_plot(top, bottom, plot_w);
  }

  void draw_sidebar(int top, int bottom, int x, int sw) {
    const int name_w = sw - 2 - 2 * 9;
    std::string head = "  metric";
    head.resize(static_cast<size_t>(std::max(name_w + 2, 8)), ' ');
    put(top, x, head + pad_left("train", 9) + pad_left("valid", 9), sw, A_BOLD);
    int y = top + 1;
    for (size_t i = 0; i < names_.size() && y <= bottom; ++i, ++y) {
      const auto& st = metrics_.at(names_[i]);
      std::string name = names_[i];
      if (static_cast<int>(name.size()) > name_w) name.resize(static_cast<size_t>(name_w));
      name.append(static_cast<size_t>(name_w) - name.size(), ' ');
      const std::string row = std::string(i == selected_ ? glyphs_->selected : " ") + " " + name +
                              pad_left(fmt_num(st.train_now), 9) +
                              pad_left(fmt_num(st.valid_now), 9);
      put(y, x, row, sw, i == selected_ ? A_REVERSE : A_NORMAL);
    }
    if (names_.empty() || y + 1 > bottom) return;
    // The selected metric's best validation epoch.
    const auto& st = metrics_.at(names_[selected_]);
    if (st.valid.empty()) return;
    size_t best = 0;
    for (size_t i = 1; i < st.valid.size(); ++i)
      if (st.higher_is_better ? st.valid[i].value > st.valid[best].value
                              : st.valid[i].value < st.valid[best].value)
        best = i;
    put(y + 1, x, "  best valid " + names_[selected_], sw);
    if (y + 2 <= bottom)
      put(y + 2, x,
          "  " + fmt_num(st.valid[best].value, 5) + " at epoch " +
              std::to_string(st.valid[best].epoch),
          sw);
  }

  void draw_plot(int top, int bottom, int pw) {
    const Glyphs& g = *glyphs_;
    const int ch = bottom - top + 1 - 4;  // title, x axis, x labels, legend
    std::string title = " " + (names_.empty() ? std::string("metrics") : names_[selected_]) + " ";
    if (names_.size() > 1)
      title += "(" + std::to_string(selected_ + 1) + "/" + std::to_string(names_.size()) + ") ";
    put(top, 0, repeat(g.hline, 2), pw, A_DIM);
    put(top, 2, title, pw - 2, color(kTitle) | A_BOLD);
    const int after = 2 + static_cast<int>(title.size());
    put(top, after, repeat(g.hline, pw - after), pw - after, A_DIM);
    if (names_.empty() || ch < 2) return;
    const auto& st = metrics_.at(names_[selected_]);

    // The x axis spans the training iterations so far; the y axis what is visible.
    const int64_t span = std::max<int64_t>(train_iters_, 1);
    double lo = INFINITY, hi = -INFINITY;
    auto see = [&](double v) {
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    };
    // Label width from a first guess of the range, then the canvas width from it.
    const int guess_cols = std::max(pw - 12, 4);
    for (double v : st.train.resample(static_cast<size_t>(guess_cols * 2), span)) see(v);
    for (const auto& pt : st.valid) see(pt.value);
    if (!(lo <= hi)) {
      put(top + 1 + ch / 2, 2, "waiting for values", pw - 2, A_DIM);
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

    dashboard_detail::Canvas cv(cw, ch);
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
        put(y, 0, pad_left(l, lw), static_cast<int>(lw), A_DIM);
        put(y, axis_x, g.axis_tick, 1, A_DIM);
      } else {
        put(y, axis_x, g.vline, 1, A_DIM);
      }
      for (int c = 0; c < cw; ++c) {
        const int x = axis_x + 1 + c;
        const uint8_t tb = cv.bits(c, r, 0), vb = cv.bits(c, r, 1);
        if (cv.marked(c, r))
          put(y, x, g.marker, 1, color(kValid) | A_BOLD);
        else if (vb)
          put(y, x, unicode_ ? dashboard_detail::braille(vb | tb) : std::string("+"), 1,
              color(kValid));
        else if (tb)
          put(y, x, unicode_ ? dashboard_detail::braille(tb) : std::string("."), 1, color(kTrain));
      }
    }
    // The x axis, with a mark at each epoch's end, and its labels.
    const int ax = top + 1 + ch;
    std::string axis = std::string(g.axis_corner) + repeat(g.hline, cw);
    put(ax, axis_x, axis, cw + 1, A_DIM);
    for (const auto& pt : st.valid) put(ax, axis_x + 1 + x_dot(pt.x) / 2, g.axis_mark, 1, A_DIM);
    const std::string right = std::to_string(span);
    const std::string mid = "iteration";
    put(ax + 1, axis_x + 1, "0", 1, A_DIM);
    put(ax + 1, axis_x + 1 + (cw - static_cast<int>(mid.size())) / 2, mid, cw, A_DIM);
    put(ax + 1, axis_x + 1 + cw - static_cast<int>(right.size()), right,
        static_cast<int>(right.size()), A_DIM);
    // Legend.
    std::string tl = opt_.smoothing > 0 ? " train (iterations, smoothed)" : " train (iterations)";
    int lx = axis_x + 1;
    put(ax + 2, lx, g.train_sample, 2, color(kTrain));
    put(ax + 2, lx + 2, tl, cw, A_NORMAL);
    lx += 2 + static_cast<int>(tl.size()) + 3;
    put(ax + 2, lx, g.valid_sample, 3, color(kValid) | A_BOLD);
    put(ax + 2, lx + 3, " valid (epochs)", std::max(cw - (lx - axis_x - 1) - 3, 0));
  }

  void draw_logs(int sep, int n, int w) {
    const std::string title = " log ";
    put(sep, 0, repeat(glyphs_->hline, 2), w, A_DIM);
    put(sep, 2, title, w, A_BOLD);
    put(sep, 2 + static_cast<int>(title.size()),
        repeat(glyphs_->hline, w - 2 - static_cast<int>(title.size())), w, A_DIM);
    const size_t show = std::min(logs_.size(), static_cast<size_t>(n));
    for (size_t i = 0; i < show; ++i)
      put(sep + 1 + static_cast<int>(i), 1, logs_[logs_.size() - show + i], w - 1);
  }

  void draw_prompt(int h, int w) {
    const Glyphs& g = *glyphs_;
    const std::vector<std::string> body = {
        "  s   stop after this step",
        "      (writes a checkpoint, ends cleanly)",
        "  a   abort now",
        "  any other key: continue",
    };
    const int bw = 46, bh = static_cast<int>(body.size()) + 2;
    const int x = std::max((w - bw) / 2, 0), y = std::max((h - bh) / 2, 0);
    const int attr = color_ ? color(kPrompt) : A_REVERSE;
    const std::string title = " Quit? ";
    put(y, x,
        std::string(g.tl) + g.hline + title +
            repeat(g.hline, bw - 3 - static_cast<int>(title.size())) + g.tr,
        bw, attr | A_BOLD);
    for (size_t i = 0; i < body.size(); ++i) {
      std::string line = body[i];
      line.resize(static_cast<size_t>(bw - 2), ' ');
      put(y + 1 + static_cast<int>(i), x, std::string(g.vline) + line + g.vline, bw, attr);
    }
    put(y + bh - 1, x, std::string(g.bl) + repeat(g.hline, bw - 2) + g.br, bw, attr);
  }

  DashboardOptions opt_;
  Mode mode_ = Mode::Idle;
  SCREEN* screen_ = nullptr;
  std::unique_ptr<Renderer> plain_;
  std::string saved_ctype_ = "C";
  bool unicode_ = false, color_ = false, finished_ = false;
  const Glyphs* glyphs_ = &kAscii;

  Progress progress_;
  bool have_progress_ = false;
  std::vector<std::string> names_;
  std::map<std::string, MetricState> metrics_;
  size_t selected_ = 0;
  int64_t train_iters_ = 0;  // training iterations seen: the plot's x axis
  double train_epoch_s_ = NAN, valid_epoch_s_ = NAN;
  int64_t train_epoch_iters_ = 0;
  std::deque<std::string> logs_;
  bool prompt_ = false;
  StopRequest request_ = StopRequest::None;
  Clock::time_point last_draw_{};
};

}  // namespace

bool terminal_supports_dashboard() {
  if (!::isatty(STDOUT_FILENO)) return false;
  const char* term = std::getenv("TERM");
  if (term == nullptr || *term == '\0' || std::strcmp(term, "dumb") == 0) return false;
  if (g_owned) return false;  // a dashboard is already up
  // Load the terminfo entry on the side and drop it again.
  TERMINAL* before = cur_term;
  int err = 0;
  if (setupterm(term, STDOUT_FILENO, &err) != OK) {
    set_curterm(before);
    return false;
  }
  const char* cup = tigetstr("cup");
  const bool ok = cup != nullptr && cup != reinterpret_cast<char*>(-1);
  TERMINAL* probe = set_curterm(before);
  if (probe != before) del_curterm(probe);
  return ok;
}

std::unique_ptr<Renderer> dashboard_renderer(DashboardOptions options) {
  return std::make_unique<Dashboard>(options);
}

}  // namespace ember::train
