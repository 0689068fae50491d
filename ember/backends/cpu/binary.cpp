// Binary elementwise ops and comparisons (with broadcasting), where, cast, and relu's gradient.
#include <cmath>
#include <limits>

#include "ember/backends/cpu/elementwise.h"
#include "ember/backends/cpu/kernels.h"
#include "ember/backends/cpu/simd.h"
#include "ember/backends/cpu/vmath.h"

namespace ember::cpu {

namespace {

template <class F>
F float_remainder(F a, F b) {
  F r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <class F>
F nan_max(F a, F b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<F>::quiet_NaN() : (a > b ? a : b);
}
template <class F>
F nan_min(F a, F b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<F>::quiet_NaN() : (a < b ? a : b);
}

template <class T>
T int_pow(T base, T e) {
  if (e < 0) return base == T(1) ? T(1) : base == T(-1) ? T((e % 2) ? -1 : 1) : T(0);
  T r = 1;
  while (e > 0) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e = static_cast<T>(e >> 1);
  }
  return r;
}
template <class T>
T shift_left(T a, T b) {
  if (b < 0 || b >= T(sizeof(T) * 8)) return T(0);
  return static_cast<T>(static_cast<wide_t<T>>(a) << b);
}
template <class T>
T shift_right(T a, T b) {
  if (b < 0 || b >= T(sizeof(T) * 8)) return a < 0 ? T(-1) : T(0);
  return static_cast<T>(a >> b);
}

// Integer division by zero would trap: reject it before the kernel runs.
template <class T>
void check_no_zero(const Op& op, const CpuTensor& b) {
  CpuTensor c = contiguous(b);
  const T* p = c.data<T>();
  for (int64_t i = 0, n = c.meta.shape.numel(); i < n; ++i)
    if (p[i] == T(0))
      throw ValueError("[" + std::string(name(op.code)) + "] integer division by zero");
}

template <class T>
void float_binary(OpCode c, const CpuTensor& a, const CpuTensor& b, const CpuTensor& o) {
  using C = OpCode;
  using F = compute_t<T>;
  auto m = [&](auto f) { map2<T, T>(a, b, o, f); };
  switch (c) {
    case C::Add:
      return m([](F x, F y) { return x + y; });
    case C::Sub:
      return m([](F x, F y) { return x - y; });
    case C::Mul:
      return m([](F x, F y) { return x * y; });
    case C::Div:
      return m([](F x, F y) { return x / y; });
    case C::Remainder:
      return m([](F x, F y) { return float_remainder(x, y); });
    case C::Pow:
      return m([](F x, F y) { return std::pow(x, y); });
    case C::Maximum:
      return m([](F x, F y) { return nan_max(x, y); });
    case C::Minimum:
      return m([](F x, F y) { return nan_min(x, y); });
    case C::Atan2:
      return m([](F x, F y) { return std::atan2(x, y); });
    default:
      throw Error("[" + std::string(name(c)) + "] not a float binary op");
  }
}

template <class T>
void int_binary(const Op& op, const CpuTensor& a, const CpuTensor& b, const CpuTensor& o) {
  using C = OpCode;
  auto m = [&](auto f) { map2<T, T>(a, b, o, f); };
  switch (op.code) {
    case C::Add:
      return m([](T x, T y) { return wrap_add(x, y); });
    case C::Sub:
      return m([](T x, T y) { return wrap_sub(x, y); });
    case C::Mul:
      return m([](T x, T y) { return wrap_mul(x, y); });
    case C::Div:
      check_no_zero<T>(op, b);
      return m([](T x, T y) { return y == T(-1) ? wrap_sub(T(0), x) : T(x / y); });
    case C::Remainder:
      check_no_zero<T>(op, b);
      return m([](T x, T y) {
        if (y == T(-1)) return T(0);
        T r = T(x % y);
        return (r != 0 && ((r < 0) != (y < 0))) ? T(r + y) : r;
      });
    case C::Pow:
      return m([](T x, T y) { return int_pow(x, y); });
    case C::Maximum:
      return m([](T x, T y) { return x > y ? x : y; });
    case C::Minimum:
      return m([](T x, T y) { return x < y ? x : y; });
    case C::BitwiseAnd:
      return m([](T x, T y) { return T(x & y); });
    case C::BitwiseOr:
      return m([](T x, T y) { return T(x | y); });
    case C::BitwiseXor:
      return m([](T x, T y) { return T(x ^ y); });
    case C::ShiftLeft:
      return m([](T x, T y) { return shift_left(x, y); });
    case C::ShiftRight:
      return m([](T x, T y) { return shift_right(x, y); });
    default:
      throw Error("[" + std::string(name(op.code)) + "] not an integer binary op");
  }
}

template <class T>
void compare(OpCode c, const CpuTensor& a, const CpuTensor& b, const CpuTensor& o) {
  using C = OpCode;
  using F = compute_t<T>;
  auto m = [&](auto f) { map2<T, bool>(a, b, o, f); };
  switch (c) {
    case C::Equal:
      return m([](F x, F y) { return x == y; });
    case C::NotEqual:
      return m([](F x, F y) { return x != y; });
    case C::Less:
      return m([](F x, F y) { return x < y; });
    case C::LessEqual:
      return m([](F x, F y) { return x <= y; });
    case C::Greater:
      return m([](F x, F y) { return x > y; });
    case C::GreaterEqual:
      return m([](F x, F y) { return x >= y; });
    default:
      throw Error("[" + std::string(name(c)) + "] not a comparison");
  }
}

void bool_binary(OpCode c, const CpuTensor& a, const CpuTensor& b, const CpuTensor& o) {
  auto m = [&](auto f) { map2<bool, bool>(a, b, o, f); };
  switch (c) {
    case OpCode::LogicalAnd:
      return m([](bool x, bool y) { return x && y; });
    case OpCode::LogicalOr:
      return m([](bool x, bool y) { return x || y; });
    case OpCode::LogicalXor:
      return m([](bool x, bool y) { return x != y; });
    default:
      throw Error("[" + std::string(name(c)) + "] not a logical op");
  }
}

// f32 pow on contiguous data, the exponent an array of the same size or one value:
// vmath::pow_f32 (vectorized in double), where libm's powf ran element by element.
bool pow_f32_fast(const CpuTensor& a, const CpuTensor& b, const CpuTensor& o) {
  const int64_t n = o.meta.shape.numel();
  if (!a.is_contiguous() || !b.is_contiguous() || !o.is_contiguous() || a.meta.shape.numel() != n)
    return false;
  const int64_t b_n = b.meta.shape.numel();
  if (b_n != n && b_n != 1) return false;
  const float *x = a.data<float>(), *y = b.data<float>();
  float* r = o.data<float>();
  const int64_t step = b_n == n ? 1 : 0;
  parallel_for(n, kGrain / 8, [&](int64_t s, int64_t e) {
    vmath::pow_f32(x + s, y + s * step, step, r + s, e - s);
  });
  return true;
}

}  // namespace

template <class T>
CpuTensor binary(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor o = reusable(in[0], out) ? in[0] : reusable(in[1], out) ? in[1] : empty(out);
  if constexpr (std::is_same_v<T, float>)
    if (op.code == OpCode::Pow && pow_f32_fast(in[0], in[1], o)) return o;
  if (info(op.code).family == OpFamily::Compare)
    compare<T>(op.code, in[0], in[1], o);
  else if constexpr (std::is_same_v<T, bool>)
    bool_binary(op.code, in[0], in[1], o);
  else if constexpr (is_half_v<T> || std::is_floating_point_v<T>)
    float_binary<T>(op.code, in[0], in[1], o);
  else
    int_binary<T>(op, in[0], in[1], o);
  return o;
}

template <class T>
CpuTensor where(const Op&, Inputs in, const TensorMeta& out) {
  CpuTensor o = empty(out);
  const Shape& s = out.shape;
  Dims sc = broadcast_strides(in[0], s), sa = broadcast_strides(in[1], s),
       sb = broadcast_strides(in[2], s);
  auto L = make_loop<4>(s, {&o.strides, &sc, &sa, &sb},
                        {o.offset, in[0].offset, in[1].offset, in[2].offset});
  int64_t s0 = L.inner(0), s1 = L.inner(1), s2 = L.inner(2), s3 = L.inner(3);
  [&] {
    T* d = reinterpret_cast<T*>(o.storage.get());
    const bool* c = reinterpret_cast<const bool*>(in[0].storage.get());
    const T* a = reinterpret_cast<const T*>(in[1].storage.get());
    const T* b = reinterpret_cast<const T*>(in[2].storage.get());
    // contiguous runs with a and b each contiguous or one broadcast value (a relu gradient's
    // zero, say) get loops with constant strides, which the compiler vectorizes
    auto runs = [&]<int64_t A, int64_t B>() {
      run_loop(L, [&](const std::array<int64_t, 4>& off, int64_t n) {
        T* dd = d + off[0];
        const bool* cc = c + off[1];
        const T *aa = a + off[2], *bb = b + off[3];
        int64_t i = 0;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          // branch-free: which side wins is data, and a mispredicted branch per element
          // costs more than the select
          using V = Vec<T>;
          constexpr int64_t VL = kLanes<T>;
          for (; i + VL <= n; i += VL) {
            const V av = A ? loadv(aa + i) : V{} + aa[0], bv = B ? loadv(bb + i) : V{} + bb[0];
            storev(dd + i, load_mask<T>(cc + i) ? av : bv);
          }
        }
        for (; i < n; ++i) dd[i] = cc[i] ? aa[i * A] : bb[i * B];
      });
    };
    if (s0 == 1 && s1 == 1 && (s2 == 0 || s2 == 1) && (s3 == 0 || s3 == 1)) {
      if (s2 == 1 && s3 == 1) return runs.template operator()<1, 1>();
      if (s2 == 1) return runs.template operator()<1, 0>();
      if (s3 == 1) return runs.template operator()<0, 1>();
      return runs.template operator()<0, 0>();
    }
    run_loop(L, [&](const std::array<int64_t, 4>& off, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        d[off[0] + i * s0] = c[off[1] + i * s1] ? a[off[2] + i * s2] : b[off[3] + i * s3];
    });
  }();
  return o;
}

