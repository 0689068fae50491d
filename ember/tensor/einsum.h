// Einstein summation over labelled dims (torch.einsum), built from table ops: each pair of
// operands becomes one batched matmul (labels in both and kept: batch; in both and summed:
// contracted; in one only: free), so gradients and every backend come with it.
//
//   using T2 = Tensor<Cpu, 2>;  using T3 = Tensor<Cpu, 3>;
//   T2 c = einsum<2>("ik,kj->ij", a, b);                 // matmul
//   T3 s = einsum<3>("bhd,bkd->bhk", q, k);              // batched scores
//   Tensor<Cpu, 1> d = einsum<1>("ij,ij->i", a, a2);     // row-wise dot products
//   Tensor<Cpu, 0> t = einsum<0>("i,i->", u, v);         // inner product
//   T2 o = einsum<2>("i,j->ij", u, v);                   // outer product
//
// The equation needs its "->output" part (the output's rank is the template argument); labels
// are letters, "..." and repeated labels within one operand (diagonals) are not supported.
// Labels summed away in a single operand are summed before anything is multiplied; sizes of
// one broadcast against the other operands' sizes.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "ember/ops/dyn.h"
#include "ember/tensor/tensor.h"

namespace ember {

namespace detail {

[[noreturn]] inline void einsum_error(std::string_view eq, const std::string& why) {
  throw ValueError("[einsum] " + why + " in \"" + std::string(eq) + "\"");
}

/// The operands' labels and the output's, checked against the operands' ranks.
inline std::pair<std::vector<std::string>, std::string> einsum_parse(
    std::string_view eq, const std::vector<size_t>& ranks) {
  std::string s;
  for (char c : eq)
    if (c != ' ') s += c;
  const size_t arrow = s.find("->");
  if (arrow == std::string::npos) einsum_error(eq, "needs an explicit output (\"...->out\")");
  std::vector<std::string> ins(1);
  for (char c : s.substr(0, arrow)) {
    if (c == ',') {
      ins.emplace_back();
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      ins.back() += c;
    } else {
      einsum_error(eq, std::string("label '") + c + "' is not a letter (\"...\" is not supported)");
    }
  }
  std::string out = s.substr(arrow + 2);
  if (ins.size() != ranks.size())
    einsum_error(eq, std::to_string(ins.size()) + " terms for " + std::to_string(ranks.size()) +
                         " operands");
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].size() != ranks[i])
      einsum_error(eq, "operand " + std::to_string(i) + " has rank " + std::to_string(ranks[i]) +
                           ", its term \"" + ins[i] + "\" " + std::to_string(ins[i].size()) +
                           " labels");
    for (size_t a = 0; a < ins[i].size(); ++a)
      if (ins[i].find(ins[i][a], a + 1) != std::string::npos)
        einsum_error(eq, std::string("label '") + ins[i][a] + "' repeats within operand " +
                             std::to_string(i) + " (diagonals are not supported)");
  }
  for (size_t a = 0; a < out.size(); ++a) {
    bool found = false;
    for (const auto& t : ins) found = found || t.find(out[a]) != std::string::npos;
    if (!found || out.find(out[a], a + 1) != std::string::npos)
      einsum_error(eq, std::string("output label '") + out[a] +
                           (found ? "' repeats" : "' is in no operand"));
  }
  return {ins, out};
}

template <Backend B>
struct Labelled {
  Dyn<B> t;
  std::string labels;
};

/// t with its dims reordered as `order` (a permutation of t.labels).
template <Backend B>
Labelled<B> einsum_permute(const Labelled<B>& x, const std::string& order) {
  if (order == x.labels) return x;
  Dims p;
  for (char c : order) p.push_back(static_cast<int64_t>(x.labels.find(c)));
  return {x.t.permute(p), order};
}

/// Sums away the labels of x that `keep` does not hold.
template <Backend B>
Labelled<B> einsum_sum_out(const Labelled<B>& x, const std::string& keep) {
  Dims dims;
  std::string rest;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (keep.find(x.labels[i]) == std::string::npos)
      dims.push_back(static_cast<int64_t>(i));
    else
      rest += x.labels[i];
  }
  if (dims.empty()) return x;
  return {x.t.reduce(OpCode::Sum, dims, false), rest};
}

