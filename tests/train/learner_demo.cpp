// A small training run for the Learner's fault tests, run as a child process that the tests
// kill or starve of disk space: three Gaussian blobs, a two-layer network of `--hidden` units
// (wider: bigger, slower checkpoints), the Learner with a renderer that prints one line per
// event, so that a test can pick the moment to kill it:
//
//   train E I        step I of epoch E done          valid E I   validation step I
//   end train E      epoch E's training metrics       end valid E validation metrics (then
//                    (the metric files follow)                    the files and the checkpoint)
//   log LINE         what the Learner logged (checkpoint: ..., resumed from ...)
//
// After training it writes DIR/model.safetensors and DIR/report.html (a finished run) and
// prints "fit: <status>". Errors print "error: <what>" and exit 1.
//
//   learner_demo DIR [--epochs N] [--train-batches N] [--valid-batches N] [--hidden H]
//                    [--delay-ms M] [--valid-delay-ms M] [--resume]
//                    [--limit-after-epoch E BYTES] [--limit-after-fit BYTES]
//
// --limit-after-epoch sets RLIMIT_FSIZE to BYTES once epoch E's checkpoint is written (any
// later write past BYTES fails with EFBIG, as on a full disk); --limit-after-fit does so
// before the model and the report are written.
#include <signal.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <type_traits>

#include "ember/core/parse.h"
#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/loss.h"
#include "ember/optim.h"
#include "ember/train/learner.h"
#include "ember/train/output.h"
#include "ember/train/report.h"
#include "tests/train/blobs.h"

namespace {

using namespace ember;
using AD = Autodiff<Cpu>;

int g_delay_ms = 0, g_valid_delay_ms = 0;

template <Backend B>
struct Net {
  nn::Linear<B> fc1, fc2;
  EMBER_MODULE(Net, fc1, fc2)

  train::ClassificationOutput<B> step(const test::Batch<B>& b) const {
    const int ms = std::is_same_v<B, Cpu> ? g_valid_delay_ms : g_delay_ms;
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    auto logits = fc2.forward(activation::relu(fc1.forward(b.x)));
    return {nn::CrossEntropyLossConfig{}.init().forward(logits, b.y), logits, b.y};
  }
};

void limit_file_size(rlim_t bytes) {
  ::signal(SIGXFSZ, SIG_IGN);  // writes past the limit fail with EFBIG instead of killing
  rlimit r{bytes, bytes};
  ::setrlimit(RLIMIT_FSIZE, &r);
}

class EventRenderer final : public train::Renderer {
 public:
  EventRenderer(int64_t limit_epoch, rlim_t limit) : limit_epoch_(limit_epoch), limit_(limit) {}
  void update(const train::Progress& p, const std::vector<train::MetricValue>&) override {
    std::cout << p.split << " " << p.epoch << " " << p.iteration << std::endl;
  }
  void epoch_end(const train::Progress& p, const std::vector<train::MetricValue>&) override {
    std::cout << "end " << p.split << " " << p.epoch << std::endl;
  }
  void log(const std::string& line) override {
    std::cout << "log " << line << std::endl;
    if (limit_epoch_ > 0 && line.starts_with("checkpoint: ") &&
        line.ends_with("epoch-" + std::to_string(limit_epoch_)))
      limit_file_size(limit_);
  }
  void finish(const train::History&) override {}

 private:
  int64_t limit_epoch_;
  rlim_t limit_;
};

int run(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: learner_demo DIR [--epochs N] [--train-batches N] [--valid-batches N] "
                 "[--hidden H] [--delay-ms M] [--valid-delay-ms M] [--resume] "
                 "[--limit-after-epoch E BYTES] [--limit-after-fit BYTES]\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  int64_t epochs = 3, train_batches = 6, valid_batches = 4, hidden = 16, limit_epoch = 0;
  int64_t limit = 0, limit_after_fit = 0;
  bool resume = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](int64_t min) { return parse_int(i + 1 < argc ? argv[++i] : "", a, min); };
    if (a == "--epochs")
      epochs = next(1);
    else if (a == "--train-batches")
      train_batches = next(1);
    else if (a == "--valid-batches")
      valid_batches = next(1);
    else if (a == "--hidden")
      hidden = next(1);
    else if (a == "--delay-ms")
      g_delay_ms = static_cast<int>(next(0));
    else if (a == "--valid-delay-ms")
      g_valid_delay_ms = static_cast<int>(next(0));
    else if (a == "--resume")
      resume = true;
    else if (a == "--limit-after-epoch")
      limit_epoch = next(1), limit = next(1);
    else if (a == "--limit-after-fit")
      limit_after_fit = next(1);
    else
      throw ValueError("unknown option " + a);
  }
  ember::seed(7);
  Net<AD> net{nn::LinearConfig{4, hidden}.init<AD>(), nn::LinearConfig{hidden, 3}.init<AD>()};
  train::Learner learner(train::LearnerConfig{.num_epochs = epochs, .dir = dir.string()}, net,
                         optim::AdamConfig{}.init<AD>(), optim::ConstantLrConfig{0.01}.init());
  learner.with_metric(std::make_unique<train::Accuracy>())
      .with_renderer(std::make_unique<EventRenderer>(limit_epoch, static_cast<rlim_t>(limit)))
      .resume(resume);
  auto train_loader = test::blobs<AD>(train_batches, 1);
  auto valid_loader = test::blobs<Cpu>(valid_batches, 2);
  auto trained = learner.fit(train_loader, valid_loader);
  std::cout << "fit: " << learner.status().to_string() << std::endl;
  if (limit_after_fit > 0) limit_file_size(static_cast<rlim_t>(limit_after_fit));
  if (learner.status().finished()) {
    nn::save_module(nn::valid(trained), dir / "model.safetensors");
    train::write_report(dir / "report.html", learner.history(), std::nullopt, "learner demo");
  }
  std::cout << "done" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cout << "error: " << e.what() << std::endl;
    return 1;
  }
}
