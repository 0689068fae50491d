// ember::micro: the freestanding build for microcontrollers (docs/embedded.md). Float32
// tensors on the `Micro` backend (portable scalar loops, no threads), the inference layers
// with the host's names, weights bound in place from flash, errors through a handler and
// memory from a static arena. No exceptions, no RTTI, no heap.
//
//   #include "ember/micro/micro.h"
//   #include "sine_weights.h"                  // tools/micro_weights.py, from a host record
//   using namespace ember::micro;
//   auto fc = nn::LinearConfig{1, 16}.init<Micro>();
//   nn::load_module(fc, sine_weights::record);  // "weight", "bias" bound in place
//   float x0 = 0.5f;
//   auto y = activation::tanh(fc.forward(Tensor<Micro, 2>::from_const(&x0, {1, 1})));
#pragma once
#include "ember/micro/activation.h"
#include "ember/micro/arena.h"
#include "ember/micro/error.h"
#include "ember/micro/layers.h"
#include "ember/micro/record.h"
#include "ember/micro/rnn.h"
#include "ember/micro/tensor.h"
