// The main job's command line (examples/mnist, examples/custom_loop) as a user runs it, on a
// tiny Fashion-MNIST written by the test ($EMBER_MNIST_DIR): bad inputs and numbers, run
// folders that cannot be written, inference from a checkpoint with the top classes, the help,
// a run killed with SIGKILL and resumed, and the dashboard's abort and stop keys (in tmux).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/train/child_process.h"
#include "tests/train/metric_records.h"
#include "tests/train/tmux_session.h"

namespace ember::test {
namespace {

namespace fs = std::filesystem;
using ember::test::metric_records;

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// An IDX file: magic (u8 data, `dims.size()` dims), big-endian dims, the bytes.
void write_idx(const fs::path& p, const std::vector<uint32_t>& dims,
               const std::vector<uint8_t>& data) {
  std::ofstream f(p, std::ios::binary);
  const uint8_t magic[4] = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  f.write(reinterpret_cast<const char*>(magic), 4);
  for (uint32_t d : dims) {
    const uint8_t be[4] = {static_cast<uint8_t>(d >> 24), static_cast<uint8_t>(d >> 16),
                           static_cast<uint8_t>(d >> 8), static_cast<uint8_t>(d)};
    f.write(reinterpret_cast<const char*>(be), 4);
  }
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

/// Fashion-MNIST in miniature: `n` images per split whose class is a bright band of rows.
void write_tiny_mnist(const fs::path& dir, uint32_t n_train, uint32_t n_test) {
  fs::create_directories(dir);
  for (auto [prefix, n] : {std::pair{"train", n_train}, std::pair{"t10k", n_test}}) {
    std::vector<uint8_t> images(size_t{n} * 784), labels(n);
    for (uint32_t i = 0; i < n; ++i) {
      labels[i] = static_cast<uint8_t>(i % 10);
      for (int y = 0; y < 28; ++y)
        for (int x = 0; x < 28; ++x)
          images[size_t{i} * 784 + y * 28 + x] =
              static_cast<uint8_t>((y / 3 == labels[i] ? 200 : 20) + (i * 7 + y * 3 + x) % 30);
    }
    write_idx(dir / (std::string(prefix) + "-images-idx3-ubyte"), {n, 28, 28}, images);
    write_idx(dir / (std::string(prefix) + "-labels-idx1-ubyte"), {n}, labels);
  }
}

/// The tiny data set and one trained run (MLP, one epoch), shared by the tests.
class MnistCli : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_ = new TempFolder("mnist_cli");
    write_tiny_mnist(data_->dir / "data", 512, 100);
    const ChildResult r = mnist({"train", "--model", "mlp", "--epochs", "1", "--plain", "--workers",
                                 "0", "--out", run().string()});
    ASSERT_EQ(r.status, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }
  static ChildOptions options() {
    ChildOptions o;
    o.env = {{"EMBER_MNIST_DIR", (data_->dir / "data").string()}, {"TERM", "dumb"}};
    return o;
  }
  static ChildResult mnist(std::vector<std::string> args, ChildOptions o = options()) {
    args.insert(args.begin(), EMBER_MNIST);
    return run_child(args, o);
  }
  static fs::path run() { return data_->dir / "run"; }
  static fs::path tmp() { return data_->dir; }
  static TempFolder* data_;
};
TempFolder* MnistCli::data_ = nullptr;

// The main job's CNN trains on vulkan:0 (lavapipe in CI) as on the CPU: the same options and
// seed give the same test accuracy within a sample of the 100 test images.
TEST_F(MnistCli, CnnTrainsOnVulkanAsOnTheCpu) {
  auto accuracy = [&](const std::string& backend) -> double {
    const ChildResult r =
        mnist({"train", "--model", "cnn", "--epochs", "1", "--plain", "--workers", "0", "--backend",
               backend, "--out", (tmp() / ("cnn_" + backend.substr(0, 3))).string()});
    if (backend != "cpu" && has(r.output, "is not available on this machine")) return -1;
    EXPECT_EQ(r.status, 0) << r.output;
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.output, m, std::regex("test accuracy: ([0-9.]+)"))) << r.output;
    return m.empty() ? 0 : std::stod(m[1].str());
  };
  const double vk = accuracy("vulkan:0");
  if (vk < 0) GTEST_SKIP() << "no vulkan:0 here (no Vulkan device or a build without it)";
  const double cpu = accuracy("cpu");
  EXPECT_GT(cpu, 0.5);
  EXPECT_NEAR(vk, cpu, 0.011);
}

