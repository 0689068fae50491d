// Batched matmul with broadcast batch dims. f32/f64 use ember's blocked GEMM (gemm.cpp), or
// BLAS when built with EMBER_BLAS=ON; bf16 runs on AMX tiles or AVX-512 BF16 where the CPU has
// them (gemm_bf16.cpp), halves otherwise go through f32; integers use a simple kernel. int_matmul
// (8-bit operands, i32 sums) runs on AVX-512 VNNI where the CPU has it (gemm_int8.cpp).
#include <array>
#include <cstring>
#include <vector>

#include "ember/backends/cpu/elementwise.h"
#include "ember/backends/cpu/gemm.h"
#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/kernels.h"
#include "ember/backends/cpu/spatial.h"

#ifdef EMBER_HAVE_CBLAS
#include <cblas.h>
#endif

namespace ember::cpu {

namespace {

// A matrix operand: base pointer offset and layout of its last two dims.
struct MatView {
  int64_t ld;  // leading dimension
  bool trans;  // stored column-major
};

// Makes the last two dims of `t` usable by gemm (row- or column-major), copying if needed.
CpuTensor gemm_ready(const CpuTensor& t, MatView& mv) {
  size_t r = t.meta.shape.rank();
  int64_t rows = t.meta.shape[r - 2], cols = t.meta.shape[r - 1];
  int64_t s0 = t.strides[r - 2], s1 = t.strides[r - 1];
  if ((s1 == 1 || cols == 1) && s0 >= std::max<int64_t>(cols, 1)) {
    mv = {s0, false};
    return t;
  }
  if ((s0 == 1 || rows == 1) && s1 >= std::max<int64_t>(rows, 1)) {
    mv = {s1, true};
    return t;
  }
  CpuTensor c = empty(t.meta);
  copy_into(t, c);
  mv = {std::max<int64_t>(cols, 1), false};
  return c;
}

// C[m,n] = A[m,k] B[k,n]; portable kernel, rows of C in parallel, inner loop vectorizes.
template <class T, class Acc>
void gemm_portable(const T* A, MatView ma, const T* B, MatView mb, T* C, int64_t m, int64_t n,
                   int64_t k) {
  auto at = [&](int64_t i, int64_t p) { return ma.trans ? A[p * ma.ld + i] : A[i * ma.ld + p]; };
  // B^T or strided B: copy to a dense row-major panel once
  std::vector<Acc> Bd(static_cast<size_t>(k * n));
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      Bd[p * n + j] = static_cast<Acc>(mb.trans ? B[j * mb.ld + p] : B[p * mb.ld + j]);
  parallel_for(m, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * k, 1)),
               [&](int64_t b, int64_t e) {
                 std::vector<Acc> row(n);
                 for (int64_t i = b; i < e; ++i) {
                   std::fill(row.begin(), row.end(), Acc(0));
                   for (int64_t p = 0; p < k; ++p) {
                     Acc av = static_cast<Acc>(at(i, p));
                     const Acc* bp = Bd.data() + p * n;
                     for (int64_t j = 0; j < n; ++j) row[j] = wrap_add(row[j], wrap_mul(av, bp[j]));
                   }
                   for (int64_t j = 0; j < n; ++j) C[i * n + j] = static_cast<T>(row[j]);
                 }
               });
}

// Halves without a GEMM of their own: widened to f32, multiplied there, rounded back. Each
// operand is widened as it is stored (a transposed one stays transposed: the GEMM reads either),
// row by row on the threads, into scratch that is not zeroed first: element by element on one
// thread, into zeroed vectors, the conversions took 1024^2 in bf16 2.5 times as long as in f32.
template <class T>
MatRef<float> widen(const T* p, MatView v, int64_t rows, int64_t cols, float* dst) {
  const int64_t sr = v.trans ? cols : rows, sc = v.trans ? rows : cols;  // as stored
  parallel_for(sr, std::max<int64_t>(1, kGrain / sc), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) widen_run(p + r * v.ld, dst + r * sc, sc);
  });
  return v.trans ? MatRef<float>{dst, 1, sc} : MatRef<float>{dst, sc, 1};
}

template <class T>
void gemm_via_f32(const T* A, MatView ma, const T* B, MatView mb, T* C, int64_t m, int64_t n,
                  int64_t k) {
  const Scratch<float> a(m * k), b(k * n), c(m * n);
  gemm_f32(m, n, k, widen(A, ma, m, k, a.get()), widen(B, mb, k, n, b.get()), c.get(), n);
  const float* cp = c.get();
  parallel_for(m * n, kGrain,
               [&](int64_t i0, int64_t i1) { narrow_run(cp + i0, C + i0, i1 - i0); });
}

template <class T>
void gemm(const T* A, MatView ma, const T* B, MatView mb, T* C, int64_t m, int64_t n, int64_t k) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(C, C + m * n, T(0));
    return;
  }
  auto ref = [](const auto* p, MatView v) {
    using E = std::remove_const_t<std::remove_pointer_t<decltype(p)>>;
    return v.trans ? MatRef<E>{p, 1, v.ld} : MatRef<E>{p, v.ld, 1};
  };
