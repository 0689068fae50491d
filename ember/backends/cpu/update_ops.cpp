// The optimizer-style composites (lerp, addcmul, adaptive_step) in one pass over memory: an
// Adam step is three of them where its decomposition is thirteen ops, each a pass of its own.
#include <cmath>

#include "ember/backends/cpu/kernels.h"

namespace ember::cpu {

namespace {

// One element of each op in the compute type C (float for halves), the scalars taken in C as
// the decomposition's rank-0 operands are. Every choice (the op, the lerp's nearer end, whether
// x is scaled) is a functor of its own, chosen once a call, so that each loop vectorizes.
template <class C>
struct LerpNear {  // weight < 0.5: from a
  C w;
  C operator()(C a, C b, C) const { return a + (b - a) * w; }
};
template <class C>
struct LerpFar {  // from b, so that weight 1 gives b exactly (as torch.lerp)
  C w1;           // 1 - weight
  C operator()(C a, C b, C) const { return b - (b - a) * w1; }
};
template <class C>
struct Addcmul {
  C value;
  C operator()(C x, C a, C b) const { return x + a * b * value; }
};
template <class C>
struct AddcmulScaled {
  C value, scale;
  C operator()(C x, C a, C b) const { return x * scale + a * b * value; }
};
template <class C>
struct Step {
  C step, eps;
  C operator()(C x, C m, C v) const { return x - m / (std::sqrt(v) + eps) * step; }
};

// Calls f(functor) with the op's element function.
template <class C, class F>
void with_update(const Op& op, F&& f) {
  const C s = static_cast<C>(op.attrs.scalar.f), s2 = static_cast<C>(op.attrs.scalar2.f);
  switch (op.code) {
    case OpCode::Lerp:
      return s < C(0.5) ? f(LerpNear<C>{s}) : f(LerpFar<C>{C(1) - s});
    case OpCode::Addcmul:
      return s2 == C(1) ? f(Addcmul<C>{s}) : f(AddcmulScaled<C>{s, s2});
    default:
      return f(Step<C>{s, s2});
  }
}

}  // namespace

bool is_update_op(OpCode c) {
  return c == OpCode::Lerp || c == OpCode::Addcmul || c == OpCode::AdaptiveStep;
}

template <class T>
CpuTensor update_op(const Op& op, Inputs in, const TensorMeta& out) {
  using C = compute_t<T>;
  const CpuTensor& third = in.size() > 2 ? in[2] : in[1];  // lerp has two operands
  CpuTensor y = empty(out);
  const Shape& s = out.shape;
  if (s.numel() == 0) return y;
  bool dense = true;
  for (const CpuTensor& t : in) dense = dense && t.meta.shape == s && t.is_contiguous();
  T* d = y.data<T>();
  if (dense) {  // contiguous operands of the output's shape
    const T *a = in[0].data<T>(), *b = in[1].data<T>(), *c = third.data<T>();
    with_update<C>(op, [&](auto f) {
      parallel_for(s.numel(), kGrain, [&](int64_t lo, int64_t hi) {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i)
          d[i] =
              static_cast<T>(f(static_cast<C>(a[i]), static_cast<C>(b[i]), static_cast<C>(c[i])));
      });
    });
    return y;
  }
  // Broadcast or strided operands: element by element along the loop's runs.
  const Dims s0 = broadcast_strides(in[0], s), s1 = broadcast_strides(in[1], s),
             s2 = broadcast_strides(third, s);
  auto L = make_loop<4>(s, {&y.strides, &s0, &s1, &s2},
                        {y.offset, in[0].offset, in[1].offset, third.offset});
  const int64_t i0 = L.inner(0), i1 = L.inner(1), i2 = L.inner(2), i3 = L.inner(3);
  T* base = reinterpret_cast<T*>(y.storage.get());
  const T* pa = reinterpret_cast<const T*>(in[0].storage.get());
  const T* pb = reinterpret_cast<const T*>(in[1].storage.get());
  const T* pc = reinterpret_cast<const T*>(third.storage.get());
  with_update<C>(op, [&](auto f) {
    run_loop(L, [&](const std::array<int64_t, 4>& o, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        base[o[0] + i * i0] =
            static_cast<T>(f(static_cast<C>(pa[o[1] + i * i1]), static_cast<C>(pb[o[2] + i * i2]),
                             static_cast<C>(pc[o[3] + i * i3])));
    });
  });
  return y;
}

template CpuTensor update_op<double>(const Op&, Inputs, const TensorMeta&);
template CpuTensor update_op<float>(const Op&, Inputs, const TensorMeta&);
template CpuTensor update_op<f16>(const Op&, Inputs, const TensorMeta&);
template CpuTensor update_op<bf16>(const Op&, Inputs, const TensorMeta&);

}  // namespace ember::cpu
