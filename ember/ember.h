// The umbrella header: tensors, the CPU backend, Dispatch, activations and nn ops.
//
//   #include "ember/ember.h"
//   using B = ember::Dispatch;
//   auto x = ember::Tensor<B, 2>::random({2, 3}, ember::Distribution::normal(0, 1));
#pragma once
#include "ember/backend/dispatch.h"
#include "ember/backend/extern.h"
#include "ember/backends/cpu/cpu.h"
#include "ember/core/thread_pool.h"
#include "ember/tensor/activation.h"
#include "ember/tensor/einsum.h"
#include "ember/tensor/fft.h"
#include "ember/tensor/grid.h"
#include "ember/tensor/linalg.h"
#include "ember/tensor/linalg_solve.h"
#include "ember/tensor/nn_ops.h"
#include "ember/tensor/ops.h"
#include "ember/tensor/pool_indices.h"
#include "ember/tensor/search.h"
#include "ember/tensor/signal.h"
#include "ember/tensor/tensor.h"
