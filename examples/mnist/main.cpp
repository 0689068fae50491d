// Fashion-MNIST, end to end: train an MLP or a small CNN on the CPU, evaluate on the test
// set, save the model, and classify images with the saved model or a checkpoint.
//
//   mnist train --model cnn --epochs 3 --out runs/mnist
//   mnist infer --model-dir runs/mnist --top 3 test:0 test:1 shirt.png
//
// The data are the IDX files of Debian's dataset-fashion-mnist package (or $EMBER_MNIST_DIR).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app.h"
#include "ember/backend/dispatch.h"
#include "ember/core/parse.h"
#include "ember/data/image.h"
#include "ember/data/mnist.h"
#include "ember/distributed/local_device.h"
#ifdef EMBER_MNIST_KERNEL_STATS
#include "ember/kernel/cache.h"  // part of ember in a build with a GPU backend
#endif
#include "ember/record/safetensors.h"
#include "ember/train/checkpoint.h"

namespace fs = std::filesystem;
using namespace ember;

using mnist::Args;
using mnist::kClasses;

namespace {
constexpr int kExitAborted = 130;  // as for Ctrl-C (128 + SIGINT)

const char* kUsage = R"(usage:
  mnist train [--model mlp|cnn] [--epochs N] [--batch-size N] [--lr X] [--backend cpu]
              [--workers N] [--seed N] [--out DIR] [--plain] [--resume]
  mnist infer --model-dir DIR [--top K] INPUT...

train   trains on Fashion-MNIST, evaluates on the test set, and saves DIR/model.safetensors
        (defaults: --model cnn --epochs 3 --batch-size 64 --lr 0.001 --out runs/mnist);
        the last line printed is "test accuracy: 0.xxxx".
  --workers N   threads that load and batch the data ahead of the training step (default 2;
                0: on the training thread)
  --seed N      seeds the initial weights and the data order (default 42): the same seed and
                options give the same run
  --plain       progress as plain lines instead of the live dashboard (the default when
                stdout is not a terminal)
  --resume      continues from the newest checkpoint in DIR: the same weights, optimizer
                state, data order and position, so the run ends as an uninterrupted one would.
                --epochs is the total, not the number still to run.
infer   classifies each INPUT: "test:N" is image N of the test set, any other INPUT a PNG or
        JPEG file (converted to 28x28 grayscale). One line per input: the K most likely
        classes with their probabilities (--top K, 1 to 10; default 1).
        DIR is a run folder (its model.safetensors; without one, a run that was stopped or
        aborted, its newest checkpoint) or a checkpoint folder (DIR/checkpoints/epoch-N).

The run folder (--out DIR, checked before training starts):
  model.safetensors       the final model, written when training completed
  checkpoints/epoch-N/    weights, optimizer and training state after epoch N (or at the
                          step where it was stopped): the newest two and the best by test
                          accuracy are kept; --resume continues from the newest
  metrics.jsonl, metrics.csv   the metrics of each epoch, for the training and test splits
  report.html             the run on one page: charts, best values, confusion matrix; its
                          title says if the run was stopped or aborted

The dashboard (on a terminal):
  left/right, Tab   switch the plotted metric
  q                 asks what to do: s stops after the current step and writes a checkpoint
                    of it (--resume continues there; exit status 0), a aborts at once (the
                    partial epoch is not saved, no final model is written; exit status 130),
                    any other key goes on
  Ctrl-C            ends the program at once (exit status 130)

Exit status: 0 trained (or stopped on request), 1 an error, 2 a bad command line, 130 aborted.
The data are read from $EMBER_MNIST_DIR, or Debian's dataset-fashion-mnist files.
)";

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "mnist: " << msg << "\n\n" << kUsage;
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  if (argc < 2) usage_error("missing command");
  a.cmd = argv[1];
  if (a.cmd == "--help" || a.cmd == "-h" || a.cmd == "help") {
    std::cout << kUsage;
    std::exit(0);
  }
  if (a.cmd != "train" && a.cmd != "infer") usage_error("unknown command '" + a.cmd + "'");
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(k + " needs a value");
      return argv[++i];
    };
    auto folder = [&] {
      std::string v = value();
      if (v.empty()) usage_error(k + ": expected a folder, got an empty string");
      return v;
    };
    try {
      if (k == "--help" || k == "-h") {
        std::cout << kUsage;
        std::exit(0);
      } else if (k == "--model") {
        a.model = value();
      } else if (k == "--backend") {
        a.backend = value();
      } else if (k == "--out") {
        a.out = folder();
      } else if (k == "--model-dir") {
        a.model_dir = folder();
      } else if (k == "--epochs") {
        a.epochs = parse_int(value(), k, 1);
      } else if (k == "--batch-size") {
        a.batch_size = parse_int(value(), k, 1);
      } else if (k == "--workers") {
        a.workers = parse_int(value(), k, 0, 256);
      } else if (k == "--seed") {
        a.seed = parse_int(value(), k, 0);
      } else if (k == "--top") {
        a.top = parse_int(value(), k, 1, 10);
      } else if (k == "--lr") {
        a.lr = parse_double(value(), k, NumberSign::Positive);
      } else if (k == "--plain") {
        a.plain = true;
      } else if (k == "--resume") {
        a.resume = true;
      } else if (k.starts_with("--")) {
        usage_error("unknown option " + k);
      } else {
        a.inputs.push_back(k);
      }
    } catch (const ValueError& e) {
      usage_error(e.what());
    }
  }
  if (a.model != "mlp" && a.model != "cnn") usage_error("--model is mlp or cnn");
  // Started by ember-run: a GPU backend named without an index means this rank's own GPU.
  if (std::getenv("LOCAL_RANK") && a.backend != "cpu" && a.backend.find(':') == std::string::npos)
    a.backend = dist::local_device(a.backend).to_string();
  if (a.cmd == "infer" && (a.model_dir.empty() || a.inputs.empty()))
    usage_error("infer needs --model-dir DIR and at least one input");
  return a;
}

