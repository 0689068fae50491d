// The op suite's harness: each golden case (tests/ops/goldens.json, written by
// tools/gen_goldens.py from PyTorch) names an op key; golden_cases.cpp maps each key to the
// ember call that must reproduce PyTorch's result. Cases run on every available device.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/ember.h"

namespace ember::test {

using B = Dispatch;

struct Args {
  std::vector<DispatchHandle> in;
  const nlohmann::json* attrs;

  template <int D, TensorKind K = Float>
  Tensor<B, D, K> t(size_t i) const { return Tensor<B, D, K>(in.at(i)); }
  template <int D>
  Tensor<B, D> f(size_t i) const { return Tensor<B, D>(in.at(i)); }
  template <int D>
  Tensor<B, D, Int> i(size_t i) const { return Tensor<B, D, Int>(in.at(i)); }
  template <int D>
  Tensor<B, D, Bool> b(size_t i) const { return Tensor<B, D, Bool>(in.at(i)); }
  int64_t ia(const char* k) const { return attrs->at(k).get<int64_t>(); }
  double fa(const char* k) const { return attrs->at(k).get<double>(); }
  bool ba(const char* k) const { return attrs->at(k).get<bool>(); }
  std::vector<int64_t> va(const char* k) const { return attrs->at(k).get<std::vector<int64_t>>(); }
  size_t rank(size_t i) const { return B::meta(in.at(i)).shape.rank(); }
};

using OpFn = std::function<DispatchHandle(const Args&)>;
std::map<std::string, OpFn>& golden_ops();

template <class K, class F>
DispatchHandle with_rank(const Args& a, size_t rank, F& f) {
  switch (rank) {
    case 0: return f.template operator()<0, K>(a.t<0, K>(0)).handle();
    case 1: return f.template operator()<1, K>(a.t<1, K>(0)).handle();
    case 2: return f.template operator()<2, K>(a.t<2, K>(0)).handle();
    case 3: return f.template operator()<3, K>(a.t<3, K>(0)).handle();
    case 4: return f.template operator()<4, K>(a.t<4, K>(0)).handle();
    default: throw ValueError("[golden] rank > 4 not wired");
  }
}

/// Calls f.template operator()<D, K>(x) where x is input 0 as Tensor<B, D, K>; D is its rank
/// (0..4) and K the first of Ks that holds its dtype.
template <class... Ks, class F>
DispatchHandle each(const Args& a, F f) {
  DType t = B::meta(a.in.at(0)).dtype;
  DispatchHandle out;
  bool done = ((Ks::holds(t) ? (out = with_rank<Ks>(a, a.rank(0), f), true) : false) || ...);
  if (!done) throw DTypeError("[golden] op not wired for " + std::string(name(t)));
  return out;
}

}  // namespace ember::test
