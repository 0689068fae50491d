#include "ember/kernel/kernels/matmul_coop.h"

#include <algorithm>
#include <vector>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

namespace {

constexpr int kPad = 8;  // elements a shared row is padded by (16 bytes of f16)

// An operand's tile in shared memory: `outer` rows of `inner` contiguous elements (+ kPad).
struct Layout {
  int outer, inner;
  int pitch() const { return inner + kPad; }
  int64_t size() const { return int64_t(outer) * pitch(); }
};
// A: M x K, its contiguous dimension inner (K row-major, M column-major); B: K x N likewise.
Layout a_layout(const CoopMatmulSpec& s) {
  return s.a_col_major ? Layout{s.depth, s.tile_m} : Layout{s.tile_m, s.depth};
}
Layout b_layout(const CoopMatmulSpec& s) {
  return s.b_col_major ? Layout{s.tile_n, s.depth} : Layout{s.depth, s.tile_n};
}
int64_t scratch_size(const CoopMatmulSpec& s) {
  return int64_t(s.warps_m) * s.warps_n * s.frag_m * s.frag_n;
}

void check(const CoopMatmulSpec& s) {
  auto bad = [&](const std::string& why) {
    throw ValueError("[matmul] cooperative tile " + s.tag() + ": " + why);
  };
  if (s.dtype != DType::F16) throw ValueError("[matmul] cooperative matrices take f16 here");
  if (s.warps_m <= 0 || s.warps_n <= 0 || s.subgroup <= 0 || s.frag_m <= 0 || s.frag_n <= 0 ||
      s.frag_k <= 0)
    bad("sizes must be positive");
  if (s.tile_m % (s.warps_m * s.frag_m) || s.tile_n % (s.warps_n * s.frag_n) ||
      s.depth % s.frag_k || s.depth % 4)
    bad("the subgroups' fragments must divide the tile, and the fragment's k the depth");
  if (s.threads() > 1024) bad("more than 1024 threads");
  if ((s.frag_m * s.frag_n) % s.subgroup) bad("a subgroup writes a fragment in whole rounds");
  for (const Layout& l : {a_layout(s), b_layout(s)}) {
    int64_t items = int64_t(l.outer) * l.inner;
    if (l.inner % 4 || items % (4 * s.threads())) bad("the threads must divide the tiles");
  }
}

}  // namespace

int64_t CoopMatmulSpec::shared_bytes() const {
  return 2 * (a_layout(*this).size() + b_layout(*this).size()) * 2 + scratch_size(*this) * 4;
}

std::string CoopMatmulSpec::tag() const {
  auto n = [](int v) { return std::to_string(v); };
  return n(tile_m) + "x" + n(tile_n) + "x" + n(depth) + "/" + n(warps_m) + "x" + n(warps_n) + "/" +
         n(frag_m) + "x" + n(frag_n) + "x" + n(frag_k) + "/" + (a_col_major ? "c" : "r") +
         (b_col_major ? "c" : "r") + "/" + (vector_a ? "v" : "s") + (vector_b ? "v" : "s");
}

int64_t coop_matmul_groups(const CoopMatmulSpec& s, int64_t m, int64_t n, int64_t batch,
                           int64_t cap) {
  int64_t tiles = ((m + s.tile_m - 1) / s.tile_m) * ((n + s.tile_n - 1) / s.tile_n) * batch;
  return std::max<int64_t>(1, std::min(tiles, cap));
}

