// ONNX indexing operators: Gather (and Elements, ND), Scatter (Elements, ND), OneHot,
// NonZero, Compress, Unique, ReverseSequence, Einsum and Det. Negative indices count from the
// end, as ONNX says. Operators whose output shape depends on the data (NonZero, Compress,
// Unique) read what decides it on the host.
#include <algorithm>
#include <map>
#include <numeric>

#include "ember/onnx/ops/context.h"
#include "ember/tensor/einsum.h"
#include "ember/tensor/linalg_solve.h"

namespace ember::onnx::detail {

namespace {

/// Indices with negatives wrapped by n (a tensor of the same shape, i64).
template <Backend B>
Tn<B> wrap_indices(const Tn<B>& idx, int64_t n) {
  Tn<B> i = idx.cast(DType::I64);
  return where(i.lt(scalar_of(i, 0.0)), i + scalar_of(i, static_cast<double>(n)), i);
}

template <Backend B>
Tn<B> index_select(const Tn<B>& x, int64_t axis, const Tn<B>& flat) {
  OpAttrs a;
  a.dim = axis;
  return op<B>(OpCode::IndexSelect, std::move(a), {x, flat});
}

template <Backend B>
std::vector<RValue<B>> gather(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t axis = norm_axis(c, c.attr_i("axis", 0), x.rank());
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  Tn<B> idx = wrap_indices(c.in(1), n);
  const Dims id = dims_of(idx);
  Tn<B> flat = reshape(idx, {idx.shape().numel()});
  Tn<B> y = index_select(x, axis, flat);
  Dims out;
  const Dims xd = dims_of(x);
  for (int64_t i = 0; i < axis; ++i) out.push_back(xd[static_cast<size_t>(i)]);
  for (int64_t d : id) out.push_back(d);
  for (int64_t i = axis + 1; i < x.rank(); ++i) out.push_back(xd[static_cast<size_t>(i)]);
  return one(reshape(y, out));
}

template <Backend B>
std::vector<RValue<B>> gather_elements(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t axis = norm_axis(c, c.attr_i("axis", 0), x.rank());
  Tn<B> idx = wrap_indices(c.in(1), x.shape()[static_cast<size_t>(axis)]);
  OpAttrs a;
  a.dim = axis;
  return one(op<B>(OpCode::Gather, std::move(a), {x, idx}));
}

/// x reshaped to [batch, prod(the k indexed dims), rest...] and indices [batch, L, k] turned
/// into linear positions [batch, L] over those k dims.
template <Backend B>
struct NdLayout {
  Tn<B> data, linear;
  Dims batch, lead, rest;
};

template <Backend B>
NdLayout<B> nd_layout(const Ctx<B>& c, const Tn<B>& x, const Tn<B>& indices, int64_t b) {
  const Dims xd = dims_of(x), id = dims_of(indices);
  if (b < 0 || static_cast<int64_t>(id.size()) <= b)
    c.fail("indices " + indices.shape().to_string() + " need more dims than batch_dims " +
           std::to_string(b));
  const int64_t k = id.back();
  if (b + k > x.rank()) c.fail("indices' last dim is too large for the data");
  NdLayout<B> l;
  int64_t bn = 1, m = 1;
  for (int64_t i = 0; i < b; ++i) {
    l.batch.push_back(xd[static_cast<size_t>(i)]);
    bn *= xd[static_cast<size_t>(i)];
  }
  Dims strides(static_cast<size_t>(k));
  for (int64_t i = k - 1; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = m;
    m *= xd[static_cast<size_t>(b + i)];
  }
  for (int64_t i = b + k; i < x.rank(); ++i) l.rest.push_back(xd[static_cast<size_t>(i)]);
  for (size_t i = static_cast<size_t>(b); i + 1 < id.size(); ++i) l.lead.push_back(id[i]);
  int64_t ln = 1;
  for (int64_t d : l.lead) ln *= d;
  Dims data_shape{bn, m};
  for (int64_t d : l.rest) data_shape.push_back(d);
  l.data = reshape(x, data_shape);
  Tn<B> idx = reshape(indices.cast(DType::I64), {bn, ln, k});
  std::vector<int64_t> sizes, st;
  for (int64_t i = 0; i < k; ++i) {
    sizes.push_back(xd[static_cast<size_t>(b + i)]);
    st.push_back(strides[static_cast<size_t>(i)]);
  }
  Tn<B> n = reshape(int_tensor<B>(sizes, x.device()), {1, 1, k});
  Tn<B> s = reshape(int_tensor<B>(st, x.device()), {1, 1, k});
  Tn<B> wrapped = where(idx.lt(scalar_of(idx, 0.0)), idx + n, idx);
  l.linear = reduce(OpCode::Sum, wrapped * s, {2}, false);  // [bn, ln]
  return l;
}

/// [bn, ln] positions -> an index for Gather/Scatter on dim 1 of [bn, m, rest...].
template <Backend B>
Tn<B> nd_index(const NdLayout<B>& l) {
  Dims d = dims_of(l.linear);
  Dims full = d;
  for (int64_t r : l.rest) {
    d.push_back(1);
    full.push_back(r);
  }
  return expand(reshape(l.linear, d), full);
}

template <Backend B>
std::vector<RValue<B>> gather_nd(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t b = c.attr_i("batch_dims", 0);
  NdLayout<B> l = nd_layout(c, x, c.in(1), b);
  OpAttrs a;
  a.dim = 1;
  Tn<B> y = op<B>(OpCode::Gather, std::move(a), {l.data, nd_index(l)});
  Dims out = l.batch;
  for (int64_t d : l.lead) out.push_back(d);
  for (int64_t d : l.rest) out.push_back(d);
  return one(reshape(y, out));
}

/// Scatter along `axis` with one of ONNX's reductions: none and add run the scatter op;
/// mul, max and min (which the op table has no scatter for) combine on the host.
template <Backend B>
Tn<B> scatter(const Ctx<B>& c, const Tn<B>& x, int64_t axis, const Tn<B>& idx, const Tn<B>& upd,
              const std::string& reduction) {
  OpAttrs a;
  a.dim = axis;
  if (reduction == "none" || reduction == "add") {
    a.flag = reduction == "add";
    return op<B>(OpCode::Scatter, std::move(a), {x, idx, upd});
  }
  if (reduction != "mul" && reduction != "max" && reduction != "min")
    c.fail("reduction \"" + reduction + "\" is not one of none, add, mul, max, min");
  auto xv = host_floats(x);
  const auto iv = host_ints(idx);
  const auto uv = host_floats(upd);
  const Dims xd = dims_of(x), id = dims_of(idx);
  const size_t r = xd.size();
  std::vector<int64_t> pos(r, 0);
  for (size_t k = 0; k < iv.size(); ++k) {
    int64_t rem = static_cast<int64_t>(k), at = 0, stride = 1;
    for (size_t d = r; d-- > 0;) {
      pos[d] = rem % id[d];
      rem /= id[d];
    }
    if (iv[k] < 0 || iv[k] >= xd[static_cast<size_t>(axis)])
      c.fail("index " + std::to_string(iv[k]) + " is out of range for " + Shape(xd).to_string());
    pos[static_cast<size_t>(axis)] = iv[k];
    for (size_t d = r; d-- > 0;) {
      at += pos[d] * stride;
      stride *= xd[d];
    }
    double& t = xv[static_cast<size_t>(at)];
    t = reduction == "mul"   ? t * uv[k]
        : reduction == "max" ? std::max(t, uv[k])
                             : std::min(t, uv[k]);
  }
  TensorData out(Shape(xd), x.dtype());
  convert_elements(xv.data(), DType::F64, out.bytes().data(), x.dtype(), xv.size());
  return constant<B>(out, x.device());
}

template <Backend B>
std::vector<RValue<B>> scatter_elements(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t axis = norm_axis(c, c.attr_i("axis", 0), x.rank());
  Tn<B> idx = wrap_indices(c.in(1), x.shape()[static_cast<size_t>(axis)]);
  return one(scatter(c, x, axis, idx, c.in(2), c.attr_s("reduction", "none")));
}

template <Backend B>
std::vector<RValue<B>> scatter_nd(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  NdLayout<B> l = nd_layout(c, x, c.in(1), 0);
  Dims ud = dims_of(l.linear);
  for (int64_t r : l.rest) ud.push_back(r);
  Tn<B> upd = reshape(c.in(2), ud);
  Tn<B> y = scatter(c, l.data, 1, nd_index(l), upd, c.attr_s("reduction", "none"));
  return one(reshape(y, dims_of(x)));
}

template <Backend B>
std::vector<RValue<B>> one_hot(Ctx<B>& c) {
  const Tn<B>& idx = c.in(0);
  const auto depth_v = c.floats(1);
  if (depth_v.size() != 1) c.fail("depth must hold one value");
  if (!(depth_v[0] >= 1 && depth_v[0] <= 9e18)) c.fail("depth must be a positive count");
  const auto depth = static_cast<int64_t>(depth_v[0]);
  Dims out_dims = dims_of(idx);
  out_dims.push_back(depth);
  check_size(out_dims, DType::I64);  // before the host vector of depth entries
  const Tn<B>& values = c.in(2);
  if (values.shape().numel() != 2) c.fail("values must hold [off, on]");
  const int64_t r = idx.rank() + 1;
  const int64_t axis = norm_axis(c, c.attr_i("axis", -1), r);
  Tn<B> i =
      is_float(idx.dtype()) ? idx.unary(OpCode::Trunc).cast(DType::I64) : idx.cast(DType::I64);
  i = wrap_indices(i, depth);
  std::vector<int64_t> ar(static_cast<size_t>(depth));
  std::iota(ar.begin(), ar.end(), 0);
  Dims ad(static_cast<size_t>(r), 1);
  ad[static_cast<size_t>(axis)] = depth;
  Tn<B> pos = reshape(int_tensor<B>(ar, c.device()), ad);
  Tn<B> hot = pos.eq(unsqueeze(i, axis));
  Tn<B> off = slice_axis(reshape(values, {2}), 0, 0, 1, 1),
        on = slice_axis(reshape(values, {2}), 0, 1, 2, 1);
  return one(where(hot, reshape(on, {}), reshape(off, {})));
}

template <Backend B>
std::vector<RValue<B>> non_zero(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const auto v = host_floats(x);
  const Dims d = dims_of(x);
  const int64_t r = x.rank();
  std::vector<int64_t> hits;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != 0) hits.push_back(static_cast<int64_t>(i));
  const auto n = static_cast<int64_t>(hits.size());
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(r, 1) * n));
  for (int64_t j = 0; j < n; ++j) {
    int64_t rem = hits[static_cast<size_t>(j)];
    for (int64_t a = r - 1; a >= 0; --a) {
      out[static_cast<size_t>(a * n + j)] = rem % d[static_cast<size_t>(a)];
      rem /= d[static_cast<size_t>(a)];
    }
  }
  if (r == 0)
    return one(reshape(int_tensor<B>(std::vector<int64_t>(static_cast<size_t>(n), 0), c.device()),
                       {0, n}));
  return one(reshape(int_tensor<B>(out, c.device()), {r, n}));
}