int train_run(const Args& a) {
  // Before anything slow: a device that is not there, or an --out that cannot be created or
  // written, fails now.
  const Device dev = Device::parse(a.backend);
  bool found = false;
  std::string have;
  for (Device d : available_devices()) {
    found = found || d == dev;
    have += (have.empty() ? "" : ", ") + d.to_string();
  }
  if (!found)
    throw ValueError("backend '" + a.backend + "' is not available on this machine (" + have +
                     " is)");
  train::prepare_run_dir(a.out, "mnist");
  const auto dir = data::MnistDataset::default_dir();
  if (!data::MnistDataset::available(data::Split::Train, dir))
    throw ValueError("no Fashion-MNIST files in " + dir.string() +
                     " (install dataset-fashion-mnist or set EMBER_MNIST_DIR)");
  const mnist::TrainResult r = a.model == "cnn" ? mnist::train_cnn(a) : mnist::train_mlp(a);
  const train::FitStatus& st = r.status;
  if (r.rank > 0) return st.end == train::FitStatus::End::Aborted ? kExitAborted : 0;
  const auto report_path = fs::path(a.out) / "report.html";
  const std::string name = "Fashion-MNIST, " + a.model;

  if (!st.finished()) {
    // Stopped or aborted: no final model (the run is not complete), a report that says so.
    const bool aborted = st.end == train::FitStatus::End::Aborted;
    const std::string ck = st.checkpoint ? st.checkpoint->string() : "none";
    const std::string status =
        std::string(aborted ? "Aborted" : "Stopped") + " at epoch " + std::to_string(st.epoch) +
        " of " + std::to_string(st.num_epochs) + ", step " + std::to_string(st.step) +
        (aborted ? ": the partial epoch was not saved; newest checkpoint: " + ck
                 : ": a checkpoint of that step was written (" + ck +
                       "); --resume continues "
                       "there") +
        ". No final model was written.";
    train::write_report(report_path, r.history, std::nullopt, name + ": " + st.to_string(), status);
    std::cout << status << "\n";
    std::cout << "report: " << report_path.string() << "\n";
    return aborted ? kExitAborted : 0;
  }

  const std::string title = st.end == train::FitStatus::End::EarlyStopped
                                ? name + ", " + std::to_string(st.epoch) + " of " +
                                      std::to_string(st.num_epochs) + " epochs (early stop)"
                                : name + ", " + std::to_string(st.num_epochs) +
                                      (st.num_epochs == 1 ? " epoch" : " epochs");
  train::write_report(report_path, r.history, r.confusion, title);
  std::cout << "model: " << r.model_path.string() << "\n";
  std::cout << "report: " << report_path.string() << "\n";
  std::cout << "metrics: " << (fs::path(a.out) / "metrics.jsonl").string() << "\n";
#ifdef EMBER_MNIST_KERNEL_STATS
  if (a.backend != "cpu") {  // the GPU kernels this run needed: compiled now, or cached
    auto k = kernel::KernelCache::global().stats();
    std::cout << "kernels: " << k.misses << " compiled, " << k.disk_hits
              << " read from the disk cache (" << kernel::KernelCache::default_dir().string()
              << ")\n";
  }
#endif
  std::cout << "test accuracy: " << std::fixed << std::setprecision(4) << r.test_accuracy << "\n";
  return 0;
}

