// Reductions (sum, prod, max, min, argmax, argmin) over any set of dims. The input is viewed
// as [outer, r, inner] with the r elements reduced; 32 independent lanes let the compiler
// vectorize, and float sums add 4096-element blocks in double for accuracy. Float and double
// sums read a thread's rows one after the other and a long run as 4 parts side by side, and
// reductions across rows step 4 rows a pass: see "Memory streams" in docs/cpu.md.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "ember/backends/cpu/elementwise.h"
#include "ember/backends/cpu/kernels.h"
#include "ember/core/view.h"

namespace ember::cpu {

namespace {

template <class T>
using acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, compute_t<T>,
                                 std::conditional_t<std::is_same_v<T, bool>, bool, T>>;

template <class T>
struct SumR {
  using A = acc_t<T>;
  static constexpr bool kWideMerge = std::is_same_v<A, float>;  // float partial sums meet in double
  static A init() { return A(0); }
  static A step(A a, A v, int64_t) { return wrap_add(a, v); }
  static A merge(A a, A b) { return wrap_add(a, b); }
  static T final(A a) { return static_cast<T>(a); }
};
template <class R>
constexpr bool wide_merge() {
  if constexpr (requires { R::kWideMerge; })
    return R::kWideMerge;
  else
    return false;
}

template <class T>
struct ProdR {
  using A = acc_t<T>;
  static A init() { return A(1); }
  static A step(A a, A v, int64_t) { return wrap_mul(a, v); }
  static A merge(A a, A b) { return wrap_mul(a, b); }
  static T final(A a) { return static_cast<T>(a); }
};
template <class T, bool kMax>
struct ExtR {
  using A = acc_t<T>;
  static A init() {
    if constexpr (std::is_same_v<A, bool>)
      return !kMax;
    else if constexpr (std::numeric_limits<A>::has_infinity)
      return kMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    else
      return kMax ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
  }
  static A step(A a, A v, int64_t) { return merge(a, v); }
  static A merge(A a, A b) {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<A>::quiet_NaN();
    }
    return kMax ? (b > a ? b : a) : (b < a ? b : a);
  }
  static T final(A a) { return static_cast<T>(a); }
};
// argmax/argmin: the first index of the extreme value; NaN counts as the extreme (PyTorch).
template <class T, bool kMax>
struct ArgR {
  using C = acc_t<T>;
  struct A {
    C v;
    int64_t i;
  };
  static A init() { return {ExtR<T, kMax>::init(), std::numeric_limits<int64_t>::max()}; }
  static A step(A a, C v, int64_t k) { return merge(a, A{v, k}); }
  static A merge(A a, A b) {
    bool an = is_nan(a.v), bn = is_nan(b.v);
    if (an || bn) return an && bn ? (b.i < a.i ? b : a) : (an ? a : b);
    bool better = kMax ? b.v > a.v : b.v < a.v;
    return better || (b.v == a.v && b.i < a.i) ? b : a;
  }
  static int64_t final(A a) { return a.i; }
  static bool is_nan(C v) {
    if constexpr (std::is_floating_point_v<C>)
      return std::isnan(v);
    else
      return false;
  }
};

constexpr int64_t kLanes = 32;  // 4 vector registers of floats: hides the add latency
constexpr int64_t kBlock = 4096;

// Reduces x[0..n) (stride 1) into an accumulator; indices start at k0.
template <class R, class T>
typename R::A reduce_one_run(const T* x, int64_t n, int64_t k0) {
  using A = typename R::A;
  using C = acc_t<T>;
  using Total = std::conditional_t<wide_merge<R>(), double, A>;  // float sums total in double
  Total total = R::init();
  for (int64_t b = 0; b < n; b += kBlock) {
    int64_t e = std::min(n, b + kBlock);
    A lanes[kLanes];
    for (auto& l : lanes) l = R::init();
    // element i at p[i - base]: x itself, or for halves the block widened at once (8 at a time
    // for f16 on F16C; one conversion an element had held an f16 sum_dim to half f32's speed)
    const auto run = [&](const auto* p, int64_t base) {
      int64_t i = b;
      for (; i + kLanes <= e; i += kLanes)
        for (int64_t j = 0; j < kLanes; ++j)
          lanes[j] = R::step(lanes[j], static_cast<C>(p[i - base + j]), k0 + i + j);
      for (; i < e; ++i) lanes[0] = R::step(lanes[0], static_cast<C>(p[i - base]), k0 + i);
    };
    if constexpr (is_half_v<T>) {
      alignas(64) float wide[kBlock];
      widen_run(x + b, wide, e - b);
      run(wide, b);
    } else {
      run(x, 0);
    }
    A blk = lanes[0];
    for (int64_t j = 1; j < kLanes; ++j) blk = R::merge(blk, lanes[j]);
    if constexpr (wide_merge<R>())
      total += static_cast<double>(blk);
    else
      total = R::merge(total, blk);
  }
  return static_cast<A>(total);
}

// Float and double sums read several runs side by side. One core reading one sequential run is
// held to what the prefetchers fetch ahead of it (an AMD EPYC: 9 GB/s on one thread, 16 GB/s on
// two); four runs at once keep more lines in flight (15 and 27 GB/s). Written with vectors: left
// to the compiler, GCC added the runs' lanes a scalar at a time.
constexpr int kStreams = 4;
template <class R, class T>
constexpr bool streamed_sum() {
  return std::is_same_v<R, SumR<T>> && std::is_floating_point_v<T> &&
         std::is_same_v<typename R::A, T>;
}
template <class T>
struct Vec32;
template <>
struct Vec32<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct Vec32<double> {
  typedef double type __attribute__((vector_size(32)));
};

// totals[s] = the sum of x[s][0..n), in 4096-element blocks of T totalled in double: 4 vectors
// a step over one run (4 chains of adds, for runs already in cache), 2 a run over several.
template <class T, int S>
void sum_runs(const T* const (&x)[S], int64_t n, double (&totals)[S]) {
  using V = typename Vec32<T>::type;
  constexpr int64_t W = int64_t(sizeof(V) / sizeof(T));
  constexpr int U = S == 1 ? 4 : 2;
  for (auto& t : totals) t = 0.0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    V acc[S][U] = {};
    int64_t i = b;
    for (; i + U * W <= e; i += U * W)
      for (int s = 0; s < S; ++s)
        for (int u = 0; u < U; ++u) {
          V v;
          std::memcpy(&v, x[s] + i + u * W, sizeof(V));
          acc[s][u] += v;
        }
    for (int s = 0; s < S; ++s) {
      V v = acc[s][0];
      for (int u = 1; u < U; ++u) v += acc[s][u];
      T blk = T(0);
      for (int64_t j = 0; j < W; ++j) blk += v[j];
      for (int64_t t = i; t < e; ++t) blk += x[s][t];
      totals[s] += static_cast<double>(blk);
    }
  }
}

