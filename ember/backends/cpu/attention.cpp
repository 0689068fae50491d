// The fused CPU kernel of the attention op: softmax(q k^T scale, masked) v without storing the
// [Lq, Lk] scores. Work items are (batch·head, block of kQueryBlock query rows); each walks
// the keys in blocks of kKeyBlock: scores of the block with ember's GEMM, scale, mask and
// causal limit, then a streaming softmax (the running row max m and row sum l; when m grows,
// what was summed so far is rescaled by exp(m_old - m_new)) and the block's P·V added into
// the item's output rows with the GEMM. Causal items stop at their last visible key block.
// f16 and bf16 are computed in f32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/backends/cpu/gemm.h"
#include "ember/backends/cpu/kernels.h"
#include "ember/backends/cpu/vmath.h"

namespace ember::cpu {

namespace {

constexpr int64_t kQueryBlock = 64;
constexpr int64_t kKeyBlock = 128;

struct Geometry {
  int64_t batch = 1, lq = 0, lk = 0, d = 0, dv = 0;
  double scale = 1;
  bool causal = false;
  const bool* mask = nullptr;      // null: no mask
  std::vector<int64_t> mask_base;  // per batch index: the mask's offset
  int64_t mask_row = 0, mask_col = 0;
};

// row[c] = exp(row[c] - m) in place.
inline void exp_shifted(float* row, int64_t n, float m) { vmath::exp_shifted_f32(row, row, n, m); }
inline void exp_shifted(double* row, int64_t n, double m) {
  for (int64_t c = 0; c < n; ++c) row[c] = std::exp(row[c] - m);
}
// The largest of row[0, n) (NaN passed over), and the sum; vectorized for f32: as plain loops
// they ran one element at a time (a float reduction is not reordered without -ffast-math), a
// quarter of the op's time.
inline float row_max(const float* row, int64_t n) { return vmath::max_f32(row, n); }
inline double row_max(const double* row, int64_t n) {
  double mx = -INFINITY;
  for (int64_t c = 0; c < n; ++c) mx = row[c] > mx ? row[c] : mx;
  return mx;
}
inline float row_sum(const float* row, int64_t n) { return float(vmath::sum_f32(row, n)); }
inline double row_sum(const double* row, int64_t n) {
  double sum = 0;
  for (int64_t c = 0; c < n; ++c) sum += row[c];
  return sum;
}

// Scratch of one worker: the scores of a block, the output accumulator, running max and sum.
template <class T>
struct Scratch {
  std::vector<T> s, acc, m, l;
  explicit Scratch(int64_t dv)
      : s(kQueryBlock * kKeyBlock), acc(kQueryBlock * dv), m(kQueryBlock), l(kQueryBlock) {}
};

// Rows [i0, i0 + rows) of batch entry b.
template <class T>
void attend(const Geometry& g, const T* q, const T* k, const T* v, T* out, int64_t b, int64_t i0,
            int64_t rows, Scratch<T>& w) {
  const int64_t d = g.d, dv = g.dv, off = g.lk - g.lq;
  const T* qb = q + (b * g.lq + i0) * d;
  const T* kb = k + b * g.lk * d;
  const T* vb = v + b * g.lk * dv;
  std::fill(w.acc.begin(), w.acc.begin() + rows * dv, T(0));
  std::fill(w.m.begin(), w.m.end(), T(-INFINITY));
  std::fill(w.l.begin(), w.l.end(), T(0));
  // Keys past the last row's causal limit are masked for every row of the item.
  const int64_t key_end = g.causal ? std::clamp(i0 + rows + off, int64_t{0}, g.lk) : g.lk;
  const T scale = static_cast<T>(g.scale);
  for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
    const int64_t cols = std::min(kKeyBlock, key_end - j0);
    T* s = w.s.data();
    if (d > 0)
      gemm_t(rows, cols, d, MatRef<T>{qb, d, 1}, MatRef<T>{kb + j0 * d, 1, d}, s, cols, false,
             false);
    else
      std::fill(s, s + rows * cols, T(0));
    for (int64_t r = 0; r < rows; ++r) {
      T* sr = s + r * cols;
      const int64_t i = i0 + r;
      // Columns [0, visible) pass the causal limit j <= i + off.
      const int64_t visible = g.causal ? std::clamp(i + off - j0 + 1, int64_t{0}, cols) : cols;
      for (int64_t c = 0; c < visible; ++c) sr[c] *= scale;
      for (int64_t c = visible; c < cols; ++c) sr[c] = T(-INFINITY);
      if (g.mask) {
        const bool* mr = g.mask + g.mask_base[b] + i * g.mask_row + j0 * g.mask_col;
        for (int64_t c = 0; c < visible; ++c)
          if (mr[c * g.mask_col]) sr[c] = T(-INFINITY);
      }
      const T mx = row_max(sr, visible);
      if (mx == T(-INFINITY)) {  // every key of the block masked for this row: P = 0
        std::fill(sr, sr + cols, T(0));
        continue;
      }
      const T m_new = std::max(w.m[r], mx);
      const T corr = std::exp(w.m[r] - m_new);  // 0 on the row's first visible block
      exp_shifted(sr, cols, m_new);
      w.l[r] = w.l[r] * corr + row_sum(sr, cols);
      w.m[r] = m_new;
      if (corr != T(1)) {
        T* ar = w.acc.data() + r * dv;
        for (int64_t c = 0; c < dv; ++c) ar[c] *= corr;
      }
    }
    if (dv > 0)
      gemm_t(rows, dv, cols, MatRef<T>{s, cols, 1}, MatRef<T>{vb + j0 * dv, dv, 1}, w.acc.data(),
             dv, true, false);
  }
  T* ob = out + (b * g.lq + i0) * dv;
  for (int64_t r = 0; r < rows; ++r) {
    const T inv = w.l[r] > 0 ? T(1) / w.l[r] : T(0);  // a row with no visible key gives 0
    for (int64_t c = 0; c < dv; ++c) ob[r * dv + c] = w.acc[r * dv + c] * inv;
  }
}

template <class T>
void attention_typed(const Geometry& g, const T* q, const T* k, const T* v, T* out) {
  const int64_t blocks = (g.lq + kQueryBlock - 1) / kQueryBlock;
  parallel_for(g.batch * blocks, 1, [&](int64_t begin, int64_t end) {
    Scratch<T> w(g.dv);
    for (int64_t it = begin; it < end; ++it) {
      const int64_t b = it / blocks, i0 = it % blocks * kQueryBlock;
      attend(g, q, k, v, out, b, i0, std::min(kQueryBlock, g.lq - i0), w);
    }
  });
}

CpuTensor as_dtype(const CpuTensor& t, DType dt) { return cast_to(t, dt); }

}  // namespace