template <Backend B>
std::vector<RValue<B>> compress(Ctx<B>& c) {
  Tn<B> x = c.in(0);
  const auto cond = host_ints(c.in(1));
  int64_t axis = 0;
  if (c.has_attr("axis")) {
    axis = norm_axis(c, c.attr_i("axis", 0), x.rank());
  } else {
    x = reshape(x, {x.shape().numel()});
  }
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  std::vector<int64_t> keep;
  for (size_t i = 0; i < cond.size() && static_cast<int64_t>(i) < n; ++i)
    if (cond[i]) keep.push_back(static_cast<int64_t>(i));
  return one(index_select(x, axis, int_tensor<B>(keep, c.device())));
}

template <Backend B>
std::vector<RValue<B>> unique(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const bool sorted = c.attr_i("sorted", 1) != 0;
  // Slices along the axis (elements when there is none), compared as rows of values.
  Tn<B> src = x;
  int64_t axis = 0;
  if (c.has_attr("axis"))
    axis = norm_axis(c, c.attr_i("axis", 0), x.rank());
  else
    src = reshape(x, {x.shape().numel()});
  const int64_t n = src.shape()[static_cast<size_t>(axis)];
  Dims order_dims{axis};
  for (int64_t i = 0; i < src.rank(); ++i)
    if (i != axis) order_dims.push_back(i);
  const auto v = host_floats(permute(src, order_dims));
  const size_t width = n ? v.size() / static_cast<size_t>(n) : 0;
  auto row = [&](int64_t i) {
    return std::vector<double>(
        v.begin() + static_cast<long>(i * static_cast<int64_t>(width)),
        v.begin() + static_cast<long>((i + 1) * static_cast<int64_t>(width)));
  };
  std::vector<int64_t> first;  // first occurrence of each distinct row, in order of appearance
  std::map<std::vector<double>, int64_t> slot;
  std::vector<int64_t> slot_of(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto [it, fresh] = slot.emplace(row(i), static_cast<int64_t>(first.size()));
    if (fresh) first.push_back(i);
    slot_of[static_cast<size_t>(i)] = it->second;
  }
  std::vector<int64_t> order(first.size());
  std::iota(order.begin(), order.end(), 0);
  if (sorted)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return row(first[static_cast<size_t>(a)]) < row(first[static_cast<size_t>(b)]);
    });
  std::vector<int64_t> rank_of(order.size());
  for (size_t k = 0; k < order.size(); ++k)
    rank_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
  std::vector<int64_t> indices, inverse(static_cast<size_t>(n)), counts(order.size(), 0);
  for (int64_t o : order) indices.push_back(first[static_cast<size_t>(o)]);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = rank_of[static_cast<size_t>(slot_of[static_cast<size_t>(i)])];
    inverse[static_cast<size_t>(i)] = k;
    ++counts[static_cast<size_t>(k)];
  }
  Tn<B> idx = int_tensor<B>(indices, c.device());
  return {RValue<B>::of(index_select(src, axis, idx)), RValue<B>::of(idx),
          RValue<B>::of(int_tensor<B>(inverse, c.device())),
          RValue<B>::of(int_tensor<B>(counts, c.device()))};
}