// Reduces x[0..n) (stride 1) into an accumulator; indices start at k0. A long float or double
// sum is read as kStreams runs side by side, cut at block boundaries, totalled in order; a
// shorter one as one run of vectors.
template <class R, class T>
typename R::A reduce_run(const T* x, int64_t n, int64_t k0) {
  if constexpr (streamed_sum<R, T>()) {
    const int64_t part = n / kStreams / kBlock * kBlock;
    if (part > 0) {
      const T* xs[kStreams];
      for (int s = 0; s < kStreams; ++s) xs[s] = x + s * part;
      double totals[kStreams];
      sum_runs<T>(xs, part, totals);
      double total = 0.0;
      for (double t : totals) total += t;
      const int64_t done = kStreams * part;
      return static_cast<T>(total + static_cast<double>(reduce_one_run<R>(x + done, n - done, 0)));
    }
    const T* xs[1] = {x};
    double total[1];
    sum_runs<T>(xs, n, total);
    return static_cast<T>(total[0]);
  }
  return reduce_one_run<R>(x, n, k0);
}

// out[o] for the rows o in [b, e) of r elements each, one row after the other: the thread's rows
// are one sequential run. Read 4 rows side by side instead, sum_dim over the last dim of 4096 x
// 4096 floats took 1.23 ms on 2 threads of a Zen 4 (1.02 ms this way) and 2.55 on one (2.03),
// where an AVX2 EPYC measured earlier had read faster side by side ("Memory streams" in
// docs/cpu-measurements.md); on a Xeon 1.30 against 1.35 (2.72 against 2.81 on one thread),
// medians of 4 alternating runs.
template <class R, class T, class O>
void reduce_rows(const T* x, O* out, int64_t b, int64_t e, int64_t r) {
  for (int64_t o = b; o < e; ++o) out[o] = R::final(reduce_run<R>(x + o * r, r, 0));
}