// The main job trains through the Remote backend (mnist_cli_test@remote, against an
// ember-server on cpu that tests/remote/with_server.sh starts) to the CPU's accuracy: the same
// ops with the same seeds run on the same backend there, so the figures agree exactly.
TEST_F(MnistCli, CnnTrainsThroughRemoteAsOnTheCpu) {
  const char* env = std::getenv("EMBER_TEST_DEVICE");
  const std::string remote = env ? env : "";
  if (!remote.starts_with("remote:")) GTEST_SKIP() << "EMBER_TEST_DEVICE names no remote device";
  auto accuracy = [&](const std::string& backend, const std::string& out) {
    const ChildResult r =
        mnist({"train", "--model", "cnn", "--epochs", "1", "--plain", "--workers", "0",
               "--backend", backend, "--out", (tmp() / out).string()});
    EXPECT_EQ(r.status, 0) << r.output;
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.output, m, std::regex("test accuracy: ([0-9.]+)"))) << r.output;
    return m.empty() ? 0 : std::stod(m[1].str());
  };
  const double through_remote = accuracy(remote, "cnn_remote");
  const double cpu = accuracy("cpu", "cnn_cpu_for_remote");
  EXPECT_GT(cpu, 0.5);
  EXPECT_EQ(through_remote, cpu);
}

TEST_F(MnistCli, InferRejectsFoldersAndMissingOrUnreadableFiles) {
  const std::string dir = "--model-dir";
  // A folder as the input: a clear error naming it, not std::bad_alloc.
  auto r = mnist({"infer", dir, run().string(), tmp().string()});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output,
                  "mnist: [image] cannot read " + tmp().string() + ": it is a folder, not a file"))
      << r.output;
  EXPECT_FALSE(has(r.output, "bad_alloc")) << r.output;
  r = mnist({"infer", dir, run().string(), (tmp() / "missing.png").string()});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(
      r.output, "cannot open " + (tmp() / "missing.png").string() + ": No such file or directory"))
      << r.output;
  // A file without read permission, as a user the permission bits hold for.
  const fs::path secret = tmp() / "secret.png";
  std::ofstream(secret) << "x";
  fs::permissions(secret, fs::perms::none);
  ChildOptions as_user = options();
  if (::geteuid() == 0) as_user.uid = nobody_uid();
  if (::geteuid() != 0 || as_user.uid) {
    r = mnist({"infer", dir, run().string(), secret.string()}, as_user);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_TRUE(has(r.output, "cannot open " + secret.string() + ": Permission denied"))
        << r.output;
  }
  // A model folder that is not one.
  r = mnist({"infer", dir, (tmp() / "data").string(), "test:0"});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "no model.safetensors and no checkpoints/epoch-N")) << r.output;
}