template <Backend B>
std::vector<RValue<B>> reverse_sequence(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t ta = c.attr_i("time_axis", 0), ba = c.attr_i("batch_axis", 1);
  if (x.rank() < 2 || (ta != 0 && ta != 1) || ba != 1 - ta)
    c.fail("time_axis and batch_axis must be 0 and 1 (either way round)");
  const auto lens = c.ints(1);
  const int64_t t = x.shape()[static_cast<size_t>(ta)], b = x.shape()[static_cast<size_t>(ba)];
  if (static_cast<int64_t>(lens.size()) != b) c.fail("sequence_lens needs one entry per batch");
  std::vector<int64_t> idx(static_cast<size_t>(t * b));
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < b; ++j) {
      const int64_t len = lens[static_cast<size_t>(j)];
      const int64_t src = i < len ? len - 1 - i : i;
      idx[static_cast<size_t>(ta == 0 ? i * b + j : j * t + i)] = src;
    }
  Dims id(static_cast<size_t>(x.rank()), 1);
  id[static_cast<size_t>(ta)] = t;
  id[static_cast<size_t>(ba)] = b;
  Tn<B> index = expand(reshape(int_tensor<B>(idx, c.device()), id), dims_of(x));
  OpAttrs a;
  a.dim = ta;
  return one(op<B>(OpCode::Gather, std::move(a), {x, index}));
}

