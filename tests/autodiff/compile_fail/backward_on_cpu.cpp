// Must not compile: backward() needs an autodiff backend (checked by ctest).
#include "ember/ember.h"

int main() {
  auto loss = ember::Tensor<ember::Cpu, 1>::ones({1});
  auto grads = loss.backward();
  (void)grads;
}
