// Default decompositions of the composite ops into primitive ops. Every backend gets them;
// a backend with a faster kernel lists the op in `supports` and never comes here.
#pragma once
#include <cmath>

#include "ember/ops/dyn.h"

namespace ember {

template <Backend B>
typename B::Handle decompose(const Op& op, std::span<typename B::Handle> in,
                             const TensorMeta& out) {
  using C = OpCode;
  using T = detail::Dyn<B>;
  const T x(in[0]);
  const OpAttrs& a = op.attrs;
  auto keep = [&](OpCode c, const T& t) { return t.reduce(c, {a.dim}, true); };
  switch (op.code) {
    case C::Mean: {
      double n = 1;
      if (a.dims.empty()) n = static_cast<double>(x.shape().numel());
      for (int64_t d : a.dims) n *= static_cast<double>(x.shape()[d]);
      return (x.reduce(C::Sum, a.dims, a.flag) / n).handle();
    }
    case C::Softmax: {
      T e = (x - keep(C::Max, x)).exp();
      return (e / keep(C::Sum, e)).handle();
    }
    case C::LogSoftmax: {
      T shifted = x - keep(C::Max, x);
      return (shifted - keep(C::Sum, shifted.exp()).log()).handle();
    }
    case C::Gelu: return (x * 0.5 * ((x * M_SQRT1_2).erf() + 1.0)).handle();
    case C::Silu: return (x * x.sigmoid()).handle();
    case C::Softplus: {
      double beta = a.scalar.f, threshold = a.scalar2.f;
      T bx = x * beta;
      T soft = T::run(C::Log1p, {bx.exp()}) / beta;
      return bx.gt(threshold).select(x, soft).handle();
    }
    case C::Relu: return T::run(C::Maximum, {x, x.scalar(0.0)}).handle();
    case C::LogSumExp: {  // max + log(sum(exp(x - max))), with an infinite max taken as 0
      T m = x.reduce(C::Max, a.dims, true);
      T finite = m.isinf().select(m.scalar(0.0), m);
      T r = (x - finite).exp().reduce(C::Sum, a.dims, true).log() + finite;
      return (a.flag ? r : r.reshape(out.shape)).handle();
    }
    default: throw Error("[" + std::string(name(op.code)) + "] has no decomposition");
  }
}

}  // namespace ember
