// The host side of the embedded examples: what the microcontroller's outputs are checked
// against (check.py). Each command writes into OUT_DIR the inputs for the device
// (inputs.safetensors) and the host CPU backend's outputs on them (expected.safetensors).
//
//   embedded_reference classifier MODEL.safetensors N OUT_DIR
//       the first N Fashion-MNIST test images, normalized as the main job does, and the
//       logits of the main job's saved model (examples/mnist: mlp.h or cnn.h) on them
//   embedded_reference sine N OUT_DIR
//       trains sine.h's regressor (Adam, full batch), saves it to OUT_DIR/weights.safetensors,
//       and writes N inputs in [-pi, pi] with the trained model's outputs
//   embedded_reference layers OUT_DIR
//       layers_net.h with random parameters (saved to OUT_DIR/weights.safetensors) and its
//       outputs on random inputs
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "../mnist/cnn.h"
#include "../mnist/mlp.h"
#include "ember/core/parse.h"
#include "ember/data/mnist.h"
#include "ember/nn/record.h"
#include "ember/optim.h"
#include "ember/record/safetensors.h"
#include "layers_net.h"
#include "sine.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

void write_pair(const fs::path& dir, const std::string& in_name, const Tensor<Cpu, 2>& in,
                const std::string& out_name, const Tensor<Cpu, 2>& out) {
  fs::create_directories(dir);
  record::save_safetensors(dir / "inputs.safetensors", {{in_name, in.to_data()}});
  record::save_safetensors(dir / "expected.safetensors", {{out_name, out.to_data()}});
}

template <template <class> class Model>
Tensor<Cpu, 2> logits_of(const fs::path& record, const Tensor<Cpu, 4>& images) {
  auto model = Model<Cpu>::init(Cpu::default_device());
  nn::load_module(model, record);
  return model.forward(images);
}

int classifier(const fs::path& record, int64_t n, const fs::path& out) {
  const auto file = record::load_safetensors(record);
  const auto kind = file.metadata.count("mnist.model") ? file.metadata.at("mnist.model") : "";
  if (kind != "mlp" && kind != "cnn")
    throw ValueError(record.string() + " is not a model saved by 'mnist train'");
  data::MnistDataset test(data::Split::Test);
  std::vector<float> px;
  for (int64_t i = 0; i < n; ++i)
    for (uint8_t p : test.pixels(static_cast<size_t>(i)))
      px.push_back((p / 255.0f - data::MnistDataset::kFashionMean) /
                   data::MnistDataset::kFashionStd);
  auto images = Tensor<Cpu, 4>::from_values(px, {n, 1, 28, 28});
  auto logits =
      kind == "mlp" ? logits_of<mnist::Mlp>(record, images) : logits_of<mnist::Cnn>(record, images);
  fs::create_directories(out);
  record::save_safetensors(out / "inputs.safetensors", {{"images", images.to_data()}});
  record::save_safetensors(out / "expected.safetensors", {{"logits", logits.to_data()}});
  std::cout << kind << ": logits of " << n << " test images in " << out.string() << "\n";
  return 0;
}

int sine_model(int64_t n, const fs::path& out) {
  using AD = Autodiff<Cpu>;
  ember::seed(7);
  const double pi = std::acos(-1.0);
  auto xs = Tensor<AD, 1>::arange(0.0, 256.0, 1.0).mul_scalar(2 * pi / 255).sub_scalar(pi);
  auto x = xs.template reshape<2>({256, 1});
  auto target = x.sin();
  auto model = sine::Sine<AD>::init(Cpu::default_device());
  auto opt = optim::AdamConfig{}.init<AD>();
  double loss_value = 0;
  for (int step = 0; step < 1500; ++step) {
    auto loss = (model.forward(x) - target).square().mean();
    auto grads = optim::GradientsParams<AD>::from_grads(loss.backward(), model);
    opt.step(step < 1000 ? 1e-2 : 2e-3, model, grads);
    loss_value = loss.into_scalar();
  }
  auto eval = nn::valid(model);
  fs::create_directories(out);
  nn::save_module(eval, out / "weights.safetensors");
  std::vector<float> probe;
  for (int64_t i = 0; i < n; ++i)
    probe.push_back(static_cast<float>(-pi + (2 * pi) * (static_cast<double>(i) + 0.37) /
                                                 static_cast<double>(n)));
  auto xp = Tensor<Cpu, 2>::from_values(probe, {n, 1});
  auto yp = eval.forward(xp);
  write_pair(out, "x", xp, "y", yp);
  std::cout << "sine: trained to mse " << loss_value << ", " << n << " probes in " << out.string()
            << "\n";
  return 0;
}

int layers_model(const fs::path& out) {
  ember::seed(5);
  auto model = layers::LayersNet<Cpu>::init(Cpu::default_device());
  auto uniform = [](int64_t n, double lo, double hi) {
    return Tensor<Cpu, 1>::random({n}, Distribution::uniform(lo, hi));
  };
  // Batch norm's statistics and affine parameters away from their identity defaults, and
  // layer norm's too, so that the device's use of each shows.
  model.bn.running_mean.set(uniform(8, -0.5, 0.5));
  model.bn.running_var.set(uniform(8, 0.5, 2.0));
  model.bn.gamma->set(uniform(8, 0.5, 1.5));
  model.bn.beta->set(uniform(8, -0.5, 0.5));
  model.norm.gamma->set(uniform(12, 0.5, 1.5));
  model.norm.beta->set(uniform(12, -0.5, 0.5));
  fs::create_directories(out);
  nn::save_module(model, out / "weights.safetensors");
  auto xs = Tensor<Cpu, 3>::random({10, 1, 6}, Distribution::normal(0, 1));
  auto xc = Tensor<Cpu, 3>::random({1, 4, 16}, Distribution::normal(0, 1));
  // The embedding's indices: layers.cpp has them too (the device's records are float only).
  const std::vector<int64_t> ids = {3, 0, 19, 7, 7, 12};
  auto emb = model.emb.forward(Tensor<Cpu, 2, Int>::from_values(ids, {2, 3}));
  record::save_safetensors(out / "inputs.safetensors",
                           {{"seq", xs.to_data()}, {"conv", xc.to_data()}});
  record::save_safetensors(out / "expected.safetensors",
                           {{"seq", model.forward_seq(xs).to_data()},
                            {"conv", model.forward_conv(xc).to_data()},
                            {"emb", emb.to_data()}});
  std::cout << "layers: random parameters and outputs in " << out.string() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string usage =
      "usage: embedded_reference classifier MODEL.safetensors N OUT_DIR\n"
      "       embedded_reference sine N OUT_DIR\n"
      "       embedded_reference layers OUT_DIR\n";
  const std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() == 4 && a[0] == "classifier")
    return classifier(a[1], parse_int(a[2], "N", 1, 10000), a[3]);
  if (a.size() == 2 && a[0] == "layers") return layers_model(a[1]);
  if (a.size() == 3 && a[0] == "sine") return sine_model(parse_int(a[1], "N", 1, 4096), a[2]);
  std::cerr << usage;
  return 2;
} catch (const std::exception& e) {
  std::cerr << "embedded_reference: " << e.what() << "\n";
  return 1;
}
