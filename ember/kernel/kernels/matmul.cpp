#include "ember/kernel/kernels/matmul.h"

#include <algorithm>
#include <vector>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

namespace {

ScalarType acc_type(DType d) {
  ScalarType t = scalar_of(d);
  return is_float(t) ? (t == ScalarType::F64 ? ScalarType::F64 : ScalarType::F32) : ScalarType::I64;
}

// Shared memory: A's tile row by row ([tile_m][row], K contiguous: a thread reads 4 steps of K
// of one row as a vector), B's tile step by step ([depth][tile_n], N contiguous). A's rows are
// padded by 4 where they are written element by element, which spreads a subgroup's writes
// over the banks.
int a_row(const MatmulSpec& s) { return s.depth + (s.load_a == MatmulLoad::Vector ? 0 : 4); }
int64_t a_size(const MatmulSpec& s) { return int64_t(s.tile_m) * a_row(s); }
int64_t b_size(const MatmulSpec& s) { return int64_t(s.depth) * s.tile_n; }

void check(const MatmulSpec& s) {
  auto bad = [&](const std::string& why) {
    throw ValueError("[matmul] tile " + s.tag() + ": " + why);
  };
  if (s.dtype == DType::Bool) throw ValueError("[matmul] no kernel for bool");
  if ((s.thread_m != 4 && s.thread_m != 8) || (s.thread_n != 4 && s.thread_n != 8))
    bad("a thread computes 4 or 8 rows and columns");
  if (s.tile_m <= 0 || s.tile_n <= 0 || s.tile_m % s.thread_m || s.tile_n % s.thread_n)
    bad("the threads' blocks must divide the tile");
  if (s.depth <= 0 || s.depth % 4) bad("the depth must be a multiple of 4");
  int th = s.threads();
  if (th > 1024) bad("more than 1024 threads");
  // What each load path stages (elements, or 4-element groups) and the threads must divide
  // one another, so that every item is staged.
  for (int items :
       {s.tile_m * s.depth, s.tile_m * s.depth / 4, s.tile_n * s.depth, s.tile_n * s.depth / 4})
    if (items % th && th % items) bad("the threads and the tiles' staged items must divide");
}

char load_tag(MatmulLoad l) {
  return l == MatmulLoad::Scalar ? 's' : l == MatmulLoad::Vector ? 'v' : 't';
}

}  // namespace

int64_t MatmulSpec::shared_bytes() const {
  return 2 * (a_size(*this) + b_size(*this)) * byte_size(acc_type(dtype));
}

std::string MatmulSpec::tag() const {
  return std::to_string(tile_m) + "x" + std::to_string(tile_n) + "x" + std::to_string(depth) + "/" +
         std::to_string(thread_m) + "x" + std::to_string(thread_n) + "/" + load_tag(load_a) +
         load_tag(load_b) + (vector_c ? "v" : "s");
}

int64_t matmul_groups(const MatmulSpec& s, int64_t m, int64_t n, int64_t batch, int64_t cap) {
  int64_t tiles = ((m + s.tile_m - 1) / s.tile_m) * ((n + s.tile_n - 1) / s.tile_n) * batch;
  return std::max<int64_t>(1, std::min(tiles, cap));
}

