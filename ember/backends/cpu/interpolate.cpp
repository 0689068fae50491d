// Interpolation (torch.nn.functional.interpolate with an output size) and its backward op.
// Each spatial dim gets its own taps: for every output position, the input positions it
// reads and their weights (1 tap for nearest, 2 for linear, 4 for cubic). The output is the
// tensor product of the dims' taps, and the backward op adds the same weights back.
#include <cmath>
#include <vector>

#include "ember/backends/cpu/spatial.h"

namespace ember::cpu {

namespace {

template <class A>
struct Taps {
  int n = 1;
  std::vector<int64_t> at;  // [out * n]
  std::vector<A> w;         // [out * n]
};

// PyTorch's source position for output o: with align_corners the corners of input and
// output coincide; without it, the pixel centres are scaled (in / out) and clamped at 0,
// except for cubic.
template <class A>
A source_pos(A scale, int64_t o, bool align, bool cubic) {
  if (align) return scale * static_cast<A>(o);
  A src = scale * (static_cast<A>(o) + A(0.5)) - A(0.5);
  return !cubic && src < A(0) ? A(0) : src;
}

template <class A>
A linear_scale(int64_t in, int64_t out, bool align) {
  if (align) return out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
  return static_cast<A>(in) / static_cast<A>(out);
}

// Keys' cubic convolution kernel with A = -0.75, as PyTorch's bicubic.
template <class A>
void cubic_weights(A t, A* w) {
  constexpr A a = A(-0.75);
  auto near = [](A x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [](A x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

template <class A>
Taps<A> make_taps(InterpMode mode, bool align, int64_t in, int64_t out) {
  Taps<A> t;
  const bool nearest = mode == InterpMode::Nearest || mode == InterpMode::NearestExact;
  t.n = nearest ? 1 : mode == InterpMode::Linear ? 2 : 4;
  t.at.resize(static_cast<size_t>(out * t.n));
  t.w.resize(static_cast<size_t>(out * t.n));
  for (int64_t o = 0; o < out; ++o) {
    int64_t* at = t.at.data() + o * t.n;
    A* w = t.w.data() + o * t.n;
    switch (mode) {
      case InterpMode::Nearest: {  // floor(o * in / out), the scale in float like PyTorch
        float scale = static_cast<float>(in) / static_cast<float>(out);
        at[0] = std::min<int64_t>(static_cast<int64_t>(std::floor(static_cast<float>(o) * scale)),
                                  in - 1);
        w[0] = A(1);
        break;
      }
      case InterpMode::NearestExact: {  // floor((o + 0.5) * in / out), the scale in float
        float scale = static_cast<float>(in) / static_cast<float>(out);
        at[0] = std::min<int64_t>(
            static_cast<int64_t>(std::floor((static_cast<float>(o) + 0.5f) * scale)), in - 1);
        w[0] = A(1);
        break;
      }
      case InterpMode::Linear: {
        if (in == out) {
          at[0] = at[1] = o;
          w[0] = A(1);
          w[1] = A(0);
          break;
        }
        A src = source_pos(linear_scale<A>(in, out, align), o, align, false);
        int64_t i0 = std::min<int64_t>(static_cast<int64_t>(src), in - 1);
        A l1 = std::min(std::max(src - static_cast<A>(i0), A(0)), A(1));
        at[0] = i0;
        at[1] = i0 + (i0 < in - 1 ? 1 : 0);
        w[0] = A(1) - l1;
        w[1] = l1;
        break;
      }
      case InterpMode::Cubic: {
        A src = source_pos(linear_scale<A>(in, out, align), o, align, true);
        int64_t i = static_cast<int64_t>(std::floor(src));
        cubic_weights<A>(src - static_cast<A>(i), w);
        for (int k = 0; k < 4; ++k) at[k] = std::clamp<int64_t>(i - 1 + k, 0, in - 1);
        break;
      }
      case InterpMode::Area:  // never reaches the op: ember::interpolate pools instead
        throw ValueError("[interpolate] the area mode is adaptive average pooling");
    }
  }
  return t;
}

// The output is separable: for each output row (od, oh), the input rows its taps read are
// first combined into one row (tmp[iw] = sum of w_d * w_h * x[id, ih, iw]), then each output
// along w sums its taps of that row. The backward op runs the same two steps adjoint, per
// plane (output rows of one plane add into shared input rows).
template <class T>
void interpolate(const Op& op, const T* src, T* dst, const Shape& big, const Shape& small,
                 bool backward) {
  // big: the input's shape, small: the output's (names as in the forward op)
  Geom g = make_geom({}, spatial_of(big), spatial_of(small));
  size_t r = big.rank() - 2, off = 3 - r;
  Taps<T> taps[3];
  for (int i = 0; i < 3; ++i)  // dims added to reach 3 are size 1: a single tap
    taps[i] = make_taps<T>(i < static_cast<int>(off) ? InterpMode::Nearest : op.attrs.interp,
                           op.attrs.flag, g.in[i], g.out[i]);
  const Taps<T>&t0 = taps[0], &t1 = taps[1], &t2 = taps[2];
  const int64_t planes = big[0] * big[1], Lin = g.in_numel(), L = g.out_numel();
  const int64_t in1 = g.in[1], in2 = g.in[2], o1 = g.out[1], o2 = g.out[2];
  // calls f(input row offset, weight) for the input rows of output row (od, oh)
  auto rows_of = [&](int64_t od, int64_t oh, auto&& f) {
    for (int a = 0; a < t0.n; ++a)
      for (int b = 0; b < t1.n; ++b)
        f((t0.at[od * t0.n + a] * in1 + t1.at[oh * t1.n + b]) * in2,
          t0.w[od * t0.n + a] * t1.w[oh * t1.n + b]);
  };
  const int n2 = t2.n;
  const int64_t* at2 = t2.at.data();
  const T* w2 = t2.w.data();
  if (!backward) {
    int64_t rows = planes * g.out[0] * o1;
    int64_t work = in2 * t0.n * t1.n + o2 * n2;
    parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(work, 1)),
                 [&](int64_t b0, int64_t b1) {
                   std::vector<T> tmp(static_cast<size_t>(in2));
                   for (int64_t row = b0; row < b1; ++row) {
                     int64_t p = row / (g.out[0] * o1), od = row / o1 % g.out[0], oh = row % o1;
                     const T* x = src + p * Lin;
                     std::fill(tmp.begin(), tmp.end(), T(0));
                     rows_of(od, oh, [&](int64_t at, T w) {
                       const T* xr = x + at;
                       for (int64_t i = 0; i < in2; ++i) tmp[i] += w * xr[i];
                     });
                     T* y = dst + row * o2;
                     for (int64_t ow = 0; ow < o2; ++ow) {
                       T acc = 0;
                       for (int c = 0; c < n2; ++c) acc += w2[ow * n2 + c] * tmp[at2[ow * n2 + c]];
                       y[ow] = acc;
                     }
                   }
                 });
  } else {
    for_planes(planes, L * t0.n * t1.n * n2, [&](int64_t p) {
      const T* gy = src + p * L;
      T* gx = dst + p * Lin;
      std::fill(gx, gx + Lin, T(0));
      std::vector<T> tmp(static_cast<size_t>(in2));
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < o1; ++oh) {
          const T* grow = gy + (od * o1 + oh) * o2;
          std::fill(tmp.begin(), tmp.end(), T(0));
          for (int64_t ow = 0; ow < o2; ++ow)
            for (int c = 0; c < n2; ++c) tmp[at2[ow * n2 + c]] += w2[ow * n2 + c] * grow[ow];
          rows_of(od, oh, [&](int64_t at, T w) {
            T* xr = gx + at;
            for (int64_t i = 0; i < in2; ++i) xr[i] += w * tmp[i];
          });
        }
    });
  }
}

}  // namespace

CpuTensor interpolate_family(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor o = empty(out);
  bool backward = op.code == OpCode::InterpolateBackward;
  const Shape& big = backward ? out.shape : in[0].meta.shape;
  const Shape& small = backward ? in[0].meta.shape : out.shape;
  if (out.dtype == DType::F64)
    interpolate<double>(op, in[0].data<double>(), o.data<double>(), big, small, backward);
  else
    interpolate<float>(op, in[0].data<float>(), o.data<float>(), big, small, backward);
  return o;
}

}  // namespace ember::cpu