template <class S>
CpuTensor cast(const Op& op, Inputs in, const TensorMeta& out) {
  if (in[0].meta.dtype == out.dtype) return op.attrs.flag ? contiguous(in[0]) : in[0];
  CpuTensor o = empty(out);
  if constexpr (std::is_same_v<S, float>) {  // to f16, contiguous: 8 at a time (narrow_run)
    if (out.dtype == DType::F16 && in[0].is_contiguous()) {
      const float* x = in[0].data<float>();
      f16* y = o.data<f16>();
      parallel_for(out.shape.numel(), kGrain,
                   [&](int64_t b, int64_t e) { narrow_run(x + b, y + b, e - b); });
      return o;
    }
  }
  dispatch_dtype(out.dtype, [&]<class D>() {
    map1<S, D>(in[0], o, [](compute_t<S> v) { return cast_value<D>(v); });
  });
  return o;
}

template <class T>
CpuTensor relu_backward(const Op&, Inputs in, const TensorMeta& out) {
  CpuTensor o = reusable(in[0], out) ? in[0] : empty(out);
  map2<T, T>(in[0], in[1], o, [](compute_t<T> g, compute_t<T> x) {
    return x > compute_t<T>(0) ? g : compute_t<T>(0);
  });
  return o;
}
template CpuTensor relu_backward<double>(const Op&, Inputs, const TensorMeta&);
template CpuTensor relu_backward<float>(const Op&, Inputs, const TensorMeta&);
template CpuTensor relu_backward<f16>(const Op&, Inputs, const TensorMeta&);
template CpuTensor relu_backward<bf16>(const Op&, Inputs, const TensorMeta&);
template CpuTensor relu_backward<int64_t>(const Op&, Inputs, const TensorMeta&);
template CpuTensor relu_backward<int32_t>(const Op&, Inputs, const TensorMeta&);
template CpuTensor relu_backward<int16_t>(const Op&, Inputs, const TensorMeta&);
template CpuTensor relu_backward<int8_t>(const Op&, Inputs, const TensorMeta&);
template CpuTensor relu_backward<uint8_t>(const Op&, Inputs, const TensorMeta&);

EMBER_CPU_DEFINE_KERNELS(Binary, binary)
EMBER_CPU_DEFINE_KERNELS(Compare, binary)
EMBER_CPU_DEFINE_KERNELS(Where, where)
EMBER_CPU_DEFINE_KERNELS(Cast, cast)

}  // namespace ember::cpu
