// Movement ops as views: only strides and offset change, the device buffer is shared.
#include "ember/backends/cuda/ops.h"
#include "ember/core/error.h"

namespace ember::cuda::detail {

namespace {

// Strides that show `t` as `shape` without a copy, when its element order allows it: the old
// dims are grouped into runs that are contiguous within, and the new dims must tile each run.
bool view_strides(const CudaTensor& t, const Shape& shape, Dims& out) {
  if (t.is_contiguous() || t.meta.shape.numel() <= 1) {
    out = contiguous_strides(shape);
    return true;
  }
  const Shape& os = t.meta.shape;
  out = Dims(shape.rank());
  size_t od = 0, nd = 0;
  while (od < os.rank() || nd < shape.rank()) {
    if (od < os.rank() && os[od] == 1) {
      ++od;
      continue;
    }
    if (nd < shape.rank() && shape[nd] == 1) {
      out[nd++] = 1;
      continue;
    }
    if (od >= os.rank() || nd >= shape.rank()) return false;
    int64_t have = os[od], want = shape[nd];
    size_t last = od, nfirst = nd;
    while (have != want) {
      if (have < want) {
        size_t nx = last + 1;
        while (nx < os.rank() && os[nx] == 1) ++nx;
        if (nx >= os.rank() || t.strides[last] != t.strides[nx] * os[nx]) return false;
        have *= os[nx];
        last = nx;
      } else {
        if (++nd >= shape.rank()) return false;
        want *= shape[nd];
      }
    }
    int64_t stride = t.strides[last];
    for (size_t k = nd + 1; k-- > nfirst;) {
      out[k] = stride;
      stride *= shape[k];
    }
    od = last + 1;
    ++nd;
  }
  return true;
}

}  // namespace

CudaTensor movement(const Op& op, Inputs in, const TensorMeta& out) {
  CudaTensor t = in[0];
  const OpAttrs& a = op.attrs;
  const Shape& s = in[0].meta.shape;
  switch (op.code) {
    case OpCode::Reshape: {
      Dims st;
      if (!view_strides(t, out.shape, st)) {
        t = copy_strided(t);
        st = contiguous_strides(out.shape);
      }
      t.strides = std::move(st);
      break;
    }
    case OpCode::Permute: {
      Dims st(s.rank());
      for (size_t i = 0; i < st.size(); ++i) st[i] = t.strides[a.dims[i]];
      t.strides = std::move(st);
      break;
    }
    case OpCode::Expand: {
      Dims st(out.shape.rank(), 0);
      size_t off = out.shape.rank() - s.rank();
      for (size_t i = 0; i < s.rank(); ++i)
        st[off + i] = s[i] == 1 && out.shape[off + i] != 1 ? 0 : t.strides[i];
      t.strides = std::move(st);
      break;
    }
    case OpCode::Slice:
      for (size_t i = 0; i < s.rank(); ++i) {
        if (out.shape[i] > 0) t.offset += a.dims[i] * t.strides[i];
        // A one-element dim keeps its stride: its step may be huge and it is never walked.
        if (out.shape[i] > 1) t.strides[i] *= a.steps[i];
      }
      break;
    case OpCode::Flip:
      for (int64_t d : a.dims) {
        if (s[d] > 0) t.offset += (s[d] - 1) * t.strides[d];
        t.strides[d] = -t.strides[d];
      }
      break;
    default:
      not_implemented(op, in);
  }
  t.meta = out;
  return t;
}

}  // namespace ember::cuda::detail
