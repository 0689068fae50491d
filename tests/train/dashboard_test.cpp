// The dashboard: its plot pieces on their own, then the real thing in a pseudo-terminal. A
// small training program (dashboard_demo.cpp) runs inside a detached tmux session of 120x40;
// the test reads the screen with `capture-pane`, presses keys with `send-keys`, and checks
// what the program leaves behind: exit status, terminal modes, checkpoint, summary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "ember/train/dashboard.h"
#include "ember/train/renderer.h"

namespace ember::train {
namespace {

namespace fs = std::filesystem;
using dashboard_detail::braille;
using dashboard_detail::Canvas;
using dashboard_detail::IterSeries;

TEST(DashboardSeries, ResampleAveragesIterationsIntoColumns) {
  IterSeries s;
  for (int i = 1; i <= 8; ++i) s.push(i);
  EXPECT_EQ(s.count(), 8);
  EXPECT_EQ(s.stride(), 1);
  EXPECT_EQ(s.resample(4, 8), (std::vector<double>{1.5, 3.5, 5.5, 7.5}));
  // A longer span leaves the columns past the data empty.
  auto r = s.resample(4, 16);
  EXPECT_EQ(r[0], 2.5);
  EXPECT_EQ(r[1], 6.5);
  EXPECT_TRUE(std::isnan(r[2]) && std::isnan(r[3]));
}

TEST(DashboardSeries, BoundedMemoryKeepsTheWholeRun) {
  IterSeries s(64);
  for (int i = 0; i < 10000; ++i) s.push(i);
  EXPECT_EQ(s.count(), 10000);
  EXPECT_LE(s.buckets(), 64u);
  EXPECT_EQ(s.stride(), 256);  // 64 buckets of 128 held 8192; then they merged
  // Ten columns of 1000 iterations: each the mean of its iterations, to within the bucket
  // size (a bucket counts in the column of its centre).
  auto r = s.resample(10, 10000);
  for (int c = 0; c < 10; ++c) EXPECT_NEAR(r[c], 1000 * c + 499.5, 128) << c;
  // Non-finite values count as iterations, not in the means.
  IterSeries t;
  t.push(1), t.push(NAN), t.push(3), t.push(INFINITY);
  EXPECT_EQ(t.count(), 4);
  EXPECT_EQ(t.resample(1, 4)[0], 2);
}

TEST(DashboardCanvas, BrailleDotsAndLines) {
  EXPECT_EQ(braille(0), "\u2800");
  EXPECT_EQ(braille(0xFF), "\u28FF");
  Canvas c(2, 1);  // 4 x 4 dots
  c.dot(0, 0, 0);  // dot 1
  c.dot(1, 3, 0);  // dot 8
  EXPECT_EQ(c.bits(0, 0, 0), 0x01 | 0x80);
  c.line(0, 3, 3, 0, 1);                    // a diagonal across both cells
  EXPECT_EQ(c.bits(0, 0, 1), 0x40 | 0x20);  // (0,3) and (1,2)
  EXPECT_EQ(c.bits(1, 0, 1), 0x02 | 0x08);  // (2,1) and (3,0)
  c.dot(9, 9, 0);                           // outside: ignored
  c.mark(3, 0);
  EXPECT_TRUE(c.marked(1, 0));
  EXPECT_FALSE(c.marked(0, 0));
}

// -- in a pseudo-terminal -----------------------------------------------------------------

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

bool have_tmux() { return std::system("command -v tmux >/dev/null 2>&1") == 0; }

/// A private tmux server running dashboard_demo in a 120x40 session.
class Session {
 public:
  explicit Session(const std::string& name, const std::string& demo_args)
      : dir_(fs::temp_directory_path() / ("ember_dash_" + name + "_" + std::to_string(::getpid()))),
        sock_((dir_ / "tmux.sock").string()) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // The program's exit status and whether the terminal modes came back as they were are
    // printed after it ends; the pane then stays open to be read.
    std::ofstream(dir_ / "run.sh")
        << "export LC_ALL=C.UTF-8 LANG=C.UTF-8\n"
        << "trap : INT\n"  // the shell outlives a Ctrl-C; the program gets it as usual
        << "before=$(stty -g)\n"
        << "'" << EMBER_DASHBOARD_DEMO << "' '" << (dir_ / "run").string() << "' " << demo_args
        << "\n"
        << "rc=$?\n"
        << "[ \"$before\" = \"$(stty -g)\" ] && echo TTY_RESTORED\n"
        << "echo DEMO_EXIT=$rc\n"
        << "sleep 600\n";
    tmux("new-session -d -x 120 -y 40 -s dash 'sh " + (dir_ / "run.sh").string() + "'");
  }
  ~Session() {
    tmux("kill-server");
    fs::remove_all(dir_);
  }