template <Backend B>
std::vector<RValue<B>> einsum(Ctx<B>& c) {
  std::string eq;
  for (char ch : c.attr_s("equation"))
    if (ch != ' ') eq += ch;
  std::vector<Tn<B>> xs;
  for (size_t k = 0; k < c.num_inputs(); ++k) xs.push_back(c.in(k));
  // Explicit labels for "..." (letters no term uses) and numpy's implicit output.
  std::string lhs = eq, rhs;
  const size_t arrow = eq.find("->");
  const bool implicit = arrow == std::string::npos;
  if (!implicit) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
  }
  std::vector<std::string> terms(1);
  for (char ch : lhs) {
    if (ch == ',')
      terms.emplace_back();
    else
      terms.back() += ch;
  }
  if (terms.size() != xs.size()) c.fail("the equation's terms and the inputs differ in count");
  std::string spare;
  for (char ch = 'A'; ch <= 'Z'; ++ch)
    if (eq.find(ch) == std::string::npos) spare += ch;
  int64_t ell = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    const size_t at = terms[k].find("...");
    if (at == std::string::npos) continue;
    const int64_t n = xs[k].rank() - static_cast<int64_t>(terms[k].size() - 3);
    if (n < 0) c.fail("term " + std::to_string(k) + " has more labels than its input has dims");
    ell = std::max(ell, n);
  }
  if (ell > static_cast<int64_t>(spare.size())) c.fail("too many dims under \"...\"");
  const std::string ell_labels = spare.substr(0, static_cast<size_t>(ell));
  for (size_t k = 0; k < terms.size(); ++k) {
    const size_t at = terms[k].find("...");
    if (at == std::string::npos) continue;
    const int64_t n = xs[k].rank() - static_cast<int64_t>(terms[k].size() - 3);
    terms[k].replace(at, 3, ell_labels.substr(static_cast<size_t>(ell - n)));
  }
  if (implicit) {
    std::string once;
    for (char ch = 'a'; ch <= 'z'; ++ch) {
      int count = 0;
      for (const auto& t : terms) count += static_cast<int>(std::count(t.begin(), t.end(), ch));
      if (count == 1) once += ch;
    }
    rhs = ell_labels + once;
  } else if (const size_t at = rhs.find("..."); at != std::string::npos) {
    rhs.replace(at, 3, ell_labels);
  }
  for (size_t k = 0; k < terms.size(); ++k)
    if (static_cast<int64_t>(terms[k].size()) != xs[k].rank())
      c.fail("term \"" + terms[k] + "\" has " + std::to_string(terms[k].size()) +
             " labels for input " + std::to_string(k) + " of rank " + std::to_string(xs[k].rank()));
  // A label repeated within a term takes that term's diagonal over those dims first.
  for (size_t k = 0; k < terms.size(); ++k) {
    for (size_t p = 0; p < terms[k].size(); ++p) {
      const size_t q = terms[k].find(terms[k][p], p + 1);
      if (q == std::string::npos) continue;
      Tn<B>& x = xs[k];
      const Dims d = dims_of(x);
      if (d[p] != d[q]) c.fail("a repeated label's dims differ in size");
      const int64_t n = d[p];
      Dims order, keep;
      for (size_t i = 0; i < d.size(); ++i)
        if (i != p && i != q) {
          order.push_back(static_cast<int64_t>(i));
          keep.push_back(d[i]);
        }
      order.push_back(static_cast<int64_t>(p));
      order.push_back(static_cast<int64_t>(q));
      Dims flat = keep;
      flat.push_back(n * n);
      std::vector<int64_t> diag(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) diag[static_cast<size_t>(i)] = i * (n + 1);
      x = index_select(reshape(permute(x, order), flat), static_cast<int64_t>(keep.size()),
                       int_tensor<B>(diag, x.device()));
      const char label = terms[k][p];
      std::string t;
      for (size_t i = 0; i < terms[k].size(); ++i)
        if (i != p && i != q) t += terms[k][i];
      terms[k] = t + label;
      p = static_cast<size_t>(-1);  // start over: the term changed
    }
  }
  std::vector<size_t> ranks;
  std::string full;
  for (size_t k = 0; k < terms.size(); ++k) {
    ranks.push_back(static_cast<size_t>(xs[k].rank()));
    full += (k ? "," : "") + terms[k];
  }
  full += "->" + rhs;
  auto [parsed, out] = ember::detail::einsum_parse(full, ranks);
  std::vector<ember::detail::Labelled<B>> ls;
  for (size_t k = 0; k < xs.size(); ++k) ls.push_back({xs[k], parsed[k]});
  return one(ember::detail::einsum_run(std::move(ls), out));
}

