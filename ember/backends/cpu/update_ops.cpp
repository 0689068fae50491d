// The optimizer-style composites (lerp, addcmul, adaptive_step) in one pass over memory: an
// Adam step is three of them where its decomposition is thirteen ops, each a pass of its own.
#include <cmath>

#include "ember/backends/cpu/kernels.h"

namespace ember::cpu {

namespace {

// One element of each op in the compute type C (float for halves); the scalars are taken in C
// as well, as the decomposition's rank-0 operands are.
template <class C>
struct Update {
  OpCode code;
  C s, s2;
  C lerp(C a, C b) const { return s < C(0.5) ? a + (b - a) * s : b - (b - a) * (C(1) - s); }
  C addcmul(C x, C a, C b) const { return s2 == C(1) ? x + a * b * s : x * s2 + a * b * s; }
  C step(C x, C m, C v) const { return x - m / (std::sqrt(v) + s2) * s; }
};

// The loop over contiguous operands of the output's shape, with every choice (the op, the lerp's
// end, whether x is scaled) made outside the loops so that each one vectorizes.
template <class T, class C>
void dense(const Update<C>& u, const T* a, const T* b, const T* c, T* y, int64_t n) {
  auto cv = [](T v) { return static_cast<C>(v); };
  const C s = u.s, s2 = u.s2, s1 = C(1) - u.s;
  parallel_for(n, kGrain, [&](int64_t lo, int64_t hi) {
    if (u.code == OpCode::Lerp && s < C(0.5)) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) y[i] = static_cast<T>(cv(a[i]) + (cv(b[i]) - cv(a[i])) * s);
    } else if (u.code == OpCode::Lerp) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i)
        y[i] = static_cast<T>(cv(b[i]) - (cv(b[i]) - cv(a[i])) * s1);
    } else if (u.code == OpCode::Addcmul && s2 == C(1)) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) y[i] = static_cast<T>(cv(a[i]) + cv(b[i]) * cv(c[i]) * s);
    } else if (u.code == OpCode::Addcmul) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i)
        y[i] = static_cast<T>(cv(a[i]) * s2 + cv(b[i]) * cv(c[i]) * s);
    } else {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) y[i] = static_cast<T>(u.step(cv(a[i]), cv(b[i]), cv(c[i])));
    }
  });
}

}  // namespace

bool is_update_op(OpCode c) {
  return c == OpCode::Lerp || c == OpCode::Addcmul || c == OpCode::AdaptiveStep;
}

template <class T>
CpuTensor update_op(const Op& op, Inputs in, const TensorMeta& out) {
  using C = compute_t<T>;
  const Update<C> u{op.code, static_cast<C>(op.attrs.scalar.f), static_cast<C>(op.attrs.scalar2.f)};
  const CpuTensor& third = in.size() > 2 ? in[2] : in[1];  // lerp has two operands
  CpuTensor y = empty(out);
  const Shape& s = out.shape;
  if (s.numel() == 0) return y;
  bool dense_in = true;
  for (const CpuTensor& t : in) dense_in = dense_in && t.meta.shape == s && t.is_contiguous();
  if (dense_in) {
    dense<T, C>(u, in[0].data<T>(), in[1].data<T>(), third.data<T>(), y.data<T>(), s.numel());
    return y;
  }
  // Broadcast or strided operands: element by element along the loop's runs.
  const Dims s0 = broadcast_strides(in[0], s), s1 = broadcast_strides(in[1], s),
             s2 = broadcast_strides(third, s);
  auto L = make_loop<4>(s, {&y.strides, &s0, &s1, &s2},
                        {y.offset, in[0].offset, in[1].offset, third.offset});
  const int64_t i0 = L.inner(0), i1 = L.inner(1), i2 = L.inner(2), i3 = L.inner(3);
  T* d = reinterpret_cast<T*>(y.storage.get());
  const T* pa = reinterpret_cast<const T*>(in[0].storage.get());
  const T* pb = reinterpret_cast<const T*>(in[1].storage.get());
  const T* pc = reinterpret_cast<const T*>(third.storage.get());
  run_loop(L, [&](const std::array<int64_t, 4>& o, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const C a = static_cast<C>(pa[o[1] + i * i1]), b = static_cast<C>(pb[o[2] + i * i2]),
              c = static_cast<C>(pc[o[3] + i * i3]);
      const C r = op.code == OpCode::Lerp      ? u.lerp(a, b)
                  : op.code == OpCode::Addcmul ? u.addcmul(a, b, c)
                                               : u.step(a, b, c);
      d[o[0] + i * i0] = static_cast<T>(r);
    }
  });
  return y;
}

template CpuTensor update_op<double>(const Op&, Inputs, const TensorMeta&);
template CpuTensor update_op<float>(const Op&, Inputs, const TensorMeta&);
template CpuTensor update_op<f16>(const Op&, Inputs, const TensorMeta&);
template CpuTensor update_op<bf16>(const Op&, Inputs, const TensorMeta&);

}  // namespace ember::cpu
