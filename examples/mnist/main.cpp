// Fashion-MNIST, end to end: train an MLP or a small CNN on the CPU, evaluate on the test
// set, save the model, and classify images with the saved model.
//
//   mnist train --model cnn --epochs 3 --out runs/mnist
//   mnist infer --model-dir runs/mnist test:0 test:1 shirt.png
//
// The data are the IDX files of Debian's dataset-fashion-mnist package (or $EMBER_MNIST_DIR).
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "ember/data/image.h"
#include "ember/data/loader.h"
#include "ember/nn/record.h"
#include "ember/optim.h"
#include "ember/train/learner.h"
#include "ember/train/report.h"
#include "model.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

constexpr const char* kClasses[] = {"t-shirt/top", "trouser", "pullover", "dress", "coat",
                                    "sandal",      "shirt",   "sneaker",  "bag",   "ankle boot"};

const char* kUsage = R"(usage:
  mnist train [--model mlp|cnn] [--epochs N] [--batch-size N] [--lr X] [--backend cpu]
              [--workers N] [--seed N] [--out DIR] [--plain] [--resume]
  mnist infer --model-dir DIR INPUT...

train   trains on Fashion-MNIST, evaluates on the test set, and saves DIR/model.safetensors
        (defaults: --model cnn --epochs 3 --batch-size 64 --lr 0.001 --out runs/mnist);
        the last line printed is "test accuracy: 0.xxxx".
infer   classifies each INPUT with a saved model: "test:N" is image N of the test set, any
        other INPUT a PNG/JPEG file (converted to 28x28 grayscale). One line per input.

The data are read from $EMBER_MNIST_DIR, or Debian's dataset-fashion-mnist files.
)";

struct Args {
  std::string cmd, model = "cnn", backend = "cpu", out = "runs/mnist", model_dir;
  int64_t epochs = 3, batch_size = 64, workers = 2, seed = 42;
  double lr = 1e-3;
  bool plain = false, resume = false;
  std::vector<std::string> inputs;
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "mnist: " << msg << "\n\n" << kUsage;
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) usage_error("missing command");
  a.cmd = argv[1];
  if (a.cmd == "--help" || a.cmd == "-h" || a.cmd == "help") {
    std::cout << kUsage;
    std::exit(0);
  }
  if (a.cmd != "train" && a.cmd != "infer") usage_error("unknown command '" + a.cmd + "'");
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(k + " needs a value");
      return argv[++i];
    };
    auto number = [&](const std::string& v) {
      try {
        size_t used = 0;
        double d = std::stod(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
        return d;
      } catch (const std::exception&) {
        usage_error(k + ": '" + v + "' is not a number");
      }
    };
    if (k == "--help" || k == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (k == "--model")
      a.model = value();
    else if (k == "--backend")
      a.backend = value();
    else if (k == "--out")
      a.out = value();
    else if (k == "--model-dir")
      a.model_dir = value();
    else if (k == "--epochs")
      a.epochs = static_cast<int64_t>(number(value()));
    else if (k == "--batch-size")
      a.batch_size = static_cast<int64_t>(number(value()));
    else if (k == "--workers")
      a.workers = static_cast<int64_t>(number(value()));
    else if (k == "--seed")
      a.seed = static_cast<int64_t>(number(value()));
    else if (k == "--lr")
      a.lr = number(value());
    else if (k == "--plain")
      a.plain = true;
    else if (k == "--resume")
      a.resume = true;
    else if (k.starts_with("--"))
      usage_error("unknown option " + k);
    else
      a.inputs.push_back(k);
  }
  if (a.model != "mlp" && a.model != "cnn") usage_error("--model is mlp or cnn");
  if (a.epochs < 1 || a.batch_size < 1 || a.workers < 0 || !(a.lr > 0))
    usage_error("--epochs, --batch-size and --lr must be positive");
  if (a.cmd == "infer" && (a.model_dir.empty() || a.inputs.empty()))
    usage_error("infer needs --model-dir DIR and at least one input");
  return a;
}

using AD = Autodiff<Cpu>;