template <Backend B>
std::vector<RValue<B>> det(Ctx<B>& c) {
  const Tn<B>& x = c.in(0);
  const int64_t r = x.rank();
  if (r < 2) c.fail("input must be [..., n, n]");
  const Dims d = dims_of(x);
  const int64_t n = d[static_cast<size_t>(r - 1)];
  int64_t batch = 1;
  for (int64_t i = 0; i + 2 < r; ++i) batch *= d[static_cast<size_t>(i)];
  Tensor<B, 3> t(reshape(x, {batch, d[static_cast<size_t>(r - 2)], n}).handle());
  auto y = linalg::det(t);  // [batch, 1, 1]
  Dims out(d.begin(), d.end() - 2);
  return one(reshape(Tn<B>(y.handle()), out));
}

}  // namespace

template <Backend B>
void register_index_ops(OpRegistry<B>& r) {
  r["Gather"] = gather<B>;
  r["GatherElements"] = gather_elements<B>;
  r["GatherND"] = gather_nd<B>;
  r["Scatter"] = scatter_elements<B>;
  r["ScatterElements"] = scatter_elements<B>;
  r["ScatterND"] = scatter_nd<B>;
  r["OneHot"] = one_hot<B>;
  r["NonZero"] = non_zero<B>;
  r["Compress"] = compress<B>;
  r["Unique"] = unique<B>;
  r["ReverseSequence"] = reverse_sequence<B>;
  r["Einsum"] = einsum<B>;
  r["Det"] = det<B>;
}

template void register_index_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_index_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