#ifdef EMBER_HAVE_CBLAS
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ma.trans ? CblasTrans : CblasNoTrans,
                mb.trans ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, A, ma.ld, B, mb.ld, 0.0f, C,
                n);
    return;
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ma.trans ? CblasTrans : CblasNoTrans,
                mb.trans ? CblasTrans : CblasNoTrans, m, n, k, 1.0, A, ma.ld, B, mb.ld, 0.0, C, n);
    return;
  }
#endif
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32(m, n, k, ref(A, ma), ref(B, mb), C, n);
  } else if constexpr (std::is_same_v<T, double>) {
    gemm_f64(m, n, k, ref(A, ma), ref(B, mb), C, n);
  } else if constexpr (std::is_same_v<T, bf16>) {
    if (gemm_bf16(m, n, k, ref(A, ma), ref(B, mb), C, n)) return;
    gemm_via_f32(A, ma, B, mb, C, m, n, k);
  } else if constexpr (is_half_v<T>) {
    gemm_via_f32(A, ma, B, mb, C, m, n, k);
  } else {
    gemm_portable<T, T>(A, ma, B, mb, C, m, n, k);
  }
}

// The operands made gemm-ready and each output matrix's offsets into them: the same for every
// element type, so compiled once.
struct Batches {
  MatView ma{}, mb{};
  CpuTensor a, b, o;
  int64_t m, n, k;
  Dims oa, ob;  // per output matrix, in elements (inline for a few)
};
Batches plan_batches(Inputs in, const TensorMeta& out) {
  Batches p;
  p.a = gemm_ready(in[0], p.ma);
  p.b = gemm_ready(in[1], p.mb);
  p.o = empty(out);
  const Shape& os = out.shape;
  size_t r = os.rank();
  p.m = os[r - 2];
  p.n = os[r - 1];
  p.k = p.a.meta.shape[p.a.meta.shape.rank() - 1];
  // batch offsets of a and b for each output batch index
  Shape batch(std::span<const int64_t>(os.dims().data(), r - 2));
  auto bstrides = [&](const CpuTensor& t) {
    CpuTensor v = t;
    size_t tr = t.meta.shape.rank();
    v.meta.shape = Shape(std::span<const int64_t>(t.meta.shape.dims().data(), tr - 2));
    v.strides = Dims(std::span<const int64_t>(t.strides.data(), tr - 2));
    return broadcast_strides(v, batch);
  };
  Dims sa = bstrides(p.a), sb = bstrides(p.b);
  int64_t nb = batch.numel();
  p.oa = Dims(static_cast<size_t>(nb), 0);
  p.ob = Dims(static_cast<size_t>(nb), 0);
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t oa = p.a.offset, ob = p.b.offset, rem = bi;
    for (size_t d = batch.rank(); d-- > 0;) {
      int64_t i = rem % batch[d];
      rem /= batch[d];
      oa += i * sa[d];
      ob += i * sb[d];
    }
    p.oa[static_cast<size_t>(bi)] = oa;
    p.ob[static_cast<size_t>(bi)] = ob;
  }
  return p;
}

}  // namespace

template <class T>
CpuTensor matmul(const Op&, Inputs in, const TensorMeta& out) {
  Batches p = plan_batches(in, out);
  if constexpr (!std::is_same_v<T, bool>) {
    const T* a = reinterpret_cast<const T*>(p.a.storage.get());
    const T* b = reinterpret_cast<const T*>(p.b.storage.get());
    for (size_t bi = 0; bi < p.oa.size(); ++bi)
      gemm<T>(a + p.oa[bi], p.ma, b + p.ob[bi], p.mb, p.o.data<T>() + int64_t(bi) * p.m * p.n, p.m,
              p.n, p.k);
  }
  return p.o;
}

CpuTensor int_matmul(const Op& op, Inputs in, const TensorMeta& out) {
  if (cpu_has_avx512_vnni()) {
    Batches p = plan_batches(in, out);
    const auto* a = reinterpret_cast<const uint8_t*>(p.a.storage.get());
    const auto* b = reinterpret_cast<const uint8_t*>(p.b.storage.get());
    const bool sa = p.a.meta.dtype == DType::I8, sb = p.b.meta.dtype == DType::I8;
    const auto ref = [](const uint8_t* q, MatView v, bool is_signed) {
      return v.trans ? Int8Ref{q, 1, v.ld, is_signed} : Int8Ref{q, v.ld, 1, is_signed};
    };
    for (size_t bi = 0; bi < p.oa.size(); ++bi)
      gemm_int8(p.m, p.n, p.k, ref(a + p.oa[bi], p.ma, sa), ref(b + p.ob[bi], p.mb, sb),
                p.o.data<int32_t>() + int64_t(bi) * p.m * p.n, p.n);
    return p.o;
  }
  // the decomposition's way: widened to i32 and multiplied
  std::array<CpuTensor, 2> wide{cast_to(in[0], DType::I32), cast_to(in[1], DType::I32)};
  return matmul<int32_t>(op, wide, out);
}

EMBER_CPU_DEFINE_KERNELS(Matmul, matmul)

}  // namespace ember::cpu