TEST_F(MnistCli, NumbersAreParsedStrictly) {
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string says;
  };
  const std::string out = (tmp() / "never").string();
  const std::vector<Case> cases = {
      {{"train", "--epochs", "1.9", "--out", out},
       2,
       "mnist: --epochs: expected a positive integer, got \"1.9\""},
      {{"train", "--epochs", "0"}, 2, "--epochs: expected a positive integer, got \"0\""},
      {{"train", "--batch-size", "0x10"}, 2, "--batch-size: expected a positive integer"},
      {{"train", "--workers", "-1"}, 2, "--workers: expected an integer from 0 to 256, got \"-1\""},
      {{"train", "--seed", "12abc"}, 2, "--seed: expected a non-negative integer, got \"12abc\""},
      {{"train", "--lr", "nan"}, 2, "--lr: expected a positive number, got \"nan\""},
      {{"train", "--lr", "1e-3x"}, 2, "--lr: expected a positive number, got \"1e-3x\""},
      {{"infer", "--model-dir", run().string(), "--top", "11", "test:0"},
       2,
       "--top: expected an integer from 1 to 10, got \"11\""},
      {{"infer", "--model-dir", run().string(), "test:1x"},
       1,
       "input test:1x: expected an integer from 0 to 99, got \"1x\""},
      {{"infer", "--model-dir", run().string(), "test:0x10"},
       1,
       "input test:0x10: expected an integer from 0 to 99, got \"0x10\""},
      {{"infer", "--model-dir", run().string(), "test:-1"},
       1,
       "input test:-1: expected an integer from 0 to 99, got \"-1\""},
      {{"infer", "--model-dir", run().string(), "test:100"},
       1,
       "input test:100: expected an integer from 0 to 99, got \"100\""},
  };
  for (const auto& c : cases) {
    const ChildResult r = mnist(c.args);
    EXPECT_EQ(r.status, c.status) << r.output;
    EXPECT_TRUE(has(r.output, c.says)) << r.output;
    EXPECT_FALSE(has(r.output, "18446744073709551615")) << r.output;
  }
  EXPECT_FALSE(fs::exists(out));  // nothing was trained
  // The hand-written loop's argument too (it used to die in std::stoi).
  for (const char* bad : {"abc", "1.5", "0", "-3", "7x"}) {
    const ChildResult r = run_child({EMBER_CUSTOM_LOOP, bad}, options());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(has(r.output, std::string("custom_loop: EPOCHS: expected an integer from 1 to "
                                          "1000, got \"") +
                                  bad + "\""))
        << r.output;
    EXPECT_FALSE(has(r.output, "stoi")) << r.output;
  }
}

TEST_F(MnistCli, AnOutThatCannotBeWrittenFailsBeforeTraining) {
  std::ofstream(tmp() / "a_file") << "x";
  fs::create_directories(tmp() / "ro");
  fs::permissions(tmp() / "ro", fs::perms(0555));
  const auto train = [&](const std::string& out, ChildOptions o = options()) {
    return mnist({"train", "--model", "mlp", "--epochs", "1", "--plain", "--out", out}, o);
  };
  auto r = train("");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "mnist: --out: expected a folder, got an empty string")) << r.output;
  r = train((tmp() / "a_file").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "mnist: [mnist] cannot use " + (tmp() / "a_file").string() +
                                " as the run folder: it exists and is not a folder"))
      << r.output;
  EXPECT_FALSE(has(r.output, "Fashion-MNIST:")) << r.output;  // before the data are loaded
  EXPECT_FALSE(has(r.output, "[train]")) << r.output;
  r = train("/proc/mnist-run");  // /proc takes no new folders, not even from root
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "cannot create the run folder /proc/mnist-run")) << r.output;
  // A read-only folder, as a user the permission bits hold for.
  ChildOptions as_user = options();
  if (::geteuid() == 0) as_user.uid = nobody_uid();
  if (::geteuid() != 0 || as_user.uid) {
    r = train((tmp() / "ro").string(), as_user);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_TRUE(has(r.output, "cannot write in the run folder " + (tmp() / "ro").string() +
                                  ": Permission denied"))
        << r.output;
    r = train((tmp() / "ro" / "run").string(), as_user);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_TRUE(has(r.output, "cannot create the run folder " + (tmp() / "ro/run").string() +
                                  ": Permission denied"))
        << r.output;
    EXPECT_FALSE(has(r.output, "[train]")) << r.output;
  }
}

/// The (class, probability) pairs of one `infer` output line.
std::vector<std::pair<int, double>> parse_top(const std::string& line) {
  std::vector<std::pair<int, double>> out;
  static const std::regex item(R"(([0-9]) [a-z/ -]+ \(([0-9.]+)\))");
  for (std::sregex_iterator it(line.begin(), line.end(), item), end; it != end; ++it)
    out.push_back({std::stoi((*it)[1]), std::stod((*it)[2])});
  return out;
}