Kernel matmul_kernel(const MatmulSpec& s) {
  check(s);
  ScalarType t = scalar_of(s.dtype);
  ScalarType acc = acc_type(s.dtype);
  ScalarType ix = detail::index_type(s.wide_index);
  const int BM = s.tile_m, BN = s.tile_n, BK = s.depth, TM = s.thread_m, TN = s.thread_n;
  const int threads = s.threads(), side_n = BN / TN;
  std::string shape = "_" + s.tag();  // 128x128x8/8x8/vvv, as an identifier
  std::replace(shape.begin(), shape.end(), '/', '_');
  KernelBuilder kb(detail::kname("matmul", s.dtype, s.wide_index, shape), {threads, 1, 1});
  auto vec_align = [](MatmulLoad l) { return l == MatmulLoad::Scalar ? 1 : 4; };
  const detail::MatmulParams P = detail::matmul_params(kb, t, ix, vec_align(s.load_a),
                                                       vec_align(s.load_b), s.vector_c ? 4 : 1);
  // (Named copies, not a structured binding: clang before 16 cannot capture those in lambdas.)
  Mem a = P.a, b = P.b, c = P.c;
  Val m = P.m, n = P.n, k = P.k, batch = P.batch;
  Val sab = P.sab, sar = P.sar, sac = P.sac, sbb = P.sbb, sbr = P.sbr, sbc = P.sbc;
  const int AR = a_row(s);
  const int64_t AS = a_size(s), BS = b_size(s);
  Mem as = kb.shared("a_tile", acc, 2 * AS), bs = kb.shared("b_tile", acc, 2 * BS);
  std::vector<Var> sum;
  sum.reserve(size_t(TM) * TN);
  for (int i = 0; i < TM * TN; ++i) sum.push_back(kb.var("sum" + std::to_string(i), acc));

  const Type acc4 = Type::vec(acc, 4);
  Val tid = kb.cast(kb.local_id(0), ix);
  Val tx = tid % double(side_n), ty = tid / double(side_n);
  Val tiles_m = (m + double(BM - 1)) / double(BM);
  Val tiles_n = (n + double(BN - 1)) / double(BN);
  Val per_matrix = tiles_m * tiles_n;
  Val zero_ix = kb.lit(ix, 0);
  Val zero = kb.lit(acc, 0), zero4 = kb.lit(acc4, 0);

  // One staged element or 4-element group: where it goes in shared memory and its value.
  struct Staged {
    Mem mem;
    std::vector<Val> at;  // index of each written element (one: a vector store)
    Val value;            // scalar or 4 lanes
  };
  auto fetch = [&](const Mem& src, const Val& in, const Val& index, bool vector) {
    Val at = kb.select(in, index, zero_ix);
    if (!vector) return kb.select(in, kb.cast(kb.load(src, at), acc), zero);
    return kb.select(in, kb.cast(kb.load(src, at, 4), acc4), zero4);
  };
  // The q-th of `count` items this thread stages (fewer items than threads: some are read
  // by two threads, which write the same value).
  auto item = [&](int q, int count) {
    return count < threads ? tid % double(count) : tid + double(q * threads);
  };
  // One operand's tile as shared memory holds it: `outer` rows of `inner` contiguous elements
  // (A: M x K, B: K x N), their global origin, bounds and strides. Elements are read one by
  // one (Scalar), 4 along the inner dimension (Vector: its stride is 1) or 4 along the outer
  // one (VectorTransposed: its stride is 1, written to shared memory one by one). Consecutive
  // threads take consecutive items along the output's dimension (A's M, B's N: `mn_outer` says
  // which that is), or along the inner one for Vector.
  struct Tile {
    Mem shared;
    int outer, inner, pitch;
    Val outer0, inner0, outer_bound, inner_bound, base, outer_stride, inner_stride;
    MatmulLoad load;
    bool mn_outer;
    Mem src;
  };
  auto stage = [&](const Tile& t, std::vector<Staged>& out) {
    const int O = t.outer, I = t.inner;
    const bool vector = t.load != MatmulLoad::Scalar;
    const int count = O * I / (vector ? 4 : 1);
    for (int q = 0; q < std::max(1, count / threads); ++q) {
      Val e = item(q, count), o, i;
      if (t.load == MatmulLoad::Vector) {
        o = e / double(I / 4), i = (e % double(I / 4)) * 4.0;
      } else if (t.load == MatmulLoad::VectorTransposed) {
        if (t.mn_outer)
          o = (e % double(O / 4)) * 4.0, i = e / double(O / 4);
        else
          i = e % double(I), o = (e / double(I)) * 4.0;
      } else if (t.mn_outer) {
        o = e % double(O), i = e / double(O);
      } else {
        i = e % double(I), o = e / double(I);
      }
      Val go = t.outer0 + o, gi = t.inner0 + i;
      Val in = go < t.outer_bound && gi < t.inner_bound;
      Val at = t.load == MatmulLoad::Vector ? t.base + go * t.outer_stride + gi
               : t.load == MatmulLoad::VectorTransposed
                   ? t.base + go + gi * t.inner_stride
                   : t.base + go * t.outer_stride + gi * t.inner_stride;
      Staged st{t.shared, {}, fetch(t.src, in, at, vector)};
      if (t.load == MatmulLoad::VectorTransposed)
        for (int l = 0; l < 4; ++l) st.at.push_back((o + double(l)) * double(t.pitch) + i);
      else
        st.at.push_back(o * double(t.pitch) + i);
      out.push_back(std::move(st));
    }
  };
  // Reads the tiles of step k0 (A rows row0.., B columns col0..) into registers.
  auto load_step = [&](const Val& k0, const Val& row0, const Val& col0, const Val& abase,
                       const Val& bbase) {
    std::vector<Staged> out;
    stage({as, BM, BK, AR, row0, k0, m, k, abase, sar, sac, s.load_a, true, a}, out);
    stage({bs, BK, BN, BN, k0, col0, k, n, bbase, sbr, sbc, s.load_b, false, b}, out);
    return out;
  };
  auto store_step = [&](const std::vector<Staged>& staged, const Val& buffer) {
    Val a_off = buffer * double(AS), b_off = buffer * double(BS);
    for (const Staged& st : staged) {
      const Val& off = st.mem.index == as.index ? a_off : b_off;
      if (st.at.size() == 1) {
        kb.store(st.mem, off + st.at[0], st.value);
      } else {
        for (size_t l = 0; l < st.at.size(); ++l)
          kb.store(st.mem, off + st.at[l], kb.extract(st.value, int(l)));
      }
    }
  };
  // This thread's rows of the tile (consecutive) and columns (4-column groups spread over the
  // tile: group g at g * tile_n / (thread_n / 4), plus 4 * tx).
  auto row_of = [&](int i) { return ty * double(TM) + double(i); };
  auto col_of = [&](int j) { return tx * 4.0 + double((j / 4) * (BN / (TN / 4)) + j % 4); };
  // Multiplies the tiles in buffer `buffer` into the sums.
  auto multiply = [&](const Val& buffer) {
    Val a_off = buffer * double(AS), b_off = buffer * double(BS);
    Val a_row0 = a_off + ty * double(TM * AR), b_col0 = b_off + tx * 4.0;
    for (int kq = 0; kq < BK; kq += 4) {
      std::vector<Val> av;  // row i: steps kq..kq+3
      for (int i = 0; i < TM; ++i) av.push_back(kb.load(as, a_row0 + double(i * AR + kq), 4));
      for (int kk = 0; kk < 4; ++kk) {
        std::vector<Val> bv;  // group g: 4 columns
        for (int g = 0; g < TN / 4; ++g)
          bv.push_back(kb.load(bs, b_col0 + double((kq + kk) * BN + g * (BN / (TN / 4))), 4));
        for (int i = 0; i < TM; ++i) {
          Val x = kb.extract(av[size_t(i)], kk);
          for (int j = 0; j < TN; ++j) {
            Val y = kb.extract(bv[size_t(j / 4)], j % 4);
            const Var& v = sum[size_t(i) * TN + size_t(j)];
            v.set(is_float(acc) ? kb.fma(x, y, v.get()) : v.get() + x * y);
          }
        }
      }
    }
  };

  kb.for_(kb.cast(kb.group_id(0), ix), per_matrix * batch, kb.cast(kb.num_groups(0), ix),
          [&](Val tile) {
            Val bi = tile / per_matrix, rest = tile % per_matrix;
            Val row0 = (rest / tiles_n) * double(BM), col0 = (rest % tiles_n) * double(BN);
            Val abase = bi * sab, bbase = bi * sbb;
            for (const Var& v : sum) v.set(zero);
            detail::double_buffered_steps(
                kb, k, BK, [&](const Val& k0) { return load_step(k0, row0, col0, abase, bbase); },
                store_step, multiply);
            Val cbase = bi * m * n;
            for (int i = 0; i < TM; ++i) {
              Val r = row0 + row_of(i);
              for (int g = 0; g < TN / 4; ++g) {
                Val col = col0 + col_of(g * 4);
                auto out = [&](int l) {
                  return detail::convert(kb, sum[size_t(i) * TN + size_t(g * 4 + l)].get(), t);
                };
                if (s.vector_c) {  // n % 4 == 0: the group is in range or out of it whole
                  kb.if_(r < m && col < n, [&] {
                    kb.store(c, cbase + r * n + col, kb.vec({out(0), out(1), out(2), out(3)}));
                  });
                  continue;
                }
                for (int l = 0; l < 4; ++l)
                  kb.if_(r < m && col + double(l) < n,
                         [&] { kb.store(c, cbase + r * n + col + double(l), out(l)); });
              }
            }
          });
  return kb.finish();
}

}  // namespace ember::kernel
