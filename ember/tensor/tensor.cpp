#include "ember/tensor/tensor.h"

namespace ember::detail {

void tensor_rank_error(int rank, const Shape& got) {
  throw ShapeError("[tensor] rank-" + std::to_string(rank) + " tensor given shape " +
                   got.to_string());
}

void tensor_kind_error(DType got) {
  throw DTypeError("[tensor] kind does not hold " + std::string(name(got)));
}

}  // namespace ember::detail
