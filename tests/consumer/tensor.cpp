// Tensors on Dispatch and a gradient through Autodiff, checked against values worked out by
// hand.
#include <cmath>
#include <iostream>
#include <vector>

#include "ember/ember.h"

using namespace ember;

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

int main() try {
  using T = Tensor<Dispatch, 2>;
  auto a = T::from_data(TensorData::from<float>({1, 2, 3, 4}, {2, 2}));
  expect(a.matmul(a.transpose()).sum_dim(1).to_vec<float>(), {16, 36}, "matmul + sum_dim");
  expect(activation::softmax(T::zeros({1, 4}), 1).to_vec<float>(), {0.25f, 0.25f, 0.25f, 0.25f},
         "softmax");

  using AD = Autodiff<Dispatch>;
  auto x = Tensor<AD, 2>::from_inner(a).require_grad();
  auto grads = (x * x).sum().backward();             // d/dx sum(x^2) = 2x
  expect(x.grad(grads)->to_vec<float>(), {2, 4, 6, 8}, "gradient");

  try {
    (void)a.matmul(T::zeros({3, 1}));
    std::cerr << "matmul of [2, 2] and [3, 1] did not throw\n";
    ++failures;
  } catch (const ShapeError&) {  // thrown inside the library, caught by its type here
  }
  std::cout << (failures ? "FAILED" : "ok") << ": tensors from an installed ember\n";
  return failures ? 1 : 0;
} catch (const std::exception& e) {
  std::cerr << "tensor_app: " << e.what() << "\n";
  return 1;
}