template <class R, class T, class O>
void reduce_kernel(const T* x, O* out, int64_t outer, int64_t r, int64_t inner) {
  using A = typename R::A;
  using C = acc_t<T>;
  if (inner == 1) {
    if (outer >= num_threads() || outer * r < kGrain) {
      parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(r, 1)),
                   [&](int64_t b, int64_t e) { reduce_rows<R>(x, out, b, e, r); });
      return;
    }
    for (int64_t o = 0; o < outer; ++o) {  // few long rows: split each row across threads
      int64_t chunks = std::min<int64_t>(num_threads() * 4, (r + kGrain - 1) / kGrain);
      int64_t per = (r + chunks - 1) / chunks;
      std::vector<A> part(chunks, R::init());
      parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          int64_t s = c * per, n = std::min(r, s + per) - s;
          if (n > 0) part[c] = reduce_run<R>(x + o * r + s, n, s);
        }
      });
      A acc = part[0];
      for (int64_t c = 1; c < chunks; ++c) {
        if constexpr (wide_merge<R>())
          acc = static_cast<float>(double(acc) + double(part[c]));
        else
          acc = R::merge(acc, part[c]);
      }
      out[o] = R::final(acc);
    }
    return;
  }
  // Reduce across rows: accumulate inner rows, vectorized along inner, kStreams rows a pass
  // (read side by side, each element still stepped in row order). With fewer outer slices than
  // threads, the inner rows are cut in column ranges, one task each.
  const int64_t threads = num_threads();
  const int64_t cuts =
      outer >= threads
          ? 1
          : std::clamp<int64_t>(inner / 1024, 1, threads * 4 / std::max<int64_t>(outer, 1));
  const int64_t width = (inner + cuts - 1) / cuts;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(r * width, 1));
  parallel_for(outer * cuts, grain, [&](int64_t b, int64_t e) {
    const std::unique_ptr<A[]> acc(new A[static_cast<size_t>(width)]);  // (A may be bool)
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / cuts, j0 = t % cuts * width, n = std::min(inner, j0 + width) - j0;
      if (n <= 0) continue;
      A* a = acc.get();
      std::fill(a, a + n, R::init());
      const T* base = x + o * r * inner + j0;
      int64_t k = 0;
      for (; k + kStreams <= r; k += kStreams) {
        const T *r0 = base + k * inner, *r1 = r0 + inner, *r2 = r1 + inner, *r3 = r2 + inner;
        for (int64_t j = 0; j < n; ++j) {
          A v = R::step(a[j], static_cast<C>(r0[j]), k);
          v = R::step(v, static_cast<C>(r1[j]), k + 1);
          v = R::step(v, static_cast<C>(r2[j]), k + 2);
          a[j] = R::step(v, static_cast<C>(r3[j]), k + 3);
        }
      }
      for (; k < r; ++k) {
        const T* row = base + k * inner;
        for (int64_t j = 0; j < n; ++j) a[j] = R::step(a[j], static_cast<C>(row[j]), k);
      }
      for (int64_t j = 0; j < n; ++j) out[o * inner + j0 + j] = R::final(a[j]);
    }
  });
}

// The input laid out as [outer, reduced, inner], contiguous: the same for every element type.
struct Reduction {
  CpuTensor x;
  int64_t outer, r, inner;
};
Reduction reduce_input(const Op& op, const CpuTensor& x0) {
  const Shape& s = x0.meta.shape;
  size_t rank = s.rank();
  const ReduceLayout g = reduce_layout(s, op.attrs.dims);
  Reduction red{{}, g.outer, g.size, g.inner};
  if (g.order.empty()) {
    red.x = contiguous(x0);
  } else {  // kept dims first, then the reduced ones
    CpuTensor p = x0;
    for (size_t i = 0; i < rank; ++i) {
      p.strides[i] = x0.strides[static_cast<size_t>(g.order[i])];
      p.meta.shape[i] = s[static_cast<size_t>(g.order[i])];
    }
    red.x = contiguous(p);
  }
  return red;
}

