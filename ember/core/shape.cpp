#include "ember/core/shape.h"

#include "ember/core/error.h"

namespace ember {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

Dims contiguous_strides(const Shape& s) {
  Dims st(s.rank());
  int64_t acc = 1;
  for (size_t i = s.rank(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i] > 0 ? s[i] : 1;
  }
  return st;
}

int64_t wrap_dim(int64_t dim, int64_t rank, std::string_view op) {
  int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r)
    throw IndexError("[" + std::string(op) + "] dim " + std::to_string(dim) +
                     " out of range for rank " + std::to_string(rank));
  return dim < 0 ? dim + r : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  size_t r = std::max(a.rank(), b.rank());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.rank() ? 1 : a[i - (r - a.rank())];
    int64_t db = i < r - b.rank() ? 1 : b[i - (r - b.rank())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError("[" + std::string(op) + "] shapes do not broadcast: " + a.to_string() +
                       " and " + b.to_string());
    out[i] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

}  // namespace ember