  std::string tmux(const std::string& args) const {
    return run_capture("LC_ALL=C.UTF-8 tmux -u -S '" + sock_ + "' -f /dev/null " + args + " 2>&1");
  }
  std::string screen() const { return tmux("capture-pane -p -t dash"); }
  /// The pane with its scrollback.
  std::string history() const { return tmux("capture-pane -p -S -1000 -t dash"); }
  bool alternate_screen() const {
    return tmux("display-message -p -t dash '#{alternate_on}'").starts_with("1");
  }
  void keys(const std::string& k) const { tmux("send-keys -t dash " + k); }

  /// Waits until the screen has `what` (up to `seconds`); returns the last screen read.
  std::string wait_for(const std::string& what, double seconds = 30) const {
    return wait_until([&](const std::string& s) { return s.find(what) != std::string::npos; },
                      seconds);
  }
  std::string wait_until(const std::function<bool(const std::string&)>& ok,
                         double seconds = 30) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::string s;
    while (std::chrono::steady_clock::now() < end) {
      s = screen();
      if (ok(s)) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return s;
  }
  /// Waits for the program to end; returns its exit status (-1: it did not end).
  int exit_status(double seconds = 30) const {
    const std::string s = wait_for("DEMO_EXIT=", seconds);
    const auto at = s.find("DEMO_EXIT=");
    return at == std::string::npos ? -1 : std::atoi(s.c_str() + at + 10);
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  std::string sock_;
};

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

/// Braille characters U+2801..U+28FF: the plotted series.
bool has_braille(const std::string& s) {
  for (size_t i = 0; i + 2 < s.size(); ++i)
    if (static_cast<unsigned char>(s[i]) == 0xE2 &&
        (static_cast<unsigned char>(s[i + 1]) & 0xFC) == 0xA0)
      return true;
  return false;
}

TEST(Dashboard, DrawsAndStopsAfterStepWithCheckpoint) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  Session t("stop", "--renderer auto");  // auto: the pane is a terminal
  // Once the second epoch runs, the first one's validation point is on the plot.
  const std::string s = t.wait_for("epoch 2/");
  ASSERT_TRUE(has(s, "epoch 2/")) << s;
  EXPECT_TRUE(t.alternate_screen());
  // The status line, the progress bar, the metric list, the plot's axes and legend.
  EXPECT_TRUE(has(s, "items/s")) << s;
  EXPECT_TRUE(has(s, "elapsed")) << s;
  EXPECT_TRUE(has(s, "eta")) << s;
  EXPECT_TRUE(has(s, "[\u2588")) << s;  // the bar, filled from the left
  EXPECT_TRUE(has(s, "%")) << s;
  EXPECT_TRUE(has(s, " loss ")) << s;        // the plot's title
  EXPECT_TRUE(has(s, "accuracy")) << s;      // in the metric list
  EXPECT_TRUE(has(s, "\u2524")) << s;        // y-axis ticks, next to their labels
  EXPECT_TRUE(has(s, "\u2514\u2500")) << s;  // the x axis
  EXPECT_TRUE(has(s, "iteration")) << s;     // its label
  EXPECT_TRUE(has(s, "train (iterations")) << s;
  EXPECT_TRUE(has(s, "valid (epochs)")) << s;
  EXPECT_TRUE(has(s, "\u25CF")) << s;        // a validation point
  EXPECT_TRUE(has_braille(s)) << s;          // the training series
  EXPECT_TRUE(has(s, "checkpoint: ")) << s;  // the log area
  std::cout << "--- the dashboard ---\n" << s << "---\n";

  // → switches the plot to the next metric.
  t.keys("Right");
  const std::string s2 = t.wait_for(" accuracy (2/3)", 5);
  EXPECT_TRUE(has(s2, " accuracy (2/3)")) << s2;
  t.keys("Tab");
  EXPECT_TRUE(has(t.wait_for(" lr (3/3)", 5), " lr (3/3)"));

  // q opens the prompt; s stops after the step, with a checkpoint.
  t.keys("q");
  const std::string p = t.wait_for("Quit?", 5);
  ASSERT_TRUE(has(p, "Quit?")) << p;
  EXPECT_TRUE(has(p, "stop after this step")) << p;
  t.keys("s");
  EXPECT_EQ(t.exit_status(), 0) << t.history();
  const std::string out = t.history();
  std::cout << "--- after the program ended ---\n" << out << "---\n";
  EXPECT_FALSE(t.alternate_screen());
  EXPECT_TRUE(has(out, "TTY_RESTORED")) << out;
  EXPECT_TRUE(has(out, "stopped after step")) << out;
  EXPECT_TRUE(has(out, "demo finished: stopped")) << out;
  // The summary table on the normal screen.
  EXPECT_TRUE(has(out, "split")) << out;
  EXPECT_TRUE(has(out, "best")) << out;
  EXPECT_TRUE(has(out, "valid   loss")) << out;
  EXPECT_TRUE(has(out, "train   accuracy")) << out;
  // The report of the stopped run.
  const std::string report = read_file(t.dir() / "run" / "report.html");
  EXPECT_TRUE(has(report, "<h2>Confusion matrix</h2>"));
  EXPECT_TRUE(has(report, "id=\"metric-accuracy\""));
  // The mid-epoch checkpoint: the newest folder holds a learner.json with iteration > 0.
  const fs::path ck = t.dir() / "run" / "checkpoints";
  ASSERT_TRUE(fs::exists(ck));
  bool mid_epoch = false;
  for (const auto& e : fs::directory_iterator(ck)) {
    const std::string text = read_file(e.path() / "learner.json");
    mid_epoch |= has(text, "\"iteration\": ") && !has(text, "\"iteration\": 0");
  }
  EXPECT_TRUE(mid_epoch);
}

TEST(Dashboard, AbortKey) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  Session t("abort", "--renderer dashboard");
  ASSERT_TRUE(has(t.wait_for("items/s"), "items/s"));
  t.keys("q");
  ASSERT_TRUE(has(t.wait_for("Quit?", 5), "Quit?"));
  t.keys("a");
  EXPECT_EQ(t.exit_status(), 0);
  const std::string out = t.history();
  EXPECT_TRUE(has(out, "training aborted")) << out;
  EXPECT_FALSE(has(out, "stopped after step")) << out;
  EXPECT_TRUE(has(out, "TTY_RESTORED")) << out;
}

