// Elementwise ops (unary, binary, compare, where, cast), the strided copy behind
// contiguous(), and the creation ops.
#include <algorithm>

#include "ember/backends/gpu/ops.h"
#include "ember/core/error.h"
#include "ember/kernel/kernels/copy.h"
#include "ember/kernel/kernels/create.h"
#include "ember/kernel/kernels/elementwise.h"
#include "ember/kernel/kernels/where.h"

namespace ember::gpu {

namespace {

// The output: an input buffer that may be reused, or a new one.
GpuTensor output_for(Inputs in, const TensorMeta& out, Runtime& dev) {
  for (GpuTensor& t : in)
    if (reusable(t, out)) return t;  // a copy: the inputs are still read
  return empty(out, dev);
}

void push_shape(Args& a, const Collapsed& c, int operands) {
  for (int64_t s : c.shape) a.i(s);
  for (int j = 0; j < operands; ++j)
    for (int64_t s : c.strides[j]) a.i(s);
}

bool aligned(const GpuTensor& t, int w) { return t.offset % w == 0; }

struct Strided {
  Collapsed c;
  bool dense = false;  // every operand dense, of the output's shape and vector-aligned
  int rank = 0;        // 0 when dense
  int scalars = 0;     // dense: bit j set when input j is one element broadcast to all
};

// The operands' strides broadcast to `s`, merged; `w` the dense path's vector width. With
// `allow_scalars`, one-element inputs (stride 0 after merging) keep the dense path.
Strided layout(std::span<const GpuTensor> in, const GpuTensor& o, int w,
               bool allow_scalars = false) {
  const Shape& s = o.meta.shape;
  Dims st[3];
  const Dims* sp[3];
  for (size_t j = 0; j < in.size(); ++j) {
    st[j] = broadcast_strides(in[j], s);
    sp[j] = &st[j];
  }
  Strided r;
  r.c = collapse(s, std::span<const Dims* const>(sp, in.size()));
  r.dense = w > 0 && r.c.shape.size() == 1 && aligned(o, w);
  for (size_t j = 0; j < in.size() && r.dense; ++j) {
    if (allow_scalars && r.c.strides[j][0] == 0) {
      r.scalars |= 1 << j;
      continue;
    }
    r.dense = r.c.strides[j][0] == 1 && aligned(in[j], w);
  }
  if (!r.dense || r.scalars == (1 << in.size()) - 1) {  // all broadcast: the strided path
    r.dense = false;
    r.scalars = 0;
  }
  r.rank = r.dense ? 0 : static_cast<int>(r.c.shape.size());
  if (r.rank > 8)
    throw DeviceError("[" + std::string(runtime(o).backend()) +
                      "] more than 8 dims after merging: " + s.to_string());
  return r;
}

// Copies (and converts) `x` into the dense `o` of the same shape.
void copy_into(const GpuTensor& x, const GpuTensor& o) {
  int64_t n = o.meta.shape.numel();
  if (n == 0) return;
  Runtime& d = runtime(o);
  if (x.meta.dtype == o.meta.dtype && x.meta.shape == o.meta.shape && x.is_contiguous()) {
    // Dense to dense: the driver's copy runs at the memory's speed (the scalar kernel does not).
    size_t es = size_of(x.meta.dtype);
    d.copy(*x.storage, size_t(x.offset) * es, *o.storage, size_t(o.offset) * es, size_t(n) * es);
    return;
  }
  Strided L = layout(std::span<const GpuTensor>(&x, 1), o, 0);
  const Loaded& l =
      kernel_for(d, key(Kind::Copy, 0, x.meta.dtype, o.meta.dtype, L.rank, false, L.c.wide), [&] {
        kernel::CopySpec cs;
        cs.src = x.meta.dtype;
        cs.dst = o.meta.dtype;
        cs.rank = L.rank;
        cs.wide_index = L.c.wide;
        return kernel::copy_kernel(cs);
      });
  Args a(l);
  a.ptr(x.ptr()).ptr(o.ptr()).i(n);
  push_shape(a, L.c, 1);
  a.launch(d, groups_for(d, n, 256));
}

}  // namespace

GpuTensor elementwise(const Op& op, Inputs in, const TensorMeta& out) {
  DType t = in[0].meta.dtype;
  if (!kernel::elementwise_supported(op.code, t))
    not_implemented(op, in, "no elementwise kernel for " + std::string(name(t)));
  Runtime& d = runtime(in[0]);
  const Shape& s = out.shape;
  int64_t n = s.numel();
  GpuTensor o = output_for(in, out, d);
  if (n == 0) return o;
  int arity = static_cast<int>(in.size());
  int w = kernel::vector_width(t);
  Strided L = layout(std::span<const GpuTensor>(in.data(), in.size()), o, w, true);
  const Collapsed& c = L.c;
  bool dense = L.dense;
  int rank = L.rank;
  const Loaded& l = kernel_for(
      d, key(Kind::Elementwise, int(op.code), t, t, rank, dense, c.wide, L.scalars), [&] {
        kernel::ElementwiseSpec es;
        es.op = op.code;
        es.dtype = t;
        es.rank = dense ? 1 : rank;
        es.contiguous = dense;
        es.scalar_inputs = L.scalars;
        es.wide_index = c.wide;
        return kernel::elementwise_kernel(es);
      });
  Args a(l);
  for (int j = 0; j < arity; ++j) a.ptr(in[j].ptr());
  a.ptr(o.ptr()).i(n);
  if (dense) {
    a.launch(d, groups_for(d, (n + w - 1) / w, 256));
  } else {
    push_shape(a, c, arity);
    a.launch(d, groups_for(d, n, 256));
  }
  return o;
}

GpuTensor where(Inputs in, const TensorMeta& out) {
  GpuTensor o = empty(out, runtime(in[1]));
  int64_t n = out.shape.numel();
  if (n == 0) return o;
  Strided L = layout(std::span<const GpuTensor>(in.data(), 3), o, 1);  // dense: scalar loads
  Runtime& d = runtime(o);
  const Loaded& l =
      kernel_for(d, key(Kind::Where, 0, out.dtype, out.dtype, L.rank, L.dense, L.c.wide), [&] {
        kernel::WhereSpec ws;
        ws.dtype = out.dtype;
        ws.rank = L.dense ? 1 : L.rank;
        ws.contiguous = L.dense;
        ws.wide_index = L.c.wide;
        return kernel::where_kernel(ws);
      });
  Args a(l);
  for (int j = 0; j < 3; ++j) a.ptr(in[j].ptr());
  a.ptr(o.ptr()).i(n);
  if (!L.dense) push_shape(a, L.c, 3);
  a.launch(d, groups_for(d, n, 256));
  return o;
}

GpuTensor cast(Inputs in, const TensorMeta& out) {
  if (in[0].meta.dtype == out.dtype) return in[0];
  GpuTensor o = empty(out, runtime(in[0]));
  copy_into(in[0], o);
  return o;
}

GpuTensor copy_strided(const GpuTensor& t) {
  GpuTensor o = empty(t.meta, runtime(t));
  copy_into(t, o);
  return o;
}

namespace {

// One-element Full results (the scalar operand of `x + 1.0`), kept per device and value so that
// a repeated constant costs no fill on the stream. A kept tensor is shared, so no op ever
// overwrites it (reusable() wants the only owner). A value is kept from its second use on, and
// the kCapacity most recently used values are kept: a scalar that changes every step (an
// optimizer's bias correction) gets a fresh tensor each time, freed with the step, so a step
// that repeats keeps its addresses (and its CUDA graphs replay, backends/cuda/queue.h).
class Constants {
 public:
  static constexpr size_t kCapacity = 64;
  template <class Make>
  GpuTensor get(Runtime* dev, const TensorMeta& out, uint64_t bits, Make&& make) {
    Key k{dev, out.dtype, out.shape.rank(), bits};
    std::lock_guard lk(mu_);
    for (size_t i = kept_.size(); i-- > 0;)
      if (kept_[i].first == k && kept_[i].second.meta.shape == out.shape) {
        if (i + 1 != kept_.size())
          std::rotate(kept_.begin() + i, kept_.begin() + i + 1, kept_.end());
        return kept_.back().second;
      }
    auto seen = std::find(seen_.begin(), seen_.end(), k);
    if (seen == seen_.end()) {  // first use: remembered, not kept
      if (seen_.size() >= kCapacity) seen_.erase(seen_.begin());
      seen_.push_back(k);
      return make();
    }
    seen_.erase(seen);
    if (kept_.size() >= kCapacity) kept_.erase(kept_.begin());
    kept_.emplace_back(k, make());
    return kept_.back().second;
  }