TEST_F(MnistCli, InferReadsACheckpointAndPrintsTopK) {
  const std::string ck = (run() / "checkpoints" / "epoch-1").string();
  ASSERT_TRUE(fs::exists(ck)) << ck;
  const auto final_model =
      mnist({"infer", "--model-dir", run().string(), "--top", "3", "test:0", "test:7"});
  ASSERT_EQ(final_model.status, 0) << final_model.output;
  const auto from_ck = mnist({"infer", "--model-dir", ck, "--top", "3", "test:0", "test:7"});
  ASSERT_EQ(from_ck.status, 0) << from_ck.output;
  // The checkpoint after the last epoch holds the final weights: the same answers.
  EXPECT_EQ(from_ck.output, final_model.output);
  std::istringstream lines(from_ck.output);
  std::string line;
  for (const char* in : {"test:0: ", "test:7: "}) {
    ASSERT_TRUE(std::getline(lines, line));
    EXPECT_TRUE(line.starts_with(in)) << line;
    const auto top = parse_top(line);
    ASSERT_EQ(top.size(), 3u) << line;
    EXPECT_GE(top[0].second, top[1].second) << line;
    EXPECT_GE(top[1].second, top[2].second) << line;
    EXPECT_LE(top[0].second + top[1].second + top[2].second, 1.0001) << line;
    EXPECT_NE(top[0].first, top[1].first) << line;
  }
  // The default is the single most likely class.
  const auto one = mnist({"infer", "--model-dir", ck, "test:0"});
  EXPECT_EQ(parse_top(one.output).size(), 1u) << one.output;
  // A run folder without a final model (a stopped or aborted run): its newest checkpoint.
  const fs::path partial = tmp() / "partial_run";
  fs::create_directories(partial);
  fs::copy(run() / "checkpoints", partial / "checkpoints", fs::copy_options::recursive);
  const auto from_run =
      mnist({"infer", "--model-dir", partial.string(), "--top", "3", "test:0", "test:7"});
  EXPECT_EQ(from_run.status, 0) << from_run.output;
  EXPECT_TRUE(has(from_run.output,
                  "using its newest checkpoint, " + (partial / "checkpoints/epoch-1").string()))
      << from_run.output;
  EXPECT_TRUE(has(from_run.output, final_model.output)) << from_run.output;
}

TEST_F(MnistCli, HelpExplainsTheOptionsTheFolderAndTheKeys) {
  const auto r = mnist({"--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* part :
       {"--resume", "continues from the newest checkpoint", "--plain", "--workers N", "--seed N",
        "--top K", "checkpoints/epoch-N/", "metrics.jsonl", "report.html", "model.safetensors",
        "The dashboard", "left/right, Tab", "s stops after the current step", "a aborts at once",
        "Ctrl-C", "exit status 130", "Exit status: 0"})
    EXPECT_TRUE(has(r.output, part)) << part << "\n" << r.output;
}

TEST_F(MnistCli, KilledRunResumesWithEachEpochOnce) {
  const std::vector<std::string> args = {"train", "--model", "mlp",       "--epochs",
                                         "3",     "--plain", "--workers", "0"};
  auto with_out = [&](std::vector<std::string> a, const fs::path& out) {
    a.insert(a.begin(), EMBER_MNIST);
    a.insert(a.end(), {"--out", out.string()});
    return a;
  };
  const fs::path ref = tmp() / "kill_ref";
  const ChildResult full = run_child(with_out(args, ref), options());
  ASSERT_EQ(full.status, 0) << full.output;
  const auto expected = metric_records(ref);
  ASSERT_EQ(expected.size(), 6u);
  // Killed when validation ends (its metrics and the checkpoint follow), a little after, and
  // when training ends.
  const std::vector<std::pair<std::string, int>> points = {{"[valid] epoch 1/3 done", 0},
                                                           {"[valid] epoch 2/3 done", 0},
                                                           {"[valid] epoch 2/3 done", 3000},
                                                           {"[valid] epoch 3/3 done", 0},
                                                           {"[train] epoch 2/3 done", 0}};
  int n = 0;
  for (const auto& [line, delay_us] : points) {
    const fs::path out = tmp() / ("kill_" + std::to_string(n++));
    {
      Child c(with_out(args, out), options());
      ASSERT_TRUE(c.wait_for(line)) << c.output();
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      c.kill9();
      EXPECT_EQ(c.wait(), 128 + 9) << c.output();
    }
    auto resume = with_out(args, out);
    resume.push_back("--resume");
    const ChildResult r = run_child(resume, options());
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(has(r.output, "test accuracy: ")) << r.output;
    EXPECT_EQ(metric_records(out), expected)
        << "killed at \"" << line << "\" +" << delay_us << "us\n"
        << r.output;
  }
}

// -- the dashboard's abort and stop keys (in tmux) -----------------------------------------

/// True once the dashboard's status line shows epoch `k` or later.
auto at_epoch(int k) {
  return [k](const std::string& screen) {
    std::smatch m;
    static const std::regex status(R"(epoch ([0-9]+)/1000)");
    return std::regex_search(screen, m, status) && std::stoi(m[1]) >= k;
  };
}

std::string mnist_command(const fs::path& data) {
  return "EMBER_MNIST_DIR='" + data.string() + "' '" + EMBER_MNIST +
         "' train --model mlp --epochs 1000 --workers 0 --out \"$RUN_DIR\"";
}

TEST_F(MnistCli, AbortExits130AndWritesNoFinalModel) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  TmuxSession t("mnist_abort", mnist_command(tmp() / "data"));
  ASSERT_TRUE(at_epoch(3)(t.wait_until(at_epoch(3)))) << t.screen();
  t.keys("q");
  ASSERT_TRUE(has(t.wait_for("Quit?", 5), "Quit?")) << t.screen();
  t.keys("a");
  EXPECT_EQ(t.exit_status(), 130) << t.history();  // like Ctrl-C: not a successful run
  const std::string out = t.history();
  EXPECT_TRUE(has(out, "TTY_RESTORED")) << out;
  EXPECT_FALSE(has(out, "test accuracy")) << out;
  EXPECT_FALSE(fs::exists(t.run_dir() / "model.safetensors"));
  // The report says where it was aborted, in its title and its body, and so does the output.
  std::smatch m;
  const std::string report = read_text_file(t.run_dir() / "report.html");
  ASSERT_TRUE(std::regex_search(
      report, m,
      std::regex("<h1>Fashion-MNIST, mlp: aborted at epoch ([0-9]+) of 1000, step ([0-9]+)</h1>")))
      << report.substr(0, 2000);
  const std::string epoch = m[1], step = m[2];
  EXPECT_TRUE(has(report, "<p class=\"status\">Aborted at epoch " + epoch + " of 1000, step " +
                              step + ": the partial epoch was not saved"))
      << report.substr(0, 2000);
  EXPECT_TRUE(has(out, "Aborted at epoch " + epoch + " of 1000, step " + step)) << out;
  // The checkpoints end with the epoch before; the metric files hold the epochs before.
  const int k = std::stoi(epoch);
  EXPECT_TRUE(fs::exists(t.run_dir() / "checkpoints" / ("epoch-" + std::to_string(k - 1))));
  EXPECT_FALSE(fs::exists(t.run_dir() / "checkpoints" / ("epoch-" + epoch)));
  EXPECT_EQ(metric_records(t.run_dir()).size(), static_cast<size_t>(2 * (k - 1)));
}

