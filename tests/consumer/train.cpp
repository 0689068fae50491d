// One SGD step of a linear model on Autodiff<Dispatch>, checked against the step worked out
// by hand, then the model saved and loaded back (ember::nn, ember::record).
#include <cmath>
#include <iostream>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/record.h"
#include "ember/optim.h"

using namespace ember;
using B = Autodiff<Dispatch>;

template <Backend BB>
struct Model {
  nn::Linear<BB> fc;
  EMBER_MODULE(Model, fc)
};

static int failures = 0;
static void expect(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  bool ok = got.size() == want.size();
  for (size_t i = 0; ok && i < got.size(); ++i) ok = std::fabs(got[i] - want[i]) < 1e-5f;
  if (!ok) {
    std::cerr << what << ": got";
    for (float v : got) std::cerr << " " << v;
    std::cerr << "\n";
    ++failures;
  }
}

int main(int argc, char** argv) try {
  const char* path = argc > 1 ? argv[1] : "model.safetensors";
  Model<B> model{nn::LinearConfig{2, 1}.with_initializer(nn::Initializer::zeros()).init<B>()};
  auto x = Tensor<B, 2>::from_data(TensorData::from<float>({1, 2, 3, 4}, {2, 2}));
  auto y = Tensor<B, 2>::from_data(TensorData::from<float>({1, 2}, {2, 1}));

  // w = 0, b = 0: loss = mean(y^2) = 2.5; dL/dw = x^T (pred - y) = [-7, -10], dL/db = -3.
  auto loss = model.fc.forward(x).sub(y).square().mean();
  expect(loss.to_vec<float>(), {2.5f}, "loss");
  auto opt = optim::SgdConfig{}.init<B>();
  auto grads = optim::GradientsParams<B>::from_grads(loss.backward(), model);
  opt.step(0.1, model, grads);
  expect(model.fc.weight.val().to_vec<float>(), {0.7f, 1.0f}, "weight after one step");
  expect(model.fc.bias->val().to_vec<float>(), {0.3f}, "bias after one step");

  nn::save_module(model, path);
  Model<B> back{nn::LinearConfig{2, 1}.init<B>()};
  nn::load_module(back, path);
  expect(back.fc.weight.val().to_vec<float>(), {0.7f, 1.0f}, "weight loaded back");

  std::cout << (failures ? "FAILED" : "ok") << ": a training step from an installed ember\n";
  return failures ? 1 : 0;
} catch (const std::exception& e) {
  std::cerr << "train_app: " << e.what() << "\n";
  return 1;
}