// The kept dims one block in the middle of a contiguous x, [P, K, Q] with P and Q reduced (a
// bias gradient over [N, C, H, W], say): out[k] = the reduction of the P runs of Q elements at
// k, read in place. Through reduce_input, x was first copied into [K, P, Q] order, a pass that
// cost three times the reduction itself.
struct Middle {
  int64_t p = 0, k = 0, q = 0;
};
Middle middle_kept(const Op& op, const CpuTensor& x) {
  const Shape& s = x.meta.shape;
  const int64_t rank = static_cast<int64_t>(s.rank());
  std::vector<bool> reduced(static_cast<size_t>(rank), op.attrs.dims.empty());
  for (int64_t d : op.attrs.dims) reduced[static_cast<size_t>(d)] = true;
  int64_t first = 0, last = rank - 1;
  while (first < rank && reduced[size_t(first)]) ++first;
  while (last >= 0 && reduced[size_t(last)]) --last;
  if (first == 0 || last == rank - 1 || first > last || !x.is_contiguous()) return {};
  for (int64_t d = first; d <= last; ++d)
    if (reduced[size_t(d)]) return {};
  Middle m{1, 1, 1};
  for (int64_t d = 0; d < rank; ++d) (d < first ? m.p : d <= last ? m.k : m.q) *= s[size_t(d)];
  return m;
}

template <class R, class T, class O>
void reduce_middle(const T* x, O* out, const Middle& m) {
  using A = typename R::A;
  parallel_for(m.k, std::max<int64_t>(1, kGrain / std::max<int64_t>(m.p * m.q, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t k = b; k < e; ++k) {
                   std::conditional_t<wide_merge<R>(), double, A> acc = R::init();
                   for (int64_t p = 0; p < m.p; ++p) {
                     const A run = reduce_run<R>(x + (p * m.k + k) * m.q, m.q, 0);
                     if constexpr (wide_merge<R>())
                       acc += static_cast<double>(run);
                     else
                       acc = R::merge(acc, run);
                   }
                   out[k] = R::final(static_cast<A>(acc));
                 }
               });
}

}  // namespace

template <class T>
CpuTensor reduce(const Op& op, Inputs in, const TensorMeta& out) {
  if (const Middle m = middle_kept(op, in[0]);
      m.k >= num_threads() &&
      (op.code == OpCode::Sum || op.code == OpCode::Max || op.code == OpCode::Min)) {
    CpuTensor o = empty(out);
    const T* xp = in[0].data<T>();
    if (op.code == OpCode::Max)
      reduce_middle<ExtR<T, true>>(xp, o.data<T>(), m);
    else if (op.code == OpCode::Min)
      reduce_middle<ExtR<T, false>>(xp, o.data<T>(), m);
    else if constexpr (!std::is_same_v<T, bool>)
      reduce_middle<SumR<T>>(xp, o.data<T>(), m);
    else
      throw Error("[sum] not a reduction for bool");
    return o;
  }
  const Reduction red = reduce_input(op, in[0]);
  const CpuTensor& x = red.x;
  const int64_t outer = red.outer, r = red.r, inner = red.inner;
  CpuTensor o = empty(out);
  if (out.shape.numel() == 0) return o;
  [&] {
    const T* xp = x.data<T>();
    switch (op.code) {
      case OpCode::Max:
        return reduce_kernel<ExtR<T, true>>(xp, o.data<T>(), outer, r, inner);
      case OpCode::Min:
        return reduce_kernel<ExtR<T, false>>(xp, o.data<T>(), outer, r, inner);
      default:
        break;
    }
    if constexpr (!std::is_same_v<T, bool>) {
      switch (op.code) {
        case OpCode::Sum:
          return reduce_kernel<SumR<T>>(xp, o.data<T>(), outer, r, inner);
        case OpCode::Prod:
          return reduce_kernel<ProdR<T>>(xp, o.data<T>(), outer, r, inner);
        case OpCode::ArgMax:
          return reduce_kernel<ArgR<T, true>>(xp, o.data<int64_t>(), outer, r, inner);
        case OpCode::ArgMin:
          return reduce_kernel<ArgR<T, false>>(xp, o.data<int64_t>(), outer, r, inner);
        default:
          break;
      }
    }
    throw Error("[" + std::string(name(op.code)) + "] not a reduction for " +
                std::string(name(x.meta.dtype)));
  }();
  return o;
}

EMBER_CPU_DEFINE_KERNELS(Reduce, reduce)

}  // namespace ember::cpu
