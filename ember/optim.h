// The optimizers, gradient tools and learning-rate schedules (docs/optim.md).
//
//   #include "ember/optim.h"
//   using B = ember::Autodiff<ember::Cpu>;
//   auto opt = ember::optim::AdamWConfig{}.init<B>();
//   auto sched = ember::optim::CosineAnnealingLrConfig{.lr = 1e-3, .num_iters = 1000}.init();
//   auto grads = ember::optim::GradientsParams<B>::from_grads(loss.backward(), model);
//   opt.step(sched.step(), model, grads);
#pragma once
#include "ember/optim/accumulator.h"
#include "ember/optim/adagrad.h"
#include "ember/optim/adam.h"
#include "ember/optim/adamw.h"
#include "ember/optim/adan.h"
#include "ember/optim/clipping.h"
#include "ember/optim/grads.h"
#include "ember/optim/lbfgs.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/lr_scheduler_compose.h"
#include "ember/optim/lr_scheduler_cosine.h"
#include "ember/optim/muon.h"
#include "ember/optim/optimizer.h"
#include "ember/optim/rmsprop.h"
#include "ember/optim/sgd.h"
