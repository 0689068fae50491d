// For model code written against ember's host names (`ember::nn::Linear<B>`, `ember::Tensor`,
// `ember::activation::relu`) in a freestanding build: makes ember::micro's names visible
// as ember's. Include it instead of the host's headers, never beside them:
//
//   #ifdef EMBER_FREESTANDING
//   #include "ember/micro/as_ember.h"
//   #else
//   #include "ember/nn/layers/linear.h"
//   #endif
//   template <ember::Backend B> struct Mlp { ember::nn::Linear<B> fc1, fc2; ... };
#pragma once
#include "ember/micro/micro.h"

namespace ember {
using namespace micro;
}  // namespace ember