/// The images an inference reads: the test set only when a "test:N" input asks for it.
class Inputs {
 public:
  /// A 28x28 image in [0, 1] from "test:N" or an image file.
  std::vector<float> load(const std::string& in) {
    std::vector<float> px(784);
    if (in.starts_with("test:")) {
      if (!test_) test_.emplace(data::Split::Test);
      const auto i = parse_int(std::string_view(in).substr(5), "input " + in, 0,
                               static_cast<int64_t>(test_->len()) - 1);
      auto item = test_->get(static_cast<size_t>(i));
      for (size_t k = 0; k < 784; ++k) px[k] = item.image[k] / 255.0f;
      return px;
    }
    data::Image img = data::load_image(in, 1);
    // Nearest-neighbour resize to 28x28 (the dataset's images are 28x28 already).
    for (int y = 0; y < 28; ++y)
      for (int x = 0; x < 28; ++x)
        px[static_cast<size_t>(y * 28 + x)] =
            img.at(y * img.height / 28, x * img.width / 28, 0) / 255.0f;
    return px;
  }

 private:
  std::optional<data::MnistDataset> test_;
};

/// "9 ankle boot (0.9731), 7 sneaker (0.0214)": the `k` most likely classes.
std::string top_classes(const std::vector<float>& probs, int64_t k) {
  std::vector<size_t> order(probs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return probs[a] > probs[b]; });
  std::ostringstream os;
  os << std::fixed << std::setprecision(4);
  for (int64_t i = 0; i < k && i < static_cast<int64_t>(order.size()); ++i)
    os << (i ? ", " : "") << order[i] << " " << kClasses[order[i]] << " (" << probs[order[i]]
       << ")";
  return os.str();
}

/// The model file of `dir` (a run folder or a checkpoint folder) and its kind (mlp, cnn).
std::pair<fs::path, std::string> find_model(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw ValueError("--model-dir " + dir.string() +
                     (fs::exists(dir, ec) ? ": not a folder" : ": no such folder"));
  fs::path path = dir / "model.safetensors";
  if (!fs::exists(path, ec)) {
    const fs::path ck = dir / "checkpoints";
    std::optional<int64_t> id;
    if (fs::is_directory(ck, ec)) id = train::CheckpointDir(ck).latest();
    if (!id)
      throw ValueError("--model-dir " + dir.string() +
                       ": no model.safetensors and no checkpoints/epoch-N in it (expected a "
                       "folder written by 'mnist train --out DIR', or one of its checkpoints)");
    path = train::CheckpointDir(ck).path(*id) / "model.safetensors";
    std::cerr << "mnist: no final model in " << dir.string()
              << " (its run did not complete); using its newest checkpoint, "
              << path.parent_path().string() << "\n";
  }
  const auto file = record::load_safetensors(path);
  // The final model says "mnist.model"; a checkpoint has the module's type name.
  auto meta = [&](const char* key) {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? std::string() : it->second;
  };
  std::string kind = meta("mnist.model");
  if (kind.empty())
    kind = meta("ember.module") == "Mlp" ? "mlp" : meta("ember.module") == "Cnn" ? "cnn" : "";
  if (kind.empty()) throw ValueError(path.string() + " is not a model saved by 'mnist train'");
  return {path, kind};
}

int infer(const Args& a) {
  const auto [path, kind] = find_model(a.model_dir);
  Inputs inputs;
  std::vector<std::vector<float>> images;
  for (const auto& in : a.inputs) {
    auto px = inputs.load(in);
    for (auto& p : px) p = (p - data::MnistDataset::kFashionMean) / data::MnistDataset::kFashionStd;
    images.push_back(std::move(px));
  }
  const auto probs =
      kind == "mlp" ? mnist::predict_mlp(path, images) : mnist::predict_cnn(path, images);
  for (size_t i = 0; i < a.inputs.size(); ++i)
    std::cout << a.inputs[i] << ": " << top_classes(probs[i], a.top) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse_args(argc, argv);
  try {
    if (a.cmd == "infer") return infer(a);
    return train_run(a);
  } catch (const std::exception& e) {
    std::cerr << "mnist: " << e.what() << "\n";
    return 1;
  }
}
