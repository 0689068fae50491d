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

/// The inputs and attributes of one case, as handles of backend B.
template <Backend B>
struct Args {
  std::vector<typename B::Handle> in;
  const nlohmann::json* attrs;

  template <int D, TensorKind K = Float>
  Tensor<B, D, K> t(size_t i) const {
    return Tensor<B, D, K>(in.at(i));
  }
  template <int D>
  Tensor<B, D> f(size_t i) const {
    return Tensor<B, D>(in.at(i));
  }
  template <int D>
  Tensor<B, D, Int> i(size_t i) const {
    return Tensor<B, D, Int>(in.at(i));
  }
  template <int D>
  Tensor<B, D, Bool> b(size_t i) const {
    return Tensor<B, D, Bool>(in.at(i));
  }
  int64_t ia(const char* k) const { return attrs->at(k).get<int64_t>(); }
  double fa(const char* k) const { return attrs->at(k).get<double>(); }
  bool ba(const char* k) const { return attrs->at(k).get<bool>(); }
  std::vector<int64_t> va(const char* k) const { return attrs->at(k).get<std::vector<int64_t>>(); }
  size_t rank(size_t i) const { return B::meta(in.at(i)).shape.rank(); }
};

/// The parsed goldens.json.
const nlohmann::json& golden_file();
/// A tensor of the file ({"dtype", "shape", "data"}; non-finite numbers as strings).
TensorData golden_tensor(const nlohmann::json& t);

/// A case's inputs on `dev`; "transposed" inputs become non-contiguous views.
template <Backend B>
Args<B> load_inputs(const nlohmann::json& c, Device dev, DType float_as = DType::F32) {
  Args<B> args{{}, &c.at("attrs")};
  for (const auto& in : c.at("inputs")) {
    TensorData d = golden_tensor(in);
    if (float_as != DType::F32 && d.dtype() == DType::F32) d = d.convert(float_as);
    typename B::Handle h = B::from_data(d, dev);
    if (in.value("layout", "contiguous") ==
        "transposed") {  // stored with the last two dims swapped
      Op sw{OpCode::Permute, {}};
      size_t r = d.shape().rank();
      for (size_t k = 0; k < r; ++k) sw.attrs.dims.push_back(static_cast<int64_t>(k));
      std::swap(sw.attrs.dims[r - 1], sw.attrs.dims[r - 2]);
      std::array<typename B::Handle, 1> hs{h};
      h = apply<B>(sw, std::span<typename B::Handle>(hs));
    }
    args.in.push_back(std::move(h));
  }
  return args;
}

template <Backend B>
using OpFn = std::function<typename B::Handle(const Args<B>&)>;
/// The ember call for each op key; instantiated for Dispatch and Autodiff<Dispatch>.
template <Backend B>
std::map<std::string, OpFn<B>>& golden_ops();

template <class K, Backend B, class F>
typename B::Handle with_rank(const Args<B>& a, size_t rank, F& f) {
  switch (rank) {
    case 0:
      return f.template operator()<0, K>(a.template t<0, K>(0)).handle();
    case 1:
      return f.template operator()<1, K>(a.template t<1, K>(0)).handle();
    case 2:
      return f.template operator()<2, K>(a.template t<2, K>(0)).handle();
    case 3:
      return f.template operator()<3, K>(a.template t<3, K>(0)).handle();
    case 4:
      return f.template operator()<4, K>(a.template t<4, K>(0)).handle();
    default:
      throw ValueError("[golden] rank > 4 not wired");
  }
}

/// Calls f.template operator()<D, K>(x) where x is input 0 as Tensor<B, D, K>; D is its rank
/// (0..4) and K the first of Ks that holds its dtype.
template <class... Ks, Backend B, class F>
typename B::Handle each(const Args<B>& a, F f) {
  DType t = B::meta(a.in.at(0)).dtype;
  typename B::Handle out;
  bool done = ((Ks::holds(t) ? (out = with_rank<Ks>(a, a.rank(0), f), true) : false) || ...);
  if (!done) throw DTypeError("[golden] op not wired for " + std::string(name(t)));
  return out;
}

}  // namespace ember::test
