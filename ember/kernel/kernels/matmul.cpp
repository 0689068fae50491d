#include "ember/kernel/kernels/matmul.h"

#include <algorithm>
#include <vector>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

namespace {
constexpr int kTile = 64;   // rows and columns of C a workgroup computes
constexpr int kDepth = 16;  // the K step staged in shared memory
constexpr int kSide = 16;   // threads a side: 16 x 16 = 256, 4 x 4 outputs each
constexpr int kPer = kTile / kSide;
}  // namespace

int64_t matmul_groups(int64_t m, int64_t n, int64_t batch, int64_t cap) {
  int64_t tiles = ((m + kTile - 1) / kTile) * ((n + kTile - 1) / kTile) * batch;
  return std::max<int64_t>(1, std::min(tiles, cap));
}

Kernel matmul_kernel(const MatmulSpec& s) {
  if (s.dtype == DType::Bool) throw ValueError("[matmul] no kernel for bool");
  ScalarType t = scalar_of(s.dtype);
  ScalarType acc =
      is_float(t) ? (t == ScalarType::F64 ? ScalarType::F64 : ScalarType::F32) : ScalarType::I64;
  ScalarType ix = detail::index_type(s.wide_index);
  KernelBuilder kb(detail::kname("matmul", s.dtype, s.wide_index), {kSide * kSide, 1, 1});
  Mem a = kb.buffer("a", t, Access::Read), b = kb.buffer("b", t, Access::Read);
  Mem c = kb.buffer("c", t, Access::Write);
  Val m = kb.scalar("m", ix), n = kb.scalar("n", ix), k = kb.scalar("k", ix);
  Val batch = kb.scalar("batch", ix);
  Val sab = kb.scalar("a_batch_stride", ix), sar = kb.scalar("a_row_stride", ix);
  Val sac = kb.scalar("a_col_stride", ix);
  Val sbb = kb.scalar("b_batch_stride", ix), sbr = kb.scalar("b_row_stride", ix);
  Val sbc = kb.scalar("b_col_stride", ix);
  // Tiles of A (k-major: [kDepth][kTile]) and of B ([kDepth][kTile]).
  Mem as = kb.shared("a_tile", acc, kDepth * kTile), bs = kb.shared("b_tile", acc, kDepth * kTile);
  std::vector<Var> sum;
  sum.reserve(kPer * kPer);
  for (int i = 0; i < kPer * kPer; ++i) sum.push_back(kb.var("sum" + std::to_string(i), acc));

  Val tid = kb.cast(kb.local_id(0), ix);
  Val tx = tid % double(kSide), ty = tid / double(kSide);
  Val tiles_m = (m + double(kTile - 1)) / double(kTile);
  Val tiles_n = (n + double(kTile - 1)) / double(kTile);
  Val per_matrix = tiles_m * tiles_n;
  Val zero_ix = kb.lit(ix, 0);
  Val zero = kb.lit(acc, 0);
  kb.for_(kb.cast(kb.group_id(0), ix), per_matrix * batch, kb.cast(kb.num_groups(0), ix),
          [&](Val tile) {
            Val bi = tile / per_matrix, rest = tile % per_matrix;
            Val row0 = (rest / tiles_n) * double(kTile), col0 = (rest % tiles_n) * double(kTile);
            Val abase = bi * sab, bbase = bi * sbb;
            for (const Var& v : sum) v.set(zero);
            kb.for_(zero_ix, k, kb.lit(ix, kDepth), [&](Val k0) {
              // Each thread stages 4 elements of each tile; out-of-range ones are 0.
              for (int q = 0; q < kTile * kDepth / (kSide * kSide); ++q) {
                Val e = tid + double(q * kSide * kSide);
                Val r = e / double(kDepth), kk = e % double(kDepth);  // A: row r, depth kk
                Val gr = row0 + r, gk = k0 + kk;
                Val in = gr < m && gk < k;
                Val at = kb.select(in, abase + gr * sar + gk * sac, zero_ix);
                kb.store(as, kk * double(kTile) + r,
                         kb.select(in, kb.cast(kb.load(a, at), acc), zero));
                Val kb_ = e / double(kTile), cc = e % double(kTile);  // B: depth kb_, column cc
                Val bk = k0 + kb_, gc = col0 + cc;
                Val inb = bk < k && gc < n;
                Val bt = kb.select(inb, bbase + bk * sbr + gc * sbc, zero_ix);
                kb.store(bs, kb_ * double(kTile) + cc,
                         kb.select(inb, kb.cast(kb.load(b, bt), acc), zero));
              }
              kb.barrier();
              for (int kk = 0; kk < kDepth; ++kk) {
                std::vector<Val> av, bv;
                for (int i = 0; i < kPer; ++i)
                  av.push_back(kb.load(as, ty * double(kPer) + double(kk * kTile + i)));
                for (int j = 0; j < kPer; ++j)
                  bv.push_back(kb.load(bs, tx * double(kPer) + double(kk * kTile + j)));
                for (int i = 0; i < kPer; ++i)
                  for (int j = 0; j < kPer; ++j) {
                    const Var& v = sum[size_t(i) * kPer + size_t(j)];
                    v.set(is_float(acc) ? kb.fma(av[size_t(i)], bv[size_t(j)], v.get())
                                        : v.get() + av[size_t(i)] * bv[size_t(j)]);
                  }
              }
              kb.barrier();  // the tiles are overwritten next
            });
            Val cbase = bi * m * n;
            for (int i = 0; i < kPer; ++i)
              for (int j = 0; j < kPer; ++j) {
                Val r = row0 + ty * double(kPer) + double(i),
                    col = col0 + tx * double(kPer) + double(j);
                kb.if_(r < m && col < n, [&] {
                  kb.store(c, cbase + r * n + col,
                           detail::convert(kb, sum[size_t(i) * kPer + size_t(j)].get(), t));
                });
              }
          });
  return kb.finish();
}

}  // namespace ember::kernel
