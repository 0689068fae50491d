// Reduction: how a loss turns per-element losses into its result, and the helpers every loss
// header shares (rank-0 results, argument checks, config vectors as tensors).
//
//   auto loss = nn::MseLossConfig{}.with_reduction(nn::Reduction::Sum).init();
//   Tensor<B, 0> l = loss.forward(pred, target);          // rank 0 for Mean and Sum
//   Tensor<B, 2> each = loss.forward_no_reduction(pred, target);
//
// In JSON a Reduction is "mean", "sum" or "none"; any other string is an error naming the
// field and the valid names (as for every enum of a config: EMBER_CONFIG_ENUM).
#pragma once
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/nn/config.h"
#include "ember/tensor/activation.h"
#include "ember/tensor/tensor.h"

namespace ember::nn {

/// Mean and Sum give a rank-0 loss; None keeps one loss per element (forward_no_reduction).
enum class Reduction { Mean, Sum, None };

inline const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
    case Reduction::None:
      return "none";
  }
  return "?";
}

EMBER_CONFIG_ENUM(Reduction, {Reduction::Mean, "mean"}, {Reduction::Sum, "sum"},
                  {Reduction::None, "none"})

namespace loss_detail {

[[noreturn]] inline void shape_error(const char* loss, const std::string& why) {
  throw ShapeError(std::string("[") + loss + "] " + why);
}
[[noreturn]] inline void value_error(const char* loss, const std::string& why) {
  throw ValueError(std::string("[") + loss + "] " + why);
}

/// Throws ShapeError unless `a` and `b` have the same shape.
template <class TA, class TB>
void same_shape(const char* loss, const char* na, const TA& a, const char* nb, const TB& b) {
  if (a.shape() != b.shape())
    shape_error(loss, std::string(na) + " " + a.shape().to_string() + " and " + nb + " " +
                          b.shape().to_string() + " must have the same shape");
}

/// A one-element rank-1 tensor as rank 0.
template <Backend B>
Tensor<B, 0> rank0(const Tensor<B, 1>& t) {
  return t.template reshape<0>(std::array<int64_t, 0>{});
}

/// Mean or sum of per-element losses; None has no rank-0 result.
template <Backend B, int D>
Tensor<B, 0> reduce(const char* loss, const Tensor<B, D>& per, Reduction r) {
  switch (r) {
    case Reduction::Mean:
      return rank0(per.mean());
    case Reduction::Sum:
      return rank0(per.sum());
    case Reduction::None:
      break;
  }
  value_error(loss, "reduction \"none\" has no rank-0 result: call forward_no_reduction");
}

/// A config vector as a rank-1 tensor of `like`'s dtype and device.
template <Backend B, int D>
Tensor<B, 1> vector_like(const std::vector<double>& v, const Tensor<B, D>& like) {
  return Tensor<B, 1>::template from_values<double>(v, Shape{static_cast<int64_t>(v.size())},
                                                    like.device())
      .cast(like.dtype());
}

/// A per-class vector (weights) checked against the size of `like`'s last dim, shaped to
/// broadcast along it: [1, ..., 1, C].
template <Backend B, int D>
Tensor<B, D> last_dim_vector(const char* loss, const char* what, const std::vector<double>& v,
                             const Tensor<B, D>& like) {
  int64_t c = D == 0 ? 1 : like.dim(-1);
  if (static_cast<int64_t>(v.size()) != c)
    shape_error(loss, std::string(what) + " has " + std::to_string(v.size()) +
                          " values; the last dim of " + like.shape().to_string() + " has " +
                          std::to_string(c));
  return vector_like(v, like).template reshape<D>([&] {
    std::array<int64_t, D> s{};
    s.fill(1);
    if constexpr (D > 0) s[D - 1] = c;
    return s;
  }());
}

/// Throws ValueError unless every element of `t` is -1 or 1 (ranking and embedding targets).
template <Backend B, int D>
void check_signs(const char* loss, const Tensor<B, D, Int>& t) {
  if (t.numel() == 0) return;
  auto bad = t.abs().not_equal_elem(int64_t{1}).any().template into_scalar<bool>();
  if (bad) value_error(loss, "target " + t.shape().to_string() + " must hold only -1 and 1");
}

inline void check_float(const char* loss, DType t) {
  if (t != DType::F32 && t != DType::F64)
    throw DTypeError(std::string("[") + loss + "] needs f32 or f64 inputs, not " +
                     std::string(name(t)));
}

}  // namespace loss_detail
}  // namespace ember::nn
