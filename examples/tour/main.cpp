// A short tour of ember's tensors on the CPU, through Dispatch.
#include <iostream>

#include "ember/ember.h"

int main() {
  using namespace ember;
  using B = Dispatch;
  using T2 = Tensor<B, 2>;
  seed(7);

  auto x = T2::from_values<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::cout << "x =\n" << x << "\n\n";
  std::cout << "x * 2 + 1 =\n" << x * 2.0f + 1.0f << "\n\n";
  std::cout << "x @ x^T =\n" << x.matmul(x.transpose()) << "\n\n";
  std::cout << "sum over dim 1 =\n" << x.sum_dim(1) << "\n\n";
  std::cout << "softmax over dim 1 =\n" << activation::softmax(x, 1) << "\n\n";
  std::cout << "argmax over dim 1 =\n" << x.argmax(1) << "\n\n";
  std::cout << "x[:, ::2] =\n" << x.slice({Slice::all(), Slice(0, 3, 2)}) << "\n\n";
  auto r = T2::random({2, 3}, Distribution::normal(0, 1));
  std::cout << "normal(0, 1) sample =\n" << r << "\n\n";
  std::cout << "eye(3) =\n" << T2::eye(3) << "\n\n";
  try {
    x.matmul(x);
  } catch (const Error& e) {
    std::cout << "errors name the op and the shapes:\n  " << e.what() << "\n";
  }
  return 0;
}