CpuTensor attention(const Op& op, Inputs in, const TensorMeta& out) {
  const Shape& qs = in[0].meta.shape;
  const size_t r = qs.rank();
  Geometry g;
  for (size_t i = 0; i + 2 < r; ++i) g.batch *= qs[i];
  g.lq = qs[r - 2];
  g.d = qs[r - 1];
  g.lk = in[1].meta.shape[r - 2];
  g.dv = out.shape[r - 1];
  g.scale = op.attrs.scalar.f;
  g.causal = op.attrs.flag;
  if (out.shape.numel() == 0) return empty(out);
  const DType dt = out.dtype == DType::F64 ? DType::F64 : DType::F32;
  CpuTensor q = contiguous(as_dtype(in[0], dt)), k = contiguous(as_dtype(in[1], dt)),
            v = contiguous(as_dtype(in[2], dt));
  if (in.size() > 3) {
    Dims scores = qs.dims();
    scores[r - 1] = g.lk;
    const CpuTensor& m = in[3];
    Dims st = broadcast_strides(m, Shape(scores));
    g.mask = m.data<bool>();
    g.mask_row = st[r - 2];
    g.mask_col = st[r - 1];
    g.mask_base.assign(g.batch, 0);
    for (int64_t b = 0; b < g.batch; ++b) {
      int64_t rem = b, at = 0;
      for (size_t i = r - 2; i-- > 0;) {
        at += rem % scores[i] * st[i];
        rem /= scores[i];
      }
      g.mask_base[b] = at;
    }
  }
  CpuTensor y = empty(TensorMeta{out.shape, dt});
  if (dt == DType::F64)
    attention_typed(g, q.data<double>(), k.data<double>(), v.data<double>(), y.data<double>());
  else
    attention_typed(g, q.data<float>(), k.data<float>(), v.data<float>(), y.data<float>());
  return as_dtype(y, out.dtype);
}

}  // namespace ember::cpu
