// Losses (ember::nn), generic over the backend: every loss is a config (EMBER_CONFIG, so it
// round-trips through JSON) that builds a stateless loss object whose `forward` returns a
// rank-0 tensor (Reduction::Mean or Sum) and whose `forward_no_reduction` returns one loss
// per element. On Tensor<Autodiff<B>> gradients flow into every float input.
//
//   #include "ember/nn/loss.h"
//   using B = ember::Autodiff<ember::Cpu>;
//   auto ce = nn::CrossEntropyLossConfig{}.with_smoothing(0.1).init();
//   Tensor<B, 0> loss = ce.forward(logits, classes);      // logits [N, C], classes [N] (Int)
//   auto grads = loss.backward();
//   auto cfg = nn::config_from_json<nn::HuberLossConfig>(R"({"delta": 0.5, "reduction": "sum"})");
//
// Headers: loss/cross_entropy.h (CrossEntropyLoss, class or probability targets),
// loss/nll.h (NllLoss), loss/binary_cross_entropy.h (BinaryCrossEntropyLoss, probabilities
// or logits, per-class or per-element weights), loss/regression.h (MseLoss, L1Loss,
// HuberLoss, SmoothL1Loss), loss/likelihood.h (PoissonNllLoss, GaussianNllLoss),
// loss/kl_div.h (KLDivLoss), loss/margin.h (CosineEmbeddingLoss, MarginRankingLoss,
// TripletMarginLoss), loss/hinge.h (HingeEmbeddingLoss, MultiMarginLoss,
// MultiLabelSoftMarginLoss), loss/ctc.h (CtcLoss), loss/reduction.h (Reduction). docs/losses.md has
// the formulas and conventions.
//
// Mistakes in the arguments throw ShapeError, IndexError or ValueError whose message starts
// with the loss's name in brackets ("[cross_entropy] ...") and shows the shapes.
#pragma once
#include "ember/nn/loss/binary_cross_entropy.h"
#include "ember/nn/loss/cross_entropy.h"
#include "ember/nn/loss/ctc.h"
#include "ember/nn/loss/hinge.h"
#include "ember/nn/loss/kl_div.h"
#include "ember/nn/loss/likelihood.h"
#include "ember/nn/loss/margin.h"
#include "ember/nn/loss/nll.h"
#include "ember/nn/loss/reduction.h"
#include "ember/nn/loss/regression.h"
