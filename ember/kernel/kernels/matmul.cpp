#include "ember/kernel/kernels/matmul.h"

#include <algorithm>
#include <vector>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

namespace {
constexpr int kTile = 128;           // rows and columns of C a workgroup computes
constexpr int kDepth = 8;            // the K step staged in shared memory
constexpr int kSide = 16;            // threads a side: 16 x 16 = 256
constexpr int kPer = kTile / kSide;  // 8 x 8 outputs a thread
constexpr int kPitch = kTile + 1;    // A's tile row pitch (stores of a K column spread over banks)
constexpr int kThreads = kSide * kSide;
constexpr int kLoads = kTile * kDepth / kThreads;  // elements of each tile a thread stages
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
  KernelBuilder kb(detail::kname("matmul", s.dtype, s.wide_index), {kThreads, 1, 1});
  Mem a = kb.buffer("a", t, Access::Read), b = kb.buffer("b", t, Access::Read);
  Mem c = kb.buffer("c", t, Access::Write);
  Val m = kb.scalar("m", ix), n = kb.scalar("n", ix), k = kb.scalar("k", ix);
  Val batch = kb.scalar("batch", ix);
  Val sab = kb.scalar("a_batch_stride", ix), sar = kb.scalar("a_row_stride", ix);
  Val sac = kb.scalar("a_col_stride", ix);
  Val sbb = kb.scalar("b_batch_stride", ix), sbr = kb.scalar("b_row_stride", ix);
  Val sbc = kb.scalar("b_col_stride", ix);
  // Tiles of A (k-major: [kDepth][kPitch]) and of B ([kDepth][kTile]).
  Mem as = kb.shared("a_tile", acc, kDepth * kPitch), bs = kb.shared("b_tile", acc, kDepth * kTile);
  std::vector<Var> sum, pa, pb;
  for (int i = 0; i < kPer * kPer; ++i) sum.push_back(kb.var("sum" + std::to_string(i), acc));
  for (int q = 0; q < kLoads; ++q) {
    pa.push_back(kb.var("pa" + std::to_string(q), acc));
    pb.push_back(kb.var("pb" + std::to_string(q), acc));
  }

  Val tid = kb.cast(kb.local_id(0), ix);
  Val tx = tid % double(kSide), ty = tid / double(kSide);
  Val tiles_m = (m + double(kTile - 1)) / double(kTile);
  Val tiles_n = (n + double(kTile - 1)) / double(kTile);
  Val per_matrix = tiles_m * tiles_n;
  Val zero_ix = kb.lit(ix, 0);
  Val zero = kb.lit(acc, 0);
  // Which element of each tile a thread stages: consecutive threads along the operand's
  // contiguous dim (coalesced loads), whichever that is.
  Val a_rows = sac == kb.lit(ix, 1), b_rows = sbc == kb.lit(ix, 1);
  std::vector<Val> ar, ak, bk, bc;
  for (int q = 0; q < kLoads; ++q) {
    Val e = tid + double(q * kThreads);
    ar.push_back(kb.select(a_rows, e / double(kDepth), e % double(kTile)));
    ak.push_back(kb.select(a_rows, e % double(kDepth), e / double(kTile)));
    bk.push_back(kb.select(b_rows, e / double(kTile), e % double(kDepth)));
    bc.push_back(kb.select(b_rows, e % double(kTile), e / double(kDepth)));
  }
  kb.for_(kb.cast(kb.group_id(0), ix), per_matrix * batch, kb.cast(kb.num_groups(0), ix),
          [&](Val tile) {
            Val bi = tile / per_matrix, rest = tile % per_matrix;
            Val row0 = (rest / tiles_n) * double(kTile), col0 = (rest % tiles_n) * double(kTile);
            Val abase = bi * sab, bbase = bi * sbb;
            // The tiles' elements at depth k0 into registers; out-of-range ones are 0.
            auto fetch = [&](Val k0) {
              for (int q = 0; q < kLoads; ++q) {
                Val gr = row0 + ar[size_t(q)], gk = k0 + ak[size_t(q)];
                Val in = gr < m && gk < k;
                Val at = kb.select(in, abase + gr * sar + gk * sac, zero_ix);
                pa[size_t(q)].set(kb.select(in, kb.cast(kb.load(a, at), acc), zero));
                Val gkb = k0 + bk[size_t(q)], gc = col0 + bc[size_t(q)];
                Val inb = gkb < k && gc < n;
                Val bt = kb.select(inb, bbase + gkb * sbr + gc * sbc, zero_ix);
                pb[size_t(q)].set(kb.select(inb, kb.cast(kb.load(b, bt), acc), zero));
              }
            };
            for (const Var& v : sum) v.set(zero);
            fetch(zero_ix);
            kb.for_(zero_ix, k, kb.lit(ix, kDepth), [&](Val k0) {
              for (int q = 0; q < kLoads; ++q) {
                kb.store(as, ak[size_t(q)] * double(kPitch) + ar[size_t(q)], pa[size_t(q)].get());
                kb.store(bs, bk[size_t(q)] * double(kTile) + bc[size_t(q)], pb[size_t(q)].get());
              }
              kb.barrier();
              fetch(k0 + double(kDepth));  // the next step's, while this one computes
              for (int kk = 0; kk < kDepth; ++kk) {
                // Thread (tx, ty) owns rows ty + 16 i and columns tx + 16 j: the B reads of a
                // subgroup are consecutive, the A reads the same few addresses.
                std::vector<Val> av, bv;
                for (int i = 0; i < kPer; ++i)
                  av.push_back(kb.load(as, ty + double(kk * kPitch + i * kSide)));
                for (int j = 0; j < kPer; ++j)
                  bv.push_back(kb.load(bs, tx + double(kk * kTile + j * kSide)));
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
                Val r = row0 + ty + double(i * kSide), col = col0 + tx + double(j * kSide);
                kb.if_(r < m && col < n, [&] {
                  kb.store(c, cbase + r * n + col,
                           detail::convert(kb, sum[size_t(i) * kPer + size_t(j)].get(), t));
                });
              }
          });
  return kb.finish();
}

}  // namespace ember::kernel
