// Creation ops: full, arange, and the counter-based random fills.
#include <cmath>

#include "ember/backends/cpu/kernels.h"
#include "ember/core/rng.h"

namespace ember::cpu {

namespace {
template <class T, class F>
void fill(const CpuTensor& o, F f) {
  T* d = o.data<T>();
  parallel_for(o.meta.shape.numel(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) d[i] = f(i);
  });
}
}  // namespace

template <class T>
CpuTensor create(const Op& op, Inputs, const TensorMeta& out) {
  CpuTensor o = empty(out);
  const OpAttrs& a = op.attrs;
  {
    switch (op.code) {
      case OpCode::Full: {
        T v =
            is_float(out.dtype) ? cast_value<T>(a.scalar.f) : cast_value<T>(a.scalar.as<int64_t>());
        fill<T>(o, [v](int64_t) { return v; });
        break;
      }
      case OpCode::Arange:
        if (is_float(out.dtype)) {
          fill<T>(o,
                  [&](int64_t i) { return cast_value<T>(a.scalar.f + a.scalar2.f * double(i)); });
        } else {
          int64_t s = a.scalar.as<int64_t>(), st = a.scalar2.as<int64_t>();
          fill<T>(o, [=](int64_t i) { return cast_value<T>(s + st * i); });
        }
        break;
      case OpCode::RandomUniform: {
        double lo = a.scalar.f, hi = a.scalar2.f;
        uint64_t seed = a.seed;
        if (is_float(out.dtype)) {
          fill<T>(o, [=](int64_t i) {
            return cast_value<T>(lo + (hi - lo) * rng::uniform01(seed, i));
          });
        } else {  // integers in [lo, hi)
          fill<T>(o, [=](int64_t i) {
            return cast_value<T>(std::floor(lo + (hi - lo) * rng::uniform01(seed, i)));
          });
        }
        break;
      }
      case OpCode::RandomNormal: {
        double mean = a.scalar.f, sd = a.scalar2.f;
        uint64_t seed = a.seed;
        fill<T>(o, [=](int64_t i) { return cast_value<T>(mean + sd * rng::normal(seed, i)); });
        break;
      }
      case OpCode::RandomBernoulli: {
        double p = a.scalar.f;
        uint64_t seed = a.seed;
        fill<T>(o, [=](int64_t i) { return cast_value<T>(rng::uniform01(seed, i) < p ? 1 : 0); });
        break;
      }
      default:
        throw Error("[" + std::string(name(op.code)) + "] not a creation op");
    }
  }
  return o;
}

EMBER_CPU_DEFINE_KERNELS(Create, create)

}  // namespace ember::cpu