TEST_F(MnistCli, StopKeyWritesAResumableCheckpointAndSaysSo) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  TmuxSession t("mnist_stop", mnist_command(tmp() / "data"));
  ASSERT_TRUE(at_epoch(2)(t.wait_until(at_epoch(2)))) << t.screen();
  t.keys("q");
  ASSERT_TRUE(has(t.wait_for("Quit?", 5), "Quit?")) << t.screen();
  t.keys("s");
  EXPECT_EQ(t.exit_status(), 0) << t.history();
  EXPECT_FALSE(fs::exists(t.run_dir() / "model.safetensors"));
  std::smatch m;
  const std::string report = read_text_file(t.run_dir() / "report.html");
  ASSERT_TRUE(std::regex_search(
      report, m,
      std::regex("<h1>Fashion-MNIST, mlp: stopped at epoch ([0-9]+) of 1000, step ([0-9]+)</h1>")))
      << report.substr(0, 2000);
  const fs::path ck = t.run_dir() / "checkpoints" / ("epoch-" + std::string(m[1]));
  EXPECT_TRUE(has(report, "a checkpoint of that step was written (" + ck.string() + ")"));
  const auto state = nlohmann::json::parse(read_text_file(ck / "learner.json"));
  EXPECT_EQ(std::to_string(state.at("iteration").get<int64_t>()), std::string(m[2]));
  // The stopped run's checkpoint answers `infer`.
  const auto r = mnist({"infer", "--model-dir", t.run_dir().string(), "test:0"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "using its newest checkpoint, " + ck.string())) << r.output;
  EXPECT_EQ(parse_top(r.output).size(), 1u) << r.output;
}

}  // namespace
}  // namespace ember::test