template <template <class> class Model>
int train_model(const Args& a) {
  if (a.backend != "cpu")
    throw ValueError("backend '" + a.backend + "' is not available in this build (cpu is)");
  const auto dir = data::MnistDataset::default_dir();
  if (!data::MnistDataset::available(data::Split::Train, dir))
    throw ValueError("no Fashion-MNIST files in " + dir.string() +
                     " (install dataset-fashion-mnist or set EMBER_MNIST_DIR)");
  const size_t workers = static_cast<size_t>(a.workers);
  const size_t bs = static_cast<size_t>(a.batch_size);
  data::DataLoader train(data::MnistDataset(data::Split::Train, dir),
                         data::MnistBatcher<AD>().normalize_fashion(),
                         {.batch_size = bs,
                          .shuffle = true,
                          .seed = static_cast<uint64_t>(a.seed),
                          .workers = workers});
  data::DataLoader test(data::MnistDataset(data::Split::Test, dir),
                        data::MnistBatcher<Cpu>().normalize_fashion(),
                        {.batch_size = 1000, .workers = workers});
  std::cout << "Fashion-MNIST: " << train.num_items() << " training and " << test.num_items()
            << " test images from " << dir.string() << "\n";

  ember::seed(static_cast<uint64_t>(a.seed));
  auto model = Model<AD>::init(Cpu::default_device());
  std::cout << nn::summary(model);
  train::Learner learner(train::LearnerConfig{.num_epochs = a.epochs,
                                              .dir = a.out,
                                              .best_metric = "accuracy",
                                              .seed = static_cast<uint64_t>(a.seed)},
                         model, optim::AdamConfig{}.init<AD>(),
                         optim::ConstantLrConfig{a.lr}.init());
  learner.with_metric(std::make_unique<train::Accuracy>())
      .with_renderer(
          train::make_renderer(a.plain ? train::RendererKind::Plain : train::RendererKind::Auto))
      .resume(a.resume);
  auto trained = learner.fit(train, test);

  // The test set, with the final model.
  auto eval = nn::valid(trained);
  train::Accuracy acc;
  train::ConfusionMatrix confusion;
  train::evaluate(eval, test, {&acc, &confusion});
  fs::create_directories(a.out);
  const auto model_path = fs::path(a.out) / "model.safetensors";
  nn::save_module(eval, model_path, {.metadata = {{"mnist.model", a.model}}});
  const auto report_path = fs::path(a.out) / "report.html";
  train::write_report(
      report_path, learner.history(),
      train::ConfusionCounts::from(confusion, {std::begin(kClasses), std::end(kClasses)}),
      "Fashion-MNIST, " + a.model + ", " + std::to_string(a.epochs) + " epochs");
  std::cout << "model: " << model_path.string() << "\n";
  std::cout << "report: " << report_path.string() << "\n";
  std::cout << "metrics: " << (fs::path(a.out) / "metrics.jsonl").string() << "\n";
  std::cout << "test accuracy: " << std::fixed << std::setprecision(4) << acc.value() << "\n";
  return 0;
}

/// A 28x28 image in [0, 1] from "test:N" or an image file.
std::vector<float> load_input(const std::string& in) {
  std::vector<float> px(784);
  if (in.starts_with("test:")) {
    data::MnistDataset test(data::Split::Test);
    size_t i = 0;
    try {
      i = std::stoul(in.substr(5));
    } catch (const std::exception&) {
      throw ValueError("bad input '" + in + "': expected test:N");
    }
    auto item = test.get(i);
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

template <template <class> class Model>
int infer_model(const Args& a, const fs::path& path) {
  auto model = Model<Cpu>::init(Cpu::default_device());
  nn::load_module(model, path);
  for (const auto& in : a.inputs) {
    auto px = load_input(in);
    for (auto& p : px) p = (p - data::MnistDataset::kFashionMean) / data::MnistDataset::kFashionStd;
    auto x = Tensor<Cpu, 4>::from_values(px, {1, 1, 28, 28});
    const int64_t c = model.forward(x).argmax(1).template into_scalar<int64_t>();
    std::cout << in << ": " << c << " " << kClasses[c] << "\n";
  }
  return 0;
}

int infer(const Args& a) {
  const auto path = fs::path(a.model_dir) / "model.safetensors";
  auto file = record::load_safetensors(path);
  auto it = file.metadata.find("mnist.model");
  const std::string kind = it == file.metadata.end() ? "" : it->second;
  if (kind == "mlp") return infer_model<mnist::Mlp>(a, path);
  if (kind == "cnn") return infer_model<mnist::Cnn>(a, path);
  throw ValueError(path.string() + " is not a model saved by 'mnist train'");
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  try {
    if (a.cmd == "infer") return infer(a);
    return a.model == "cnn" ? train_model<mnist::Cnn>(a) : train_model<mnist::Mlp>(a);
  } catch (const std::exception& e) {
    std::cerr << "mnist: " << e.what() << "\n";
    return 1;
  }
}
