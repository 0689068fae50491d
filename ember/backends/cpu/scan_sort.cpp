// Cumulative ops and argsort along one dim, on the input viewed as [outer, n, inner].
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ember/backends/cpu/elementwise.h"
#include "ember/backends/cpu/kernels.h"

namespace ember::cpu {

namespace {

template <class T, class F>
void scan_kernel(const T* x, T* y, Split p, F f) {
  using C = compute_t<T>;
  parallel_for(p.outer * p.inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(p.n, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t t = b; t < e; ++t) {
                   int64_t o = t / p.inner, j = t % p.inner;
                   const T* xs = x + o * p.n * p.inner + j;
                   T* ys = y + o * p.n * p.inner + j;
                   C acc{};
                   for (int64_t k = 0; k < p.n; ++k) {
                     C v = static_cast<C>(xs[k * p.inner]);
                     acc = k == 0 ? v : f(acc, v);
                     ys[k * p.inner] = static_cast<T>(acc);
                   }
                 }
               });
}

template <class C>
bool is_nan_v(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return std::isnan(v);
  else
    return false;
}

}  // namespace

template <class T>
CpuTensor scan(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor x = contiguous(in[0]);
  CpuTensor o = empty(out);
  Split p = split_at(out.shape, op.attrs.dim);
  if (out.shape.numel() == 0) return o;
  [&] {
    if constexpr (!std::is_same_v<T, bool>) {
      using C = compute_t<T>;
      const T* xp = x.data<T>();
      T* yp = o.data<T>();
      switch (op.code) {
        case OpCode::CumSum:
          return scan_kernel(xp, yp, p, [](C a, C b) { return wrap_add(a, b); });
        case OpCode::CumProd:
          return scan_kernel(xp, yp, p, [](C a, C b) { return wrap_mul(a, b); });
        case OpCode::CumMax:
          return scan_kernel(xp, yp, p, [](C a, C b) { return is_nan_v(a) || b < a ? a : b; });
        case OpCode::CumMin:
          return scan_kernel(xp, yp, p, [](C a, C b) { return is_nan_v(a) || b > a ? a : b; });
        default:
          break;
      }
    }
    throw Error("[" + std::string(name(op.code)) + "] not a scan");
  }();
  return o;
}

template <class T>
CpuTensor argsort(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor x = contiguous(in[0]);
  CpuTensor o = empty(out);
  Split p = split_at(out.shape, op.attrs.dim);
  bool desc = op.attrs.flag;
  if (out.shape.numel() == 0) return o;
  {
    using C = compute_t<T>;
    const T* xp = x.data<T>();
    int64_t* ip = o.data<int64_t>();
    parallel_for(p.outer * p.inner, 1, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(p.n);
      std::vector<C> v(p.n);
      for (int64_t t = b; t < e; ++t) {
        int64_t oo = t / p.inner, j = t % p.inner;
        int64_t base = oo * p.n * p.inner + j;
        for (int64_t k = 0; k < p.n; ++k) v[k] = static_cast<C>(xp[base + k * p.inner]);
        std::iota(idx.begin(), idx.end(), 0);
        // NaN sorts above every number, as in PyTorch
        auto less = [&](int64_t a, int64_t c) {
          C va = v[a], vc = v[c];
          if (is_nan_v(va)) return false;
          if (is_nan_v(vc)) return true;
          return va < vc;
        };
        if (desc)
          std::stable_sort(idx.begin(), idx.end(),
                           [&](int64_t a, int64_t c) { return less(c, a); });
        else
          std::stable_sort(idx.begin(), idx.end(), less);
        for (int64_t k = 0; k < p.n; ++k) ip[base + k * p.inner] = idx[k];
      }
    });
  }
  return o;
}

EMBER_CPU_DEFINE_KERNELS(Scan, scan)
EMBER_CPU_DEFINE_KERNELS(Sort, argsort)

}  // namespace ember::cpu
