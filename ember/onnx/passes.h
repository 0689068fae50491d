// Graph passes over ember's ONNX IR: what the runtime (and the code generator) run before
// executing a model. Each keeps the graph's outputs exactly as they were (up to rounding of
// the folded arithmetic) and only rewrites what it can prove equivalent.
//
//   auto model = ember::onnx::load_model("model.onnx");
//   ember::onnx::PassReport r = ember::onnx::optimize(model);
//   r.to_string();   // "folded 12 constant nodes, 3 conv+batch-norm pairs, ..."
//
// - fold_constants: a node whose inputs are all constants (initializers that are not graph
//  inputs, Constant nodes, earlier folded values) is run once at load time and becomes an
//  initializer; Shape of a value whose shape is fully known becomes a constant.
// - fold_conv_batch_norm: Conv followed by an inference BatchNormalization (constant
//  parameters, the conv's output used by nothing else) becomes one Conv with scaled
//  weights and a bias.
// - fuse_matmul_add: MatMul by a constant matrix followed by Add of a constant bias becomes
//  one ember.Linear node.
// - fuse_attention: MatMul(q, k^T) scaled, Softmax over the last axis and MatMul by v
//  become one ember.Attention node (ember's attention op).
// - fold_integer_weight_sums: MatMulInteger by a constant weight, with a zero point for its
//  input, becomes ember.MatMulInteger with the weight's column sums (which the zero point's term
//  needs) made once at load time, not on every run.
// - eliminate_common: nodes with the same operator, inputs and attributes are computed once.
// - eliminate_dead: nodes and initializers that no graph output depends on are dropped.
#pragma once
#include <string>

#include "ember/core/export.h"
#include "ember/onnx/model.h"

namespace ember::onnx {

struct PassOptions {
  bool fold_constants = true;
  bool fold_conv_batch_norm = true;
  bool fuse_matmul_add = true;
  bool fuse_attention = true;
  bool fold_integer_weight_sums = true;
  bool eliminate_common = true;
  bool eliminate_dead = true;
  /// Constant folding leaves values larger than this as nodes (a ConstantOfShape of a big
  /// shape stays a node instead of becoming a large initializer).
  int64_t max_folded_bytes = int64_t{64} << 20;
};

/// What the passes did, by count.
struct EMBER_API PassReport {
  int folded = 0, conv_bn = 0, linear = 0, attention = 0, int_sums = 0, common = 0, dead = 0;
  std::string to_string() const;
};

/// Runs the enabled passes on the main graph (subgraphs are left as they are).
EMBER_API PassReport optimize(Model& model, const PassOptions& options = {});

}  // namespace ember::onnx
