// Default decompositions of the composite ops into primitive ops. Every backend gets them;
// a backend with a faster kernel lists the op in `supports` and never comes here.
#pragma once
#include <cmath>
#include <array>
#include <initializer_list>

#include "ember/backend/apply.h"

namespace ember {

namespace detail {

template <Backend B>
struct Composer {
  using H = typename B::Handle;
  Device dev;

  H op(OpCode c, std::initializer_list<H> in, OpAttrs a = {}) {
    std::array<H, 3> v;
    size_t n = 0;
    for (const H& h : in) v[n++] = h;
    return apply<B>(Op{c, std::move(a)}, std::span<H>(v.data(), n), dev);
  }
  H scalar(double v, DType t) {
    OpAttrs a;
    a.scalar = is_float(t) ? Scalar(v) : Scalar(static_cast<int64_t>(v));
    a.dtype = t;
    return apply<B>(Op{OpCode::Full, a}, std::span<H>(), dev);
  }
  H reduce(OpCode c, const H& x, int64_t dim) {
    OpAttrs a;
    a.dims = {dim};
    a.flag = true;
    return op(c, {x}, a);
  }
};

}  // namespace detail

template <Backend B>
typename B::Handle decompose(const Op& op, std::span<typename B::Handle> in,
                             const TensorMeta& out) {
  using C = OpCode;
  detail::Composer<B> c{B::device(in[0])};
  const auto& x = in[0];
  DType t = out.dtype;
  const auto& a = op.attrs;
  switch (op.code) {
    case C::Mean: {
      const Shape& s = B::meta(x).shape;
      int64_t n = 1;
      if (a.dims.empty()) n = s.numel();
      for (int64_t d : a.dims) n *= s[d];
      OpAttrs sa = a;
      return c.op(C::Div, {c.op(C::Sum, {x}, sa), c.scalar(static_cast<double>(n), t)});
    }
    case C::Softmax: {
      auto e = c.op(C::Exp, {c.op(C::Sub, {x, c.reduce(C::Max, x, a.dim)})});
      return c.op(C::Div, {e, c.reduce(C::Sum, e, a.dim)});
    }
    case C::LogSoftmax: {
      auto shifted = c.op(C::Sub, {x, c.reduce(C::Max, x, a.dim)});
      auto lse = c.op(C::Log, {c.reduce(C::Sum, c.op(C::Exp, {shifted}), a.dim)});
      return c.op(C::Sub, {shifted, lse});
    }
    case C::Gelu: {
      auto inner = c.op(C::Erf, {c.op(C::Mul, {x, c.scalar(M_SQRT1_2, t)})});
      auto one_plus = c.op(C::Add, {inner, c.scalar(1.0, t)});
      return c.op(C::Mul, {c.op(C::Mul, {x, c.scalar(0.5, t)}), one_plus});
    }
    case C::Silu: return c.op(C::Mul, {x, c.op(C::Sigmoid, {x})});
    case C::Softplus: {
      double beta = a.scalar.f, threshold = a.scalar2.f;
      auto bx = c.op(C::Mul, {x, c.scalar(beta, t)});
      auto soft = c.op(C::Div, {c.op(C::Log1p, {c.op(C::Exp, {bx})}), c.scalar(beta, t)});
      auto linear = c.op(C::Greater, {bx, c.scalar(threshold, t)});
      return c.op(C::Where, {linear, x, soft});
    }
    case C::Relu: return c.op(C::Maximum, {x, c.scalar(0.0, t)});
    case C::LogSumExp: {  // max + log(sum(exp(x - max))), stable for large x
      OpAttrs keep = a;
      keep.flag = true;
      auto m = c.op(C::Max, {x}, keep);
      auto finite = c.op(C::Where, {c.op(C::IsInf, {m}), c.scalar(0.0, t), m});
      auto s = c.op(C::Sum, {c.op(C::Exp, {c.op(C::Sub, {x, finite})})}, keep);
      auto r = c.op(C::Add, {c.op(C::Log, {s}), finite});
      if (a.flag) return r;
      OpAttrs shape;
      shape.shape = out.shape.dims();
      return c.op(C::Reshape, {r}, shape);
    }
    default: throw Error("[" + std::string(name(op.code)) + "] has no decomposition");
  }
}

}  // namespace ember