TEST(Dashboard, AnyOtherKeyContinues) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  Session t("continue", "--renderer dashboard");
  ASSERT_TRUE(has(t.wait_for("items/s"), "items/s"));
  t.keys("q");
  ASSERT_TRUE(has(t.wait_for("Quit?", 5), "Quit?"));
  t.keys("x");
  const std::string s = t.wait_until([](const std::string& s) { return !has(s, "Quit?"); }, 5);
  EXPECT_FALSE(has(s, "Quit?")) << s;
  EXPECT_TRUE(t.alternate_screen());  // still training
  t.keys("q");
  ASSERT_TRUE(has(t.wait_for("Quit?", 5), "Quit?"));
  t.keys("s");
  EXPECT_EQ(t.exit_status(), 0);
}

TEST(Dashboard, SigintRestoresTheTerminal) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  Session t("sigint", "--renderer dashboard");
  ASSERT_TRUE(has(t.wait_for("items/s"), "items/s"));
  EXPECT_TRUE(t.alternate_screen());
  t.keys("C-c");
  EXPECT_EQ(t.exit_status(), 128 + 2);  // ended by SIGINT, re-raised
  EXPECT_FALSE(t.alternate_screen());
  EXPECT_TRUE(has(t.history(), "TTY_RESTORED")) << t.history();
}

TEST(Dashboard, ExceptionRestoresTheTerminal) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  Session t("throw", "--renderer dashboard --throw-at 20");
  EXPECT_EQ(t.exit_status(), 1);
  const std::string out = t.history();
  EXPECT_TRUE(has(out, "error: the demo's step 20 failed")) << out;
  EXPECT_TRUE(has(out, "TTY_RESTORED")) << out;
  EXPECT_FALSE(t.alternate_screen());
}

TEST(Dashboard, UncaughtExceptionRestoresTheTerminal) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  Session t("uncaught", "--renderer dashboard --throw-at 20 --uncaught");
  EXPECT_EQ(t.exit_status(), 128 + 6);  // std::terminate -> abort
  EXPECT_TRUE(has(t.history(), "TTY_RESTORED")) << t.history();
  EXPECT_FALSE(t.alternate_screen());
}

TEST(Dashboard, FastIterationsAreNotDrawnOneByOne) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  Session t("fast", "--renderer dashboard --delay-ms 0 --epochs 40");
  EXPECT_EQ(t.exit_status(60), 0);
  const std::string out = t.history();
  long steps = 0, frames = 0;
  double secs = 0;
  const auto at = out.find("steps ");
  ASSERT_NE(at, std::string::npos) << out;
  ASSERT_EQ(
      std::sscanf(out.c_str() + at, "steps %ld frames %ld seconds %lf", &steps, &frames, &secs), 3)
      << out;
  std::cout << steps << " steps, " << frames << " frames in " << secs << " s\n";
  EXPECT_EQ(steps, 40 * (12 + 4));
  EXPECT_GE(frames, 1);
  EXPECT_LE(frames, 10 * secs + 2);  // at most ~10 a second
  EXPECT_TRUE(has(out, "demo finished: completed")) << out;
  EXPECT_TRUE(has(out, "TTY_RESTORED")) << out;
}

TEST(Dashboard, AutoIsPlainWhenStdoutIsNotATerminal) {
  const fs::path dir =
      fs::temp_directory_path() / ("ember_dash_plain_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string out = run_capture(std::string("'") + EMBER_DASHBOARD_DEMO + "' '" +
                                      dir.string() + "' --epochs 2 --delay-ms 0 --renderer auto");
  fs::remove_all(dir);
  EXPECT_TRUE(has(out, "[train] epoch 1/2")) << out;
  EXPECT_TRUE(has(out, "demo finished: completed")) << out;
  EXPECT_FALSE(has(out, "\x1b")) << out;  // no escape sequences
}

}  // namespace
}  // namespace ember::train
