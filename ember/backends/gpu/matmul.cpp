// Batched matmul with broadcast batch dims, on any GPU runtime: operands whose last two dims
// are neither row- nor column-major are copied first, batch dims that merge into one stride are
// one strided-batched GEMM of the runtime (Runtime::gemm: cuBLASLt on CUDA, kernels of the IR
// elsewhere), the rest a loop of them.
#include <optional>
#include <string>

#include "ember/backends/gpu/ops.h"
#include "ember/core/error.h"

namespace ember::gpu {

namespace {

GpuTensor gemm_ready(const GpuTensor& t, MatView& mv) {
  size_t r = t.meta.shape.rank();
  int64_t rows = t.meta.shape[r - 2], cols = t.meta.shape[r - 1];
  int64_t s0 = t.strides[r - 2], s1 = t.strides[r - 1];
  bool batch_ok = true;  // cuBLASLt batch strides must not be negative (flipped batch dims)
  for (size_t i = 0; i + 2 < r; ++i) batch_ok = batch_ok && t.strides[i] >= 0;
  if (!batch_ok) {
    mv = {std::max<int64_t>(cols, 1), false};
    return copy_strided(t);
  }
  if ((s1 == 1 || cols == 1) && s0 >= std::max<int64_t>(cols, 1)) {
    mv = {s0, false};
    return t;
  }
  if ((s0 == 1 || rows == 1) && s1 >= std::max<int64_t>(rows, 1)) {
    mv = {s1, true};
    return t;
  }
  mv = {std::max<int64_t>(cols, 1), false};
  return copy_strided(t);
}

}  // namespace

namespace {

// matmul, or with `ep` (its bias, residual and relu) as the GEMM's epilogue: nullopt where the
// runtime has none for this call (one strided-batched GEMM with a product to write).
std::optional<GpuTensor> gemm_matmul(const Op& op, Inputs in, const TensorMeta& out,
                                     const GemmCall* ep) {
  DType t = out.dtype;
  if (t == DType::Bool) not_implemented(op, in, "bool");
  MatView va{}, vb{};
  GpuTensor a = gemm_ready(in[0], va), b = gemm_ready(in[1], vb);
  Runtime& d = runtime(in[0]);
  GpuTensor o = empty(out, d);
  const Shape& os = out.shape;
  size_t r = os.rank();
  int64_t m = os[r - 2], n = os[r - 1], k = a.meta.shape[a.meta.shape.rank() - 1];
  if (ep && (os.numel() == 0 || k == 0)) return std::nullopt;
  if (os.numel() == 0) return o;
  if (k == 0) {
    zero(o, size_t(os.numel()) * size_of(t));
    return o;
  }
  // Batch strides of a, b and the output over the output's batch dims, merged where they can.
  Shape batch(std::span<const int64_t>(os.dims().data(), r - 2));
  auto bstrides = [&](const GpuTensor& x) {
    GpuTensor v = x;
    size_t xr = x.meta.shape.rank();
    v.meta.shape = Shape(std::span<const int64_t>(x.meta.shape.dims().data(), xr - 2));
    v.strides = Dims(std::span<const int64_t>(x.strides.data(), xr - 2));
    return broadcast_strides(v, batch);
  };
  Dims sa = bstrides(a), sb = bstrides(b), sc = contiguous_strides(batch);
  for (int64_t& s : sc) s *= m * n;
  const Dims* sp[3] = {&sa, &sb, &sc};
  Collapsed c = collapse(batch, std::span<const Dims* const>(sp, 3));
  size_t cr = c.shape.size();
  GemmCall g{t,
             m,
             n,
             k,
             va,
             vb,
             c.shape[cr - 1],
             c.strides[0][cr - 1],
             c.strides[1][cr - 1],
             c.strides[2][cr - 1]};
  std::string shapes = "a " + in[0].meta.shape.to_string() + ", b " + in[1].meta.shape.to_string() +
                       " " + std::string(name(t));
  int64_t outer = 1;
  for (size_t i = 0; i + 1 < cr; ++i) outer *= c.shape[i];
  int64_t es = size_of(t);
  if (ep) {
    g.bias = ep->bias;
    g.residual = ep->residual;
    g.relu = ep->relu;
    if (outer != 1 || !d.gemm_epilogue(g, a.ptr(), b.ptr(), o.ptr())) return std::nullopt;
  }
  for (int64_t bi = 0; bi < outer; ++bi) {
    int64_t oa = 0, ob = 0, oc = 0, rem = bi;
    for (size_t i = cr - 1; i-- > 0;) {
      int64_t idx = rem % c.shape[i];
      rem /= c.shape[i];
      oa += idx * c.strides[0][i];
      ob += idx * c.strides[1][i];
      oc += idx * c.strides[2][i];
    }
    d.gemm(g, a.ptr() + oa * es, b.ptr() + ob * es, o.ptr() + oc * es, shapes);
  }
  return o;
}

}  // namespace

GpuTensor matmul(const Op& op, Inputs in, const TensorMeta& out) {
  return *gemm_matmul(op, in, out, nullptr);
}

std::optional<GpuTensor> matmul_epilogue(const Op& op, Inputs in, const TensorMeta& out,
                                         Address bias, Address residual, bool relu) {
  GemmCall ep{};
  ep.bias = bias;
  ep.residual = residual;
  ep.relu = relu;
  return gemm_matmul(op, in, out, &ep);
}

}  // namespace ember::gpu
