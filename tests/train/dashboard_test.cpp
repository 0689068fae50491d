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
#include "tests/train/tmux_session.h"

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

using ember::test::have_tmux;
using ember::test::run_capture;

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// dashboard_demo in a 120x40 tmux session, training into dir()/run.
struct Session : ember::test::TmuxSession {
  Session(const std::string& name, const std::string& demo_args)
      : TmuxSession("dash_" + name,
                    std::string("'") + EMBER_DASHBOARD_DEMO + "' \"$RUN_DIR\" " + demo_args) {}
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
  EXPECT_EQ(t.exit_status(), 130);  // aborted: not a successful run
  const std::string out = t.history();
  EXPECT_TRUE(has(out, "training aborted")) << out;
  EXPECT_TRUE(has(out, "demo finished: aborted at epoch ")) << out;
  EXPECT_FALSE(has(out, "stopped after step")) << out;
  EXPECT_TRUE(has(out, "TTY_RESTORED")) << out;
  // The report's title says so too.
  EXPECT_TRUE(
      has(read_file(t.dir() / "run" / "report.html"), "<h1>dashboard demo: aborted at epoch "));
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
