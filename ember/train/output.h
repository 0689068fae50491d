// What a model's train and valid steps return: the loss (which the Learner backpropagates)
// and what the metrics need, in one of a few shapes of task.
//
//   template <Backend B>
//   struct Classifier {
//     nn::Linear<B> fc;
//     EMBER_MODULE(Classifier, fc)
//     ClassificationOutput<B> step(const data::MnistBatch<B>& b) const {
//       auto logits = fc.forward(b.images.template reshape<2>({-1, 784}));
//       return {nn::CrossEntropyLossConfig{}.init().forward(logits, b.targets), logits, b.targets};
//     }
//   };
#pragma once
#include "ember/backend/extern.h"
#include "ember/tensor/tensor.h"
#include "ember/train/metrics.h"

namespace ember::train {

/// Scores [N, C] and class targets [N].
template <Backend B>
struct ClassificationOutput {
  Tensor<B, 0> loss;
  Tensor<B, 2> output;
  Tensor<B, 1, Int> targets;

  MetricInput metric_input() const;
};

/// Scores (logits) [N, C] and 0/1 targets [N, C].
template <Backend B>
struct MultiLabelOutput {
  Tensor<B, 0> loss;
  Tensor<B, 2> output;
  Tensor<B, 2, Int> targets;

  MetricInput metric_input() const;
};

/// Predictions and float targets of the same shape [N, ...]: loss-based metrics only.
template <Backend B, int D = 2>
struct RegressionOutput {
  Tensor<B, 0> loss;
  Tensor<B, D> output;
  Tensor<B, D> targets;

  MetricInput metric_input() const {
    MetricInput in;
    in.batch_size = output.dim(0);
    in.loss = loss.into_scalar();
    return in;
  }
};

/// Token scores [N * T, C] and token targets [N * T] (flattened sequences), with the number
/// of tokens that count (perplexity, accuracy ignoring padding).
template <Backend B>
struct SequenceOutput {
  Tensor<B, 0> loss;
  Tensor<B, 2> output;
  Tensor<B, 1, Int> targets;
  int64_t tokens = 0;

  MetricInput metric_input() const;
};

template <Backend B>
MetricInput ClassificationOutput<B>::metric_input() const {
  MetricInput in;
  in.batch_size = output.dim(0);
  in.num_classes = output.dim(1);
  in.loss = loss.into_scalar();
  in.scores = output.to_data().template to_vec<float>();
  in.targets = targets.to_data().template to_vec<int64_t>();
  return in;
}
template <Backend B>
MetricInput MultiLabelOutput<B>::metric_input() const {
  MetricInput in;
  in.batch_size = output.dim(0);
  in.num_classes = output.dim(1);
  in.multi_label = true;
  in.loss = loss.into_scalar();
  in.scores = output.to_data().template to_vec<float>();
  in.targets = targets.to_data().template to_vec<int64_t>();
  return in;
}
template <Backend B>
MetricInput SequenceOutput<B>::metric_input() const {
  MetricInput in = ClassificationOutput<B>{loss, output, targets}.metric_input();
  in.tokens = tokens ? tokens : in.batch_size;
  return in;
}

// Compiled once in the library for the Dispatch stacks (ember/train/instantiate.cpp).
#define EMBER_DETAIL_OUTPUT_INSTANCES(ext, B)                          \
  ext template struct EMBER_INSTANCE_API(ext) ClassificationOutput<B>; \
  ext template struct EMBER_INSTANCE_API(ext) MultiLabelOutput<B>;     \
  ext template struct EMBER_INSTANCE_API(ext) SequenceOutput<B>;
EMBER_DETAIL_OUTPUT_INSTANCES(extern, Dispatch)
EMBER_DETAIL_OUTPUT_INSTANCES(extern, AutodiffDispatch)

}  // namespace ember::train
