// Movement ops as views: only strides and offset change, the buffer is shared.
#include "ember/backends/cpu/kernels.h"

namespace ember::cpu {

namespace {

// Strides that show `t` in `shape` without a copy, if the element order allows it.
bool view_strides(const CpuTensor& t, const Shape& shape, Dims& out) {
  if (t.is_contiguous() || t.meta.shape.numel() <= 1) {
    out = contiguous_strides(shape);
    return true;
  }
  // Group old dims into chunks that are contiguous within; new dims must tile each chunk.
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
    int64_t chunk = os[od];
    size_t last = od;
    int64_t want = shape[nd];
    size_t nfirst = nd;
    // extend the old chunk while it stays contiguous, until both sides cover the same count
    while (chunk != want) {
      if (chunk < want) {
        size_t nx = last + 1;
        while (nx < os.rank() && os[nx] == 1) ++nx;
        if (nx >= os.rank() || t.strides[last] != t.strides[nx] * os[nx]) return false;
        chunk *= os[nx];
        last = nx;
      } else {
        ++nd;
        if (nd >= shape.rank()) return false;
        want *= shape[nd];
      }
    }
    int64_t stride = t.strides[last];
    for (size_t k = nd + 1; k-- > nfirst;) {
      out[k] = stride;
      stride *= shape[k];
    }
    od = last + 1;
    nd = nd + 1;
  }
  return true;
}

}  // namespace

CpuTensor movement(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor t = in[0];
  const OpAttrs& a = op.attrs;
  const Shape& s = t.meta.shape;
  switch (op.code) {
    case OpCode::Reshape: {
      Dims st;
      if (!view_strides(t, out.shape, st)) {
        t = contiguous(t);
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
        // A dim of one element keeps its stride: its step may be huge (stride * step would
        // overflow), and it is never walked. Otherwise step < the dim, so the product fits.
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
      throw Error("[" + std::string(name(op.code)) + "] not a movement op");
  }
  t.meta = out;
  return t;
}

}  // namespace ember::cpu