 private:
  struct Key {
    Runtime* dev;
    DType dtype;
    size_t rank;
    uint64_t bits;
    bool operator==(const Key&) const = default;
  };
  std::mutex mu_;
  std::vector<std::pair<Key, GpuTensor>> kept_;
  std::vector<Key> seen_;  // used once, not kept yet
};

Constants& constants() {
  static auto* c = new Constants;  // never destroyed: tensors freed at exit still find the pool
  return *c;
}

// A creation op run on the stream.
GpuTensor fill(const Op& op, const TensorMeta& out, Runtime& d) {
  const OpAttrs& at = op.attrs;
  bool fl = is_float(out.dtype);
  GpuTensor o = empty(out, d);
  int64_t n = out.shape.numel();
  if (n == 0) return o;
  if (op.code == OpCode::Full && size_of(out.dtype) < 8) {
    // The value's bits, converted on the host exactly as the CPU backend converts it.
    TensorData one =
        fl ? TensorData::from<double>(std::vector<double>{at.scalar.f}, Shape{})
           : TensorData::from<int64_t>(std::vector<int64_t>{at.scalar.as<int64_t>()}, Shape{});
    TensorData v = one.convert(out.dtype);
    uint32_t bits = 0;
    std::memcpy(&bits, v.bytes().data(), v.bytes().size());
    d.fill(*o.storage, 0, bits, int(size_of(out.dtype)), size_t(n));
    return o;
  }
  bool wide = n > 0x7fffffff;
  const Loaded& l =
      kernel_for(d, key(Kind::Fill, int(op.code), out.dtype, out.dtype, 0, false, wide), [&] {
        kernel::CreateSpec cs;
        cs.op = op.code;
        cs.dtype = out.dtype;
        cs.wide_index = wide;
        return kernel::create_kernel(cs);
      });
  Args a(l);
  a.ptr(o.ptr()).i(n);
  auto value = [&](const Scalar& v) {
    if (fl)
      a.f(v.f);
    else
      a.i(v.as<int64_t>());
  };
  auto seed = [&] { a.i(int64_t(at.seed & 0xffffffffu)).i(int64_t(at.seed >> 32)); };
  switch (op.code) {
    case OpCode::Full:
      value(at.scalar);
      break;
    case OpCode::Arange:
      value(at.scalar);
      value(at.scalar2);
      break;
    case OpCode::RandomUniform:
    case OpCode::RandomNormal:
      a.f(at.scalar.f).f(at.scalar2.f);
      seed();
      break;
    case OpCode::RandomBernoulli:
      a.f(at.scalar.f);
      seed();
      break;
    default:
      not_implemented(op, {});
  }
  a.launch(d, groups_for(d, n, 256));
  return o;
}

}  // namespace

GpuTensor create(const Op& op, const TensorMeta& out, Runtime& dev) {
  if (op.code != OpCode::Full || out.shape.numel() != 1) return fill(op, out, dev);
  uint64_t bits = 0;
  if (is_float(out.dtype))
    std::memcpy(&bits, &op.attrs.scalar.f, sizeof bits);
  else
    bits = static_cast<uint64_t>(op.attrs.scalar.as<int64_t>());
  return constants().get(&dev, out, bits, [&] { return fill(op, out, dev); });
}

}  // namespace ember::gpu
