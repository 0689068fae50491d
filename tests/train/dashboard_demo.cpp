// A small training run for the dashboard test: three Gaussian blobs, a two-layer network, a
// Learner with the renderer make_renderer() picks, each step slowed down a little so the
// screen gets drawn. It trains until stopped from the dashboard (or for --epochs), then writes
// DIR/report.html. An abort ends with status 130, as in mnist.
//
//   dashboard_demo DIR [--epochs N] [--delay-ms M] [--renderer auto|dashboard|plain]
//                      [--throw-at K [--uncaught]]
//
// --throw-at K throws from the K-th step: caught in main (prints "error: ...", exits 1) or,
// with --uncaught, not caught at all (std::terminate).
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/loss.h"
#include "ember/optim.h"
#include "ember/train/dashboard.h"
#include "ember/train/learner.h"
#include "ember/train/output.h"
#include "ember/train/report.h"
#include "tests/train/blobs.h"

namespace {

using namespace ember;
using AD = Autodiff<Cpu>;

int g_delay_ms = 15;
long g_throw_at = -1;
long g_steps = 0;

template <Backend B>
struct Net {
  nn::Linear<B> fc1, fc2;
  EMBER_MODULE(Net, fc1, fc2)

  train::ClassificationOutput<B> step(const test::Batch<B>& b) const {
    if (++g_steps == g_throw_at)
      throw std::runtime_error("the demo's step " + std::to_string(g_steps) + " failed");
    std::this_thread::sleep_for(std::chrono::milliseconds(g_delay_ms));
    auto logits = fc2.forward(activation::relu(fc1.forward(b.x)));
    return {nn::CrossEntropyLossConfig{}.init().forward(logits, b.y), logits, b.y};
  }
};

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: dashboard_demo DIR [--epochs N] [--delay-ms M] "
                 "[--renderer auto|dashboard|plain] [--throw-at K [--uncaught]]\n";
    return 2;
  }
  const std::string dir = argv[1];
  int64_t epochs = 1000;
  auto kind = train::RendererKind::Auto;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--epochs") {
      epochs = std::stoll(next());
    } else if (a == "--delay-ms") {
      g_delay_ms = std::stoi(next());
    } else if (a == "--throw-at") {
      g_throw_at = std::stol(next());
    } else if (a == "--renderer") {
      const std::string r = next();
      kind = r == "dashboard" ? train::RendererKind::Dashboard
             : r == "plain"   ? train::RendererKind::Plain
                              : train::RendererKind::Auto;
    }
  }
  ember::seed(7);
  Net<AD> net{nn::LinearConfig{4, 16}.init<AD>(), nn::LinearConfig{16, 3}.init<AD>()};
  train::Learner learner(train::LearnerConfig{.num_epochs = epochs, .dir = dir}, net,
                         optim::AdamConfig{}.init<AD>(), optim::ConstantLrConfig{0.01}.init());
  learner.with_metric(std::make_unique<train::Accuracy>())
      .with_metric(std::make_unique<train::LearningRate>())
      .with_renderer(train::make_renderer(kind));
  auto train_loader = test::blobs<AD>(12, 1, 0.8f);
  auto valid_loader = test::blobs<Cpu>(4, 2, 0.8f);
  const auto t0 = std::chrono::steady_clock::now();
  learner.fit(train_loader, valid_loader);
  const train::FitStatus& status = learner.status();
  std::cout << "demo finished: " << status.to_string() << std::endl;
  std::cout << "steps " << g_steps << " frames " << train::dashboard_detail::frames_drawn()
            << " seconds " << seconds(t0) << std::endl;
  // The run as report.html, with the validation confusion matrix of the final model.
  train::ConfusionMatrix confusion;
  train::evaluate(nn::valid(learner.model()), valid_loader, {&confusion});
  train::write_report(std::filesystem::path(dir) / "report.html", learner.history(),
                      train::ConfusionCounts::from(confusion, {"blob x", "blob y", "blob z"}),
                      "dashboard demo: " + status.to_string());
  return status.end == train::FitStatus::End::Aborted ? 130 : 0;  // as mnist does
}

}  // namespace

int main(int argc, char** argv) {
  bool uncaught = false;
  for (int i = 1; i < argc; ++i) uncaught |= std::string(argv[i]) == "--uncaught";
  if (uncaught) return run(argc, argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cout << "error: " << e.what() << std::endl;
    return 1;
  }
}