/// The size of label c in x (1 where x lacks it).
template <Backend B>
int64_t einsum_size(const Labelled<B>& x, char c) {
  const size_t i = x.labels.find(c);
  return i == std::string::npos ? 1 : x.t.shape()[i];
}

/// a and b contracted into the labels `keep` (those the output or a later operand needs), as
/// one batched matmul [batch, M, K] x [batch, K, N].
template <Backend B>
Labelled<B> einsum_pair(Labelled<B> a, Labelled<B> b, const std::string& keep) {
  std::string batch, left, right, contr;
  for (char c : a.labels) {
    const bool in_b = b.labels.find(c) != std::string::npos,
               kept = keep.find(c) != std::string::npos;
    (in_b ? (kept ? batch : contr) : left) += c;
  }
  for (char c : b.labels)
    if (a.labels.find(c) == std::string::npos) right += c;
  auto product = [&](const Labelled<B>& x, const std::string& ls) {
    int64_t n = 1;
    for (char c : ls) n *= einsum_size(x, c);
    return n;
  };
  // batch sizes broadcast: expand the operand whose size is 1
  Dims batch_shape;
  for (char c : batch) batch_shape.push_back(std::max(einsum_size(a, c), einsum_size(b, c)));
  auto lay = [&](const Labelled<B>& x, const std::string& mid, const std::string& last) {
    Labelled<B> p = einsum_permute(x, batch + mid + last);
    Dims s = batch_shape;
    for (char c : mid + last) s.push_back(einsum_size(p, c));
    Dyn<B> t = p.t.shape() == Shape(s) ? p.t : p.t.expand(Shape(s));
    Dims flat{1, product(p, mid), product(p, last)};
    for (int64_t d : batch_shape) flat[0] *= d;
    return t.reshape(Shape(flat));
  };
  Dyn<B> m = lay(a, left, contr).matmul(lay(b, contr, right));  // [batch, M, N]
  Dims s = batch_shape;
  for (char c : left) s.push_back(einsum_size(a, c));
  for (char c : right) s.push_back(einsum_size(b, c));
  return {m.reshape(Shape(s)), batch + left + right};
}

/// Contracts labelled operands (labels checked by einsum_parse) into the output labels.
template <Backend B>
Dyn<B> einsum_run(std::vector<Labelled<B>> xs, const std::string& out) {
  using L = Labelled<B>;
  // the labels still needed after operand k: the output's and those of operands k + 1, ...
  auto needed_after = [&](size_t k) {
    std::string n = out;
    for (size_t j = k + 1; j < xs.size(); ++j) n += xs[j].labels;
    return n;
  };
  for (size_t k = 0; k < xs.size(); ++k) {  // labels only one operand has, summed first
    std::string others = out;
    for (size_t j = 0; j < xs.size(); ++j)
      if (j != k) others += xs[j].labels;
    xs[k] = einsum_sum_out(xs[k], others);
  }
  L acc = xs[0];
  for (size_t k = 1; k < xs.size(); ++k) acc = einsum_pair(acc, xs[k], needed_after(k));
  acc = einsum_sum_out(acc, out);
  acc = einsum_permute(acc, out);
  return acc.t;
}
}  // namespace detail

/// torch.einsum with an explicit output: einsum<DOut>("ij,jk->ik", a, b).
template <int DOut, Backend B, int... Ds, TensorKind K>
Tensor<B, DOut, K> einsum(std::string_view equation, const Tensor<B, Ds, K>&... operands) {
  static_assert(sizeof...(Ds) >= 1, "einsum needs at least one operand");
  using L = detail::Labelled<B>;
  auto [terms, out] = detail::einsum_parse(equation, {static_cast<size_t>(Ds)...});
  if (out.size() != static_cast<size_t>(DOut))
    detail::einsum_error(equation, "the output \"" + out + "\" has " + std::to_string(out.size()) +
                                       " labels for a result of rank " + std::to_string(DOut));
  std::vector<L> xs;
  size_t i = 0;
  (xs.push_back(L{detail::Dyn<B>(operands.handle()), terms[i++]}), ...);
  return Tensor<B, DOut, K>(detail::einsum_run(std::move(xs), out).handle());
}

}  // namespace ember