Kernel coop_matmul_kernel(const CoopMatmulSpec& s) {
  check(s);
  const ScalarType t = ScalarType::F16, acc = ScalarType::F32;
  const ScalarType ix = detail::index_type(s.wide_index);
  const int BM = s.tile_m, BN = s.tile_n, BK = s.depth, threads = s.threads();
  const int WM = BM / s.warps_m, WN = BN / s.warps_n;  // a subgroup's block
  const int FM = WM / s.frag_m, FN = WN / s.frag_n;    // its fragments along M and N
  std::string shape = "_" + s.tag();
  std::replace(shape.begin(), shape.end(), '/', '_');
  KernelBuilder kb(detail::kname("matmul_coop", s.dtype, s.wide_index, shape), {threads, 1, 1});
  const detail::MatmulParams P =
      detail::matmul_params(kb, t, ix, s.vector_a ? 4 : 1, s.vector_b ? 4 : 1, 1);
  // (Named copies, not a structured binding: clang before 16 cannot capture those in lambdas.)
  Mem a = P.a, b = P.b, c = P.c;
  Val m = P.m, n = P.n, k = P.k, batch = P.batch;
  Val sab = P.sab, sar = P.sar, sac = P.sac, sbb = P.sbb, sbr = P.sbr, sbc = P.sbc;
  const Layout LA = a_layout(s), LB = b_layout(s);
  Mem as = kb.shared("a_tile", t, 2 * LA.size()), bs = kb.shared("b_tile", t, 2 * LB.size());
  Mem scratch = kb.shared("c_scratch", acc, scratch_size(s));
  std::vector<Frag> fa, fb, fc;
  for (int i = 0; i < FM; ++i)
    fa.push_back(kb.fragment("fa" + std::to_string(i), FragmentUse::A, t, s.frag_m, s.frag_k));
  for (int j = 0; j < FN; ++j)
    fb.push_back(kb.fragment("fb" + std::to_string(j), FragmentUse::B, t, s.frag_k, s.frag_n));
  for (int i = 0; i < FM * FN; ++i)
    fc.push_back(
        kb.fragment("fc" + std::to_string(i), FragmentUse::Accumulator, acc, s.frag_m, s.frag_n));

  Val tid = kb.cast(kb.local_id(0), ix);
  Val warp = tid / double(s.subgroup), lane = tid % double(s.subgroup);
  Val wm = warp / double(s.warps_n), wn = warp % double(s.warps_n);
  Val tiles_m = (m + double(BM - 1)) / double(BM);
  Val tiles_n = (n + double(BN - 1)) / double(BN);
  Val per_matrix = tiles_m * tiles_n;
  Val zero_ix = kb.lit(ix, 0);
  Val zero = kb.lit(acc, 0);
  Val zero_h = kb.lit(t, 0), zero_h4 = kb.lit(Type::vec(t, 4), 0);

  // One operand's tile: its layout, global origin (outer, inner), bounds and strides.
  struct Tile {
    Mem shared, src;
    Layout layout;
    bool vector;
  };
  struct Staged {
    Mem mem;
    Val at, value;  // the shared index of the first element, 1 or 4 values
  };
  auto stage = [&](const Tile& tl, const Val& outer0, const Val& inner0, const Val& outer_bound,
                   const Val& inner_bound, const Val& base, const Val& outer_stride,
                   const Val& inner_stride, std::vector<Staged>& out) {
    const int I = tl.layout.inner, per = tl.vector ? 4 : 1;
    const int count = tl.layout.outer * I / per;
    for (int q = 0; q < count / threads; ++q) {
      Val e = tid + double(q * threads);
      Val o = e / double(I / per), i = (e % double(I / per)) * double(per);
      Val go = outer0 + o, gi = inner0 + i;
      Val in = go < outer_bound && gi < inner_bound;
      Val at = kb.select(in, base + go * outer_stride + gi * inner_stride, zero_ix);
      Val v = tl.vector ? kb.select(in, kb.load(tl.src, at, 4), zero_h4)
                        : kb.select(in, kb.load(tl.src, at), zero_h);
      out.push_back({tl.shared, o * double(tl.layout.pitch()) + i, v});
    }
  };
  const Tile ta{as, a, LA, s.vector_a}, tb{bs, b, LB, s.vector_b};
  auto load_step = [&](const Val& k0, const Val& row0, const Val& col0, const Val& abase,
                       const Val& bbase) {
    std::vector<Staged> out;
    if (s.a_col_major)
      stage(ta, k0, row0, k, m, abase, sac, sar, out);
    else
      stage(ta, row0, k0, m, k, abase, sar, sac, out);
    if (s.b_col_major)
      stage(tb, col0, k0, n, k, bbase, sbc, sbr, out);
    else
      stage(tb, k0, col0, k, n, bbase, sbr, sbc, out);
    return out;
  };
  auto store_step = [&](const std::vector<Staged>& staged, const Val& buffer) {
    for (const Staged& st : staged) {
      Val off = buffer * double(st.mem.index == as.index ? LA.size() : LB.size());
      if (!st.value.type().is_vector()) {
        kb.store(st.mem, off + st.at, st.value);
        continue;
      }
      for (int l = 0; l < 4; ++l)
        kb.store(st.mem, off + st.at + double(l), kb.extract(st.value, l));
    }
  };
  // acc += this step's tiles (in `buffer`), frag_k at a time.
  auto multiply = [&](const Val& buffer) {
    Val a_off = buffer * double(LA.size()), b_off = buffer * double(LB.size());
    Val pa = kb.lit(ix, LA.pitch()), pb = kb.lit(ix, LB.pitch());
    for (int kk = 0; kk < BK; kk += s.frag_k) {
      for (int i = 0; i < FM; ++i) {
        Val row = wm * double(WM) + double(i * s.frag_m);
        Val at = s.a_col_major ? a_off + double(kk * LA.pitch()) + row
                               : a_off + row * double(LA.pitch()) + double(kk);
        kb.frag_load(fa[size_t(i)], as, at, pa, s.a_col_major);
      }
      for (int j = 0; j < FN; ++j) {
        Val col = wn * double(WN) + double(j * s.frag_n);
        Val at = s.b_col_major ? b_off + col * double(LB.pitch()) + double(kk)
                               : b_off + double(kk * LB.pitch()) + col;
        kb.frag_load(fb[size_t(j)], bs, at, pb, s.b_col_major);
      }
      for (int i = 0; i < FM; ++i)
        for (int j = 0; j < FN; ++j)
          kb.frag_mma(fc[size_t(i * FN + j)], fa[size_t(i)], fb[size_t(j)]);
    }
  };

  kb.for_(kb.cast(kb.group_id(0), ix), per_matrix * batch, kb.cast(kb.num_groups(0), ix),
          [&](Val tile) {
            Val bi = tile / per_matrix, rest = tile % per_matrix;
            Val row0 = (rest / tiles_n) * double(BM), col0 = (rest % tiles_n) * double(BN);
            Val abase = bi * sab, bbase = bi * sbb;
            for (const Frag& f : fc) kb.frag_fill(f, zero);
            detail::double_buffered_steps(
                kb, k, BK, [&](const Val& k0) { return load_step(k0, row0, col0, abase, bbase); },
                store_step, multiply);
            // Each accumulator through this subgroup's scratch, then out with bounds checks.
            Val cbase = bi * m * n;
            Val mine = warp * double(s.frag_m * s.frag_n);
            for (int i = 0; i < FM; ++i)
              for (int j = 0; j < FN; ++j) {
                kb.frag_store(fc[size_t(i * FN + j)], scratch, mine, kb.lit(ix, s.frag_n), false);
                kb.barrier();
                for (int q = 0; q < s.frag_m * s.frag_n / s.subgroup; ++q) {
                  Val e = lane + double(q * s.subgroup);
                  Val r = row0 + wm * double(WM) + double(i * s.frag_m) + e / double(s.frag_n);
                  Val col = col0 + wn * double(WN) + double(j * s.frag_n) + e % double(s.frag_n);
                  Val v = kb.load(scratch, mine + e);
                  kb.if_(r < m && col < n,
                         [&] { kb.store(c, cbase + r * n + col, detail::convert(kb, v, t)); });
                }
                kb.barrier();
              }
          });
  return kb.finish();
}

}  // namespace ember::kernel
