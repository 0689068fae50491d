#include "ember/core/shape.h"

#include "ember/core/checked.h"
#include "ember/core/error.h"

namespace ember {

void throw_size_overflow(std::string_view what) {
  throw ShapeError(std::string(what) + " overflows int64");
}

namespace {
// The product of the dims with zeros counted as 1 (what strides need), and whether one is 0.
bool extent(const Dims& dims, int64_t& n, bool& zero) {
  n = 1;
  zero = false;
  for (int64_t d : dims) {
    if (d == 0) zero = true;
    if (d != 0 && __builtin_mul_overflow(n, d, &n)) return false;
  }
  return true;
}
}  // namespace

int64_t Shape::numel() const {
  int64_t n;
  bool zero;
  if (!extent(dims_, n, zero))
    throw ShapeError("[shape] " + to_string() + " has more elements than int64 can count");
  return zero ? 0 : n;
}

SizeFit size_fit(const Shape& s, size_t elem_size, int64_t* bytes) {
  for (int64_t d : s)
    if (d < 0) return SizeFit::NegativeDim;
  int64_t n, b;
  bool zero;
  if (!extent(s.dims(), n, zero)) return SizeFit::TooManyElements;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(elem_size), &b)) return SizeFit::TooManyBytes;
  if (bytes) *bytes = zero ? 0 : b;
  return SizeFit::Fits;
}

int64_t byte_size(const Shape& s, size_t elem_size, std::string_view op) {
  int64_t bytes = 0;
  const SizeFit fit = size_fit(s, elem_size, &bytes);
  if (fit == SizeFit::Fits) return bytes;  // on every allocation: no strings unless it fails
  std::string at = "[";  // appends: GCC 12's -Wrestrict misfires on "[" + std::string
  at.append(op).append("] ");
  switch (fit) {
    case SizeFit::Fits:
      return bytes;
    case SizeFit::NegativeDim:
      throw ValueError(at + "negative dim in shape " + s.to_string());
    case SizeFit::TooManyElements:
      throw ShapeError(at + "shape " + s.to_string() + " has more elements than int64 can count");
    case SizeFit::TooManyBytes:
      break;
  }
  throw ShapeError(at + "shape " + s.to_string() + " of " + std::to_string(elem_size) +
                   "-byte elements needs more bytes than int64 can count");
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

bool is_dense(const Shape& s, const Dims& strides) {
  int64_t expect = 1;
  for (size_t i = s.rank(); i-- > 0;) {
    if (s[i] == 0) return true;
    if (s[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= s[i];
  }
  return true;
}

Dims broadcast_strides(const Shape& s, const Dims& strides, const Shape& to) {
  size_t off = to.rank() - s.rank();
  Dims st(to.rank(), 0);
  for (size_t i = 0; i < s.rank(); ++i) st[off + i] = s[i] == 1 ? 0 : strides[i];
  return st;
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
