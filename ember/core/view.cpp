#include "ember/core/view.h"

#include <string>
#include <vector>

#include "ember/core/error.h"

namespace ember {

bool reshape_strides(const Shape& from, const Dims& strides, const Shape& to, Dims& out) {
  if (from.numel() <= 1 || strides == contiguous_strides(from)) {
    out = contiguous_strides(to);
    return true;
  }
  out = Dims(to.rank());
  size_t od = 0, nd = 0;
  while (od < from.rank() || nd < to.rank()) {
    if (od < from.rank() && from[od] == 1) {
      ++od;
      continue;
    }
    if (nd < to.rank() && to[nd] == 1) {
      out[nd++] = 1;
      continue;
    }
    if (od >= from.rank() || nd >= to.rank()) return false;
    int64_t have = from[od], want = to[nd];
    size_t last = od, nfirst = nd;
    // Extend the old run while it stays contiguous, until both sides cover the same count.
    while (have != want) {
      if (have < want) {
        size_t nx = last + 1;
        while (nx < from.rank() && from[nx] == 1) ++nx;
        if (nx >= from.rank() || strides[last] != strides[nx] * from[nx]) return false;
        have *= from[nx];
        last = nx;
      } else {
        if (++nd >= to.rank()) return false;
        want *= to[nd];
      }
    }
    int64_t stride = strides[last];
    for (size_t k = nd + 1; k-- > nfirst;) {
      out[k] = stride;
      stride *= to[k];
    }
    od = last + 1;
    ++nd;
  }
  return true;
}

bool apply_view(const Op& op, const Shape& in, const Shape& out, Dims& strides, int64_t& offset) {
  const OpAttrs& a = op.attrs;
  switch (op.code) {
    case OpCode::Reshape: {
      Dims st;
      if (!reshape_strides(in, strides, out, st)) return false;
      strides = std::move(st);
      return true;
    }
    case OpCode::Permute: {
      Dims st(in.rank());
      for (size_t i = 0; i < st.size(); ++i) st[i] = strides[a.dims[i]];
      strides = std::move(st);
      return true;
    }
    case OpCode::Expand: {
      Dims st(out.rank(), 0);
      size_t off = out.rank() - in.rank();
      for (size_t i = 0; i < in.rank(); ++i)
        st[off + i] = in[i] == 1 && out[off + i] != 1 ? 0 : strides[i];
      strides = std::move(st);
      return true;
    }
    case OpCode::Slice:
      for (size_t i = 0; i < in.rank(); ++i) {
        if (out[i] > 0) offset += a.dims[i] * strides[i];
        // A dim of one element keeps its stride: its step may be huge (stride * step would
        // overflow), and it is never walked. Otherwise step < the dim, so the product fits.
        if (out[i] > 1) strides[i] *= a.steps[i];
      }
      return true;
    case OpCode::Flip:
      for (int64_t d : a.dims) {
        if (in[d] > 0) offset += (in[d] - 1) * strides[d];
        strides[d] = -strides[d];
      }
      return true;
    default:
      throw Error("[" + std::string(name(op.code)) + "] is not a view");
  }
}

ReduceLayout reduce_layout(const Shape& s, const Dims& dims) {
  const size_t rank = s.rank();
  std::vector<bool> red(rank, dims.empty());
  for (int64_t d : dims) red[static_cast<size_t>(d)] = true;
  int64_t first = -1, last = -1;
  for (size_t d = 0; d < rank; ++d)
    if (red[d] && s[d] != 1) {
      if (first < 0) first = static_cast<int64_t>(d);
      last = static_cast<int64_t>(d);
    }
  bool block = true;
  for (int64_t d = first; first >= 0 && d <= last; ++d)
    block = block && (red[static_cast<size_t>(d)] || s[static_cast<size_t>(d)] == 1);
  ReduceLayout g;
  if (block) {
    for (size_t d = 0; d < rank; ++d) {
      const auto di = static_cast<int64_t>(d);
      if (first >= 0 && di >= first && di <= last)
        g.size *= s[d];
      else if (first >= 0 && di > last)
        g.inner *= s[d];
      else
        g.outer *= s[d];
    }
    return g;
  }
  for (size_t d = 0; d < rank; ++d)
    if (!red[d]) g.order.push_back(static_cast<int64_t>(d));
  for (size_t d = 0; d < rank; ++d)
    if (red[d]) g.order.push_back(static_cast<int64_t>(d));
  for (int64_t d : g.order)
    (red[static_cast<size_t>(d)] ? g.size : g.outer) *= s[static_cast<size_t>(d)];
  return g;
}

}  // namespace ember
