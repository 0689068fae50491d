// Internal: a rank-erased tensor over backend B, for code that must work for every rank —
// decompositions and gradient rules. Each operation is one `apply<B>` call.
//
//   Dyn<B> y = (x * 0.5).exp() + x;      // scalars become rank-0 tensors of x's dtype
//   Dyn<B> s = y.sum_keep({1});           // keepdim reductions
#pragma once
#include <initializer_list>
#include <vector>

#include "ember/backend/apply.h"

namespace ember::detail {

template <Backend B>
class Dyn {
 public:
  using H = typename B::Handle;
  Dyn() = default;
  explicit Dyn(H h) : h_(std::move(h)), set_(true) {}

  bool defined() const { return set_; }
  const H& handle() const { return h_; }
  const Shape& shape() const { return B::meta(h_).shape; }
  DType dtype() const { return B::meta(h_).dtype; }
  Device device() const { return B::device(h_); }
  int64_t rank() const { return static_cast<int64_t>(shape().rank()); }

  static Dyn run(OpCode c, OpAttrs a, std::initializer_list<Dyn> in) {
    std::array<H, 4> hs;
    size_t n = 0;
    for (const Dyn& d : in) hs[n++] = d.h_;
    return Dyn(apply<B>(Op{c, std::move(a)}, std::span<H>(hs.data(), n)));
  }
  static Dyn run(OpCode c, std::initializer_list<Dyn> in) { return run(c, {}, in); }
  static Dyn full(const Shape& s, Scalar v, DType t, Device dev) {
    OpAttrs a;
    a.shape = s.dims();
    a.scalar = is_float(t) ? Scalar(v.f) : Scalar(v.as<int64_t>());
    a.dtype = t;
    return Dyn(apply<B>(Op{OpCode::Full, std::move(a)}, std::span<H>(), dev));
  }
  /// A rank-0 tensor of this tensor's dtype and device.
  Dyn scalar(double v) const { return full(Shape{}, Scalar(v), dtype(), device()); }
  Dyn zeros_like() const { return full(shape(), Scalar(0.0), dtype(), device()); }
  Dyn ones_like() const { return full(shape(), Scalar(1.0), dtype(), device()); }

  Dyn unary(OpCode c) const { return run(c, {*this}); }
  Dyn cast(DType t) const {
    if (t == dtype()) return *this;
    OpAttrs a;
    a.dtype = t;
    return run(OpCode::Cast, std::move(a), {*this});
  }
  Dyn reshape(const Shape& s) const {
    OpAttrs a;
    a.shape = s.dims();
    return run(OpCode::Reshape, std::move(a), {*this});
  }
  Dyn expand(const Shape& s) const {
    OpAttrs a;
    a.shape = s.dims();
    return run(OpCode::Expand, std::move(a), {*this});
  }
  Dyn permute(const Dims& order) const {
    OpAttrs a;
    a.dims = order;
    return run(OpCode::Permute, std::move(a), {*this});
  }
  /// Swaps the last two dims.
  Dyn mT() const {
    Dims o;
    for (int64_t i = 0; i < rank(); ++i) o.push_back(i);
    std::swap(o[rank() - 1], o[rank() - 2]);
    return permute(o);
  }
  Dyn flip(const Dims& dims) const {
    OpAttrs a;
    a.dims = dims;
    return run(OpCode::Flip, std::move(a), {*this});
  }
  Dyn reduce(OpCode c, const Dims& dims, bool keep) const {
    OpAttrs a;
    a.dims = dims;
    a.flag = keep;
    return run(c, std::move(a), {*this});
  }
  Dyn sum_keep(const Dims& dims) const { return reduce(OpCode::Sum, dims, true); }
  Dyn with_dim(OpCode c, int64_t dim, bool flag = false) const {
    OpAttrs a;
    a.dim = dim;
    a.flag = flag;
    return run(c, std::move(a), {*this});
  }
  /// Sums over broadcast dims so the result has shape `s` (the inverse of broadcasting).
  Dyn sum_to(const Shape& s) const {
    if (shape() == s) return *this;
    size_t r = shape().rank(), off = r - s.rank();
    Dims dims;
    for (size_t i = 0; i < r; ++i)
      if (i < off || (s[i - off] == 1 && shape()[i] != 1)) dims.push_back(static_cast<int64_t>(i));
    Dyn t = dims.empty() ? *this : sum_keep(dims);
    return t.shape() == s ? t : t.reshape(s);
  }

  Dyn exp() const { return unary(OpCode::Exp); }
  Dyn log() const { return unary(OpCode::Log); }
  Dyn sqrt() const { return unary(OpCode::Sqrt); }
  Dyn rsqrt() const { return unary(OpCode::Rsqrt); }
  Dyn sin() const { return unary(OpCode::Sin); }
  Dyn cos() const { return unary(OpCode::Cos); }
  Dyn sinh() const { return unary(OpCode::Sinh); }
  Dyn cosh() const { return unary(OpCode::Cosh); }
  Dyn sign() const { return unary(OpCode::Sign); }
  Dyn erf() const { return unary(OpCode::Erf); }
  Dyn sigmoid() const { return unary(OpCode::Sigmoid); }
  Dyn floor() const { return unary(OpCode::Floor); }
  Dyn matmul(const Dyn& o) const { return run(OpCode::Matmul, {*this, o}); }

  friend Dyn operator+(const Dyn& a, const Dyn& b) { return run(OpCode::Add, {a, b}); }
  friend Dyn operator-(const Dyn& a, const Dyn& b) { return run(OpCode::Sub, {a, b}); }
  friend Dyn operator*(const Dyn& a, const Dyn& b) { return run(OpCode::Mul, {a, b}); }
  friend Dyn operator/(const Dyn& a, const Dyn& b) { return run(OpCode::Div, {a, b}); }
  friend Dyn operator+(const Dyn& a, double s) { return a + a.scalar(s); }
  friend Dyn operator-(const Dyn& a, double s) { return a - a.scalar(s); }
  friend Dyn operator*(const Dyn& a, double s) { return a * a.scalar(s); }
  friend Dyn operator/(const Dyn& a, double s) { return a / a.scalar(s); }
  friend Dyn operator+(double s, const Dyn& a) { return a.scalar(s) + a; }
  friend Dyn operator-(double s, const Dyn& a) { return a.scalar(s) - a; }
  friend Dyn operator*(double s, const Dyn& a) { return a.scalar(s) * a; }
  friend Dyn operator/(double s, const Dyn& a) { return a.scalar(s) / a; }
  friend Dyn operator-(const Dyn& a) { return a.unary(OpCode::Neg); }

  Dyn eq(const Dyn& o) const { return run(OpCode::Equal, {*this, o}); }
  Dyn gt(const Dyn& o) const { return run(OpCode::Greater, {*this, o}); }
  Dyn gt(double s) const { return gt(scalar(s)); }
  Dyn ge(const Dyn& o) const { return run(OpCode::GreaterEqual, {*this, o}); }
  Dyn lt(const Dyn& o) const { return run(OpCode::Less, {*this, o}); }
  Dyn isinf() const { return unary(OpCode::IsInf); }
  Dyn isnan() const { return unary(OpCode::IsNan); }
  /// where(this (bool), a, b)
  Dyn select(const Dyn& a, const Dyn& b) const { return run(OpCode::Where, {*this, a, b}); }

 private:
  H h_{};
  bool set_ = false;
};

}  // namespace ember::detail
