// The headers most ember programs include, gathered for a precompiled header: parsing them is
// about half of what a translation unit with a model and a training loop costs to compile
// (measured in docs/build-time.md), so a program that precompiles them rebuilds after a model
// edit in about half the time. Include nothing of your own here: the header must not change
// when your model does.
//
//   target_precompile_headers(my_app PRIVATE <ember/pch.h>)   # CMake, after find_package(ember)
#pragma once
#include "ember/data/batcher.h"
#include "ember/data/loader.h"
#include "ember/ember.h"
#include "ember/nn/layers/conv.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/layers/pool.h"
#include "ember/nn/loss/cross_entropy.h"
#include "ember/nn/record.h"
#include "ember/optim.h"
#include "ember/train/learner.h"
#include "ember/train/output.h"
