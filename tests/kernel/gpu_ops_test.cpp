// The op kernels of create.h, copy.h, where.h, reduce.h (prod, argmax, argmin), scan.h,
// sort.h and index.h on a GPU: compiled with NVRTC, launched through the driver and compared
// with the CPU backend's result for the same op. Without a CUDA driver or GPU every test
// skips, saying so.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <utility>

#include "ember/kernel/kernels/copy.h"
#include "ember/kernel/kernels/create.h"
#include "ember/kernel/kernels/index.h"
#include "ember/kernel/kernels/reduce.h"
#include "ember/kernel/kernels/scan.h"
#include "ember/kernel/kernels/sort.h"
#include "ember/kernel/kernels/where.h"
#include "gpu_fixture.h"

using namespace ember;

namespace {

using kernel_test::Buffer;
using kernel_test::LaunchArgs;
using kernel_test::View;

class GpuOps : public kernel_test::KernelGpu {
 protected:
  GpuOps() : KernelGpu(4321) {}

  // Random values: floats in [-3, 3], ints in [lo, hi], bools.
  TensorData random(DType t, int64_t n, int lo = -20, int hi = 20) {
    std::vector<double> v(n);
    std::uniform_real_distribution<double> f(-3, 3);
    std::uniform_int_distribution<int> i(lo, hi), b(0, 1);
    for (auto& x : v) x = t == DType::Bool ? b(rng_) : is_float(t) ? f(rng_) : i(rng_);
    return TensorData::from<double>(v, Shape{n}).convert(t);
  }
  View dense(DType t, Shape s, int lo = -20, int hi = 20) {
    return view_of(random(t, std::max<int64_t>(s.numel(), 1), lo, hi), s, contiguous_strides(s), 0);
  }
  View dense_of(const TensorData& d) {
    return view_of(d, d.shape(), contiguous_strides(d.shape()), 0);
  }

  // The CPU backend's result of `op` on these inputs, on a copy: the test's op stays as it
  // wrote it.
  static TensorData cpu(Op op, std::vector<CpuTensor> in) {
    return KernelGpu::cpu(op, std::move(in));
  }
};

// [outer, size, inner] of `s` around `dim`.
struct Split3 {
  int64_t outer = 1, size = 1, inner = 1;
};
Split3 split3(const Shape& s, int64_t dim) {
  Split3 p;
  for (size_t d = 0; d < s.rank(); ++d)
    (static_cast<int64_t>(d) < dim    ? p.outer
     : static_cast<int64_t>(d) == dim ? p.size
                                      : p.inner) *= s[d];
  return p;
}
// The strides of a view that has the [outer, size, inner] form around `dim` (the tests' views
// do): outer's is the stride of the last outer dim, inner's that of the last dim.
std::array<int64_t, 3> strides3(const CpuTensor& t, int64_t dim) {
  int64_t r = static_cast<int64_t>(t.meta.shape.rank());
  return {dim > 0 ? t.strides[dim - 1] : 0, t.strides[dim], dim + 1 < r ? t.strides[r - 1] : 0};
}

}  // namespace

TEST_F(GpuOps, CreateMatchesTheCpuBackend) {
  struct Case {
    OpCode op;
    DType t;
    double a, b;
  };
  const Case cases[] = {{OpCode::Full, DType::F32, 2.5, 0},
                        {OpCode::Full, DType::BF16, -1.25, 0},
                        {OpCode::Full, DType::I32, -7, 0},
                        {OpCode::Full, DType::Bool, 1, 0},
                        {OpCode::Arange, DType::F32, -3, 0.25},
                        {OpCode::Arange, DType::I64, 5, -3},
                        {OpCode::RandomUniform, DType::F32, -2, 3},
                        {OpCode::RandomUniform, DType::F64, 0, 1},
                        {OpCode::RandomUniform, DType::I32, -5, 9},
                        {OpCode::RandomNormal, DType::F32, 1, 2},
                        {OpCode::RandomNormal, DType::F64, 0, 1},
                        {OpCode::RandomNormal, DType::F16, 0, 1},
                        {OpCode::RandomBernoulli, DType::F32, 0.3, 0},
                        {OpCode::RandomBernoulli, DType::Bool, 0.7, 0}};
  const int64_t n = 4099;
  const uint64_t seed = 0x0123456789abcdefull;
  for (const Case& c : cases) {
    bool fl = is_float(c.t);
    Op o{c.op, {}};
    o.attrs.shape = {n};
    o.attrs.dtype = c.t;
    o.attrs.seed = seed;
    bool ints = !fl && (c.op == OpCode::Full || c.op == OpCode::Arange);  // exact int attrs
    o.attrs.scalar = ints ? Scalar(int64_t(c.a)) : Scalar(c.a);
    o.attrs.scalar2 = ints ? Scalar(int64_t(c.b)) : Scalar(c.b);
    TensorData want = cpu(o, {});
    Buffer out = zeros(Shape{n}, c.t);
    launch(kernel::create_kernel({c.op, c.t}), 16, [&](LaunchArgs& a) {
      a.buffer(out->ptr()).scalar_int(n);
      auto value = [&](double v) { fl ? a.scalar(v) : a.scalar_int(static_cast<int64_t>(v)); };
      switch (c.op) {
        case OpCode::Full:
          value(c.a);
          break;
        case OpCode::Arange:
          value(c.a);
          value(c.b);
          break;
        case OpCode::RandomBernoulli:
          a.scalar(c.a);
          a.scalar_int(seed & 0xffffffffu).scalar_int(seed >> 32);
          break;
        default:
          a.scalar(c.a).scalar(c.b);
          a.scalar_int(seed & 0xffffffffu).scalar_int(seed >> 32);
      }
    });
    // Normal draws go through the device's log and cos: a few ulps from the CPU's.
    double rtol = c.op == OpCode::RandomNormal && c.t == DType::F64 ? 1e-13 : -1;
    expect_close(fetch(*out, Shape{n}, c.t), want,
                 std::string(name(c.op)) + " " + std::string(name(c.t)), rtol);
  }
}

TEST_F(GpuOps, CastEveryPairOverAStridedView) {
  const DType types[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                         DType::I32, DType::I16, DType::I8,  DType::U8,   DType::Bool};
  std::vector<double> special = {NAN,   INFINITY, -INFINITY, 1e10, -1e10, 3.7,   -3.7,
                                 200.5, -200.5,   0.0,       -0.0, 65504, 70000, 1e-40};
  for (DType src : types)
    for (DType dst : types) {
      std::string what = std::string(name(src)) + " -> " + std::string(name(dst));
      // A transposed [33, 17] view at offset 5.
      View x = view_of(random(src, 5 + 33 * 17), Shape{33, 17}, Dims{1, 33}, 5);
      Op o{OpCode::Cast, {}};
      o.attrs.dtype = dst;
      TensorData want = cpu(o, {x.cpu});
      Buffer out = zeros(Shape{33, 17}, dst);
      launch(kernel::copy_kernel({src, dst, 2}), 4, [&](LaunchArgs& a) {
        a.buffer(x.ptr()).buffer(out->ptr()).scalar_int(33 * 17);
        a.scalar_int(33).scalar_int(17).scalar_int(1).scalar_int(33);
      });
      expect_close(fetch(*out, Shape{33, 17}, dst), want, what, is_float(dst) ? 1e-6 : 0);
      if (!is_float(src)) continue;
      // NaN, infinities, out-of-range values: the CPU's saturating rules.
      // 1e-40 is an f32 and bf16 subnormal: left out of those casts where the device flushes them.
      std::vector<double> sv = special;
      bool f32ish =
          src == DType::F32 || src == DType::BF16 || dst == DType::F32 || dst == DType::BF16;
      if (!keeps_subnormals() && f32ish) sv.pop_back();
      View s = dense_of(TensorData::from<double>(sv, Shape{int64_t(sv.size())}).convert(src));
      TensorData want_s = cpu(o, {s.cpu});
      Buffer out_s = zeros(s.cpu.meta.shape, dst);
      launch(kernel::copy_kernel({src, dst, 1}), 1, [&](LaunchArgs& a) {
        a.buffer(s.ptr()).buffer(out_s->ptr()).scalar_int(int64_t(sv.size()));
        a.scalar_int(int64_t(sv.size())).scalar_int(1);
      });
      TensorData got = fetch(*out_s, s.cpu.meta.shape, dst);
      EXPECT_TRUE(got.all_close(want_s, 1e-6, 0)) << what << " special values";
    }
}

TEST_F(GpuOps, WhereBroadcasts) {
  for (DType t : {DType::F32, DType::BF16, DType::I64, DType::Bool}) {
    View c = dense(DType::Bool, Shape{4, 1, 5}), a = dense(t, Shape{3, 1}),
         b = dense(t, Shape{4, 3, 5});
    TensorData want = cpu(Op{OpCode::Where, {}}, {c.cpu, a.cpu, b.cpu});
    Buffer out = zeros(Shape{4, 3, 5}, t);
    launch(kernel::where_kernel({t, 3}), 1, [&](LaunchArgs& x) {
      x.buffer(c.ptr()).buffer(a.ptr()).buffer(b.ptr()).buffer(out->ptr()).scalar_int(60);
      for (int64_t d : {4, 3, 5}) x.scalar_int(d);
      for (int64_t d : {5, 0, 1}) x.scalar_int(d);  // cond [4, 1, 5]
      for (int64_t d : {0, 1, 0}) x.scalar_int(d);  // a [3, 1]
      for (int64_t d : {15, 5, 1}) x.scalar_int(d);
    });
    expect_close(fetch(*out, Shape{4, 3, 5}, t), want, "where " + std::string(name(t)));
  }
}

TEST_F(GpuOps, ProdArgmaxArgminMatchTheCpuBackend) {
  for (DType t : {DType::F32, DType::BF16, DType::I32, DType::F64, DType::U8})
    for (OpCode op : {OpCode::Prod, OpCode::ArgMax, OpCode::ArgMin}) {
      // Products of 20 values stay finite; the arg ops see ties (ints) and NaNs (floats).
      int64_t size = op == OpCode::Prod ? 20 : 300;
      Shape s{7, size, 5};
      TensorData d = random(t, s.numel(), t == DType::U8 ? 0 : -3, 3);
      if (is_float(t) && op != OpCode::Prod) {
        TensorData f = d.convert(DType::F64);
        auto v = f.as_mut<double>();
        v[3 * 5 + 1] = NAN;         // row (0, 1): NaN at 3 ...
        v[200 * 5 + 1] = NAN;       // ... and at 200: the first wins
        v[300 * 5 + 42 * 5] = NAN;  // row (1, 0)
        d = f.convert(t);
      }
      View x = view_of(d, s, contiguous_strides(s), 0);
      Op o{op, {}};
      o.attrs.dims = {1};
      TensorData want = cpu(o, {x.cpu});
      DType out_t = op == OpCode::Prod ? t : DType::I64;
      Buffer out = zeros(want.shape(), out_t);
      launch(kernel::reduce_kernel({op, t}), 35, [&](LaunchArgs& a) {
        a.buffer(x.ptr()).buffer(out->ptr());
        a.scalar_int(7).scalar_int(size).scalar_int(5);
        for (int64_t st : x.cpu.strides) a.scalar_int(st);
      });
      expect_close(fetch(*out, want.shape(), out_t), want,
                   std::string(name(op)) + " " + std::string(name(t)), t == DType::F32 ? 1e-4 : -1);
    }
}

TEST_F(GpuOps, ScansMatchTheCpuBackend) {
  for (auto layout : {kernel::ScanSpec::ThreadPerRow, kernel::ScanSpec::GroupPerRow})
    for (DType t : {DType::F32, DType::F16, DType::I64, DType::I8})
      for (OpCode op : {OpCode::CumSum, OpCode::CumProd, OpCode::CumMax, OpCode::CumMin}) {
        bool group = layout == kernel::ScanSpec::GroupPerRow;
        // Long rows for the workgroup layout (several chunks); products over short rows.
        int64_t size = op == OpCode::CumProd && is_float(t) ? 24 : group ? 2000 : 300;
        Shape s = group ? Shape{3, size} : Shape{7, size, 5};
        View x = dense(t, s, -3, 3);
        Op o{op, {}};
        o.attrs.dim = 1;
        TensorData want = cpu(o, {x.cpu});
        Split3 p = split3(s, 1);
        auto st = strides3(x.cpu, 1);
        Buffer out = zeros(s, t);
        launch(kernel::scan_kernel({op, t, layout}), group ? 3 : 4, [&](LaunchArgs& a) {
          a.buffer(x.ptr()).buffer(out->ptr());
          a.scalar_int(p.outer).scalar_int(p.size).scalar_int(p.inner);
          for (int64_t v : st) a.scalar_int(v);
        });
        // Sums in another order: absolute slack where partial sums cancel.
        expect_close(
            fetch(*out, s, t), want,
            std::string(name(op)) + " " + std::string(name(t)) + (group ? " group" : " thread"),
            t == DType::F32 ? 1e-4 : -1,
            t == DType::F32   ? 1e-3
            : t == DType::F16 ? 0.1
                              : -1);
      }
}

TEST_F(GpuOps, ArgsortIsStableWithNaNsLikeTheCpuBackend) {
  for (DType t : {DType::F32, DType::I32, DType::BF16, DType::F64})
    for (bool desc : {false, true})
      for (int64_t size : {int64_t{100}, int64_t{3000}}) {
        Shape s{2, size, 3};
        TensorData d = random(t, s.numel(), -5, 5);  // ints: many ties
        if (is_float(t)) {
          TensorData f = d.convert(DType::F64);
          auto v = f.as_mut<double>();
          for (int64_t i = 0; i < s.numel(); i += 37) v[i] = NAN;
          for (int64_t i = 5; i < s.numel(); i += 11) v[i] = 1.0;  // ties
          d = f.convert(t);
        }
        View x = view_of(d, s, contiguous_strides(s), 0);
        Op o{OpCode::ArgSort, {}};
        o.attrs.dim = 1;
        o.attrs.flag = desc;
        TensorData want = cpu(o, {x.cpu});
        kernel::ArgsortSpec spec{t, desc};
        spec.workgroup = 256;  // tiles of 512: 3000 needs merge passes
        auto geometry = [&](LaunchArgs& a) {
          a.scalar_int(2).scalar_int(size).scalar_int(3);
          a.scalar_int(size * 3).scalar_int(3).scalar_int(1);
        };
        Buffer bufs[2] = {zeros(s, DType::I64), zeros(s, DType::I64)};
        launch(kernel::argsort_kernel(spec), 8, [&](LaunchArgs& a) {
          a.buffer(x.ptr()).buffer(bufs[0]->ptr());
          geometry(a);
        });
        int cur = 0;
        spec.stage = kernel::ArgsortSpec::Merge;
        for (int64_t w = kernel::argsort_tile(spec); w < size; w *= 2, cur ^= 1)
          launch(kernel::argsort_kernel(spec), 16, [&](LaunchArgs& a) {
            a.buffer(x.ptr()).buffer(bufs[cur]->ptr()).buffer(bufs[cur ^ 1]->ptr());
            geometry(a);
            a.scalar_int(w);
          });
        expect_close(
            fetch(*bufs[cur], s, DType::I64), want,
            "argsort " + std::string(name(t)) + (desc ? " desc " : " asc ") + std::to_string(size));
      }
}

TEST_F(GpuOps, GatherAndScatterMatchTheCpuBackend) {
  for (DType t : {DType::F32, DType::I64, DType::F16}) {
    std::string what = std::string(name(t));
    View x = dense(t, Shape{5, 7});
    View idx = dense(DType::I64, Shape{5, 4}, 0, 6);  // duplicates along dim 1
    View vals = dense(t, Shape{5, 4});
    Buffer err = zeros(Shape{2}, DType::I64);
    // gather along dim 1
    Op g{OpCode::Gather, {}};
    g.attrs.dim = 1;
    TensorData want = cpu(g, {x.cpu, idx.cpu});
    Buffer out = zeros(Shape{5, 4}, t);
    launch(kernel::gather_kernel({t, DType::I64, 2}), 1, [&](LaunchArgs& a) {
      a.buffer(x.ptr()).buffer(idx.ptr()).buffer(out->ptr()).buffer(err->ptr());
      a.scalar_int(20).scalar_int(7).scalar_int(1);
      a.scalar_int(5).scalar_int(4).scalar_int(7).scalar_int(0).scalar_int(4).scalar_int(1);
    });
    expect_close(fetch(*out, Shape{5, 4}, t), want, "gather " + what);
    for (bool add : {false, true}) {
      Op sc{OpCode::Scatter, {}};
      sc.attrs.dim = 1;
      sc.attrs.flag = add;
      TensorData want_s = cpu(sc, {x.cpu, idx.cpu, vals.cpu});
      DType acc = kernel::index_accumulator(t);
      TensorData x_data = Cpu::to_data(x.cpu);
      Buffer o = upload(add ? x_data.convert(acc) : x_data);
      auto geometry = [&](LaunchArgs& a, bool values) {
        a.scalar_int(20).scalar_int(7).scalar_int(1);
        a.scalar_int(5).scalar_int(4);
        a.scalar_int(4).scalar_int(1);              // indices
        if (values) a.scalar_int(4).scalar_int(1);  // values
        a.scalar_int(7).scalar_int(0);              // out, 0 at dim
      };
      if (add) {
        launch(kernel::scatter_kernel({t, DType::I64, 2, kernel::ScatterSpec::Add}), 1,
               [&](LaunchArgs& a) {
                 a.buffer(idx.ptr()).buffer(vals.ptr()).buffer(o->ptr()).buffer(err->ptr());
                 geometry(a, true);
               });
      } else {
        Buffer claim = upload(TensorData::from<int32_t>(std::vector<int32_t>(35, -1), Shape{35}));
        launch(kernel::scatter_kernel({t, DType::I64, 2, kernel::ScatterSpec::Claim}), 1,
               [&](LaunchArgs& a) {
                 a.buffer(idx.ptr()).buffer(claim->ptr()).buffer(err->ptr());
                 geometry(a, false);
               });
        launch(kernel::scatter_kernel({t, DType::I64, 2, kernel::ScatterSpec::Assign}), 1,
               [&](LaunchArgs& a) {
                 a.buffer(idx.ptr()).buffer(vals.ptr()).buffer(claim->ptr()).buffer(o->ptr());
                 geometry(a, true);
               });
      }
      TensorData got = fetch(*o, Shape{5, 7}, add ? acc : t).convert(t);
      expect_close(got, want_s, (add ? "scatter add " : "scatter ") + what,
                   add && t == DType::F32 ? 1e-5 : -1);
    }
    EXPECT_EQ(fetch(*err, Shape{2}, DType::I64).to_vec<int64_t>()[0], 0) << what;
  }
}

TEST_F(GpuOps, BadIndicesAreReported) {
  View x = dense(DType::F32, Shape{4, 3});
  View idx = dense_of(TensorData::from<int64_t>({0, 2, 9, 1}, Shape{4, 1}));
  Buffer out = zeros(Shape{4, 1}, DType::F32), err = zeros(Shape{2}, DType::I64);
  launch(kernel::gather_kernel({DType::F32, DType::I64, 2}), 1, [&](LaunchArgs& a) {
    a.buffer(x.ptr()).buffer(idx.ptr()).buffer(out->ptr()).buffer(err->ptr());
    a.scalar_int(4).scalar_int(3).scalar_int(1);
    a.scalar_int(4).scalar_int(1).scalar_int(3).scalar_int(0).scalar_int(1).scalar_int(1);
  });
  std::vector<int64_t> e = fetch(*err, Shape{2}, DType::I64).to_vec<int64_t>();
  EXPECT_EQ(e[0], 1);
  EXPECT_EQ(e[1], 9);
}

TEST_F(GpuOps, IndexSelectAndIndexAddMatchTheCpuBackend) {
  for (DType t : {DType::F32, DType::I32, DType::BF16, DType::I8}) {
    std::string what = std::string(name(t));
    View x = dense(t, Shape{6, 10, 3});
    View idx = dense_of(TensorData::from<int64_t>({3, 0, 3, 9}, Shape{4}));
    View vals = dense(t, Shape{6, 4, 3});
    Buffer err = zeros(Shape{2}, DType::I64);
    Op sel{OpCode::IndexSelect, {}};
    sel.attrs.dim = 1;
    TensorData want = cpu(sel, {x.cpu, idx.cpu});
    Buffer out = zeros(Shape{6, 4, 3}, t);
    launch(kernel::index_select_kernel({t}), 1, [&](LaunchArgs& a) {
      a.buffer(x.ptr()).buffer(idx.ptr()).buffer(out->ptr()).buffer(err->ptr());
      a.scalar_int(6).scalar_int(10).scalar_int(3).scalar_int(4);
      a.scalar_int(30).scalar_int(3).scalar_int(1).scalar_int(1);
    });
    expect_close(fetch(*out, Shape{6, 4, 3}, t), want, "index_select " + what);

    Op add{OpCode::IndexAdd, {}};
    add.attrs.dim = 1;
    TensorData want_a = cpu(add, {x.cpu, idx.cpu, vals.cpu});
    DType acc = kernel::index_accumulator(t);
    Buffer o = upload(Cpu::to_data(x.cpu).convert(acc));
    launch(kernel::index_add_kernel({t}), 1, [&](LaunchArgs& a) {
      a.buffer(idx.ptr()).buffer(vals.ptr()).buffer(o->ptr()).buffer(err->ptr());
      a.scalar_int(6).scalar_int(10).scalar_int(3).scalar_int(4);
      a.scalar_int(12).scalar_int(3).scalar_int(1).scalar_int(1);
    });
    // The CPU adds in bf16, rounding after each add; the GPU adds in f32 and rounds once. Two
    // adds into one place of values in [-3, 3] give partial sums below 8, where a bf16 ulp is
    // 2^-5: the two results differ by up to one (two half-ulp roundings).
    const double atol = t == DType::BF16 ? 4e-2 : -1;
    expect_close(fetch(*o, Shape{6, 10, 3}, acc).convert(t), want_a, "index_add " + what, -1, atol);
  }
}

TEST_F(GpuOps, CatAndSliceAssignAreStridedCopies) {
  View a = dense(DType::F32, Shape{3, 4}), b = dense(DType::F32, Shape{3, 2});
  Op cat{OpCode::Cat, {}};
  cat.attrs.dim = 1;
  TensorData want = cpu(cat, {a.cpu, b.cpu});
  Buffer out = zeros(Shape{3, 6}, DType::F32);
  kernel::CopySpec s{DType::F32, DType::F32, 2};
  s.strided_out = true;
  int64_t at = 0;
  for (View* v : {&a, &b}) {
    int64_t len = v->cpu.meta.shape[1];
    launch(kernel::copy_kernel(s), 1, [&](LaunchArgs& x) {
      x.buffer(v->ptr()).buffer(out->ptr()).scalar_int(3 * len);
      x.scalar_int(3).scalar_int(len).scalar_int(len).scalar_int(1);
      x.scalar_int(6).scalar_int(1).scalar_int(at);
    });
    at += len;
  }
  expect_close(fetch(*out, Shape{3, 6}, DType::F32), want, "cat");

  // x[1:5:2, 2:8:2] = values [2, 3]
  View x = dense(DType::F32, Shape{6, 8}), vals = dense(DType::F32, Shape{2, 3});
  Op sa{OpCode::SliceAssign, {}};
  sa.attrs.dims = {1, 2};
  sa.attrs.ends = {5, 8};
  sa.attrs.steps = {2, 2};
  TensorData want_sa = cpu(sa, {x.cpu, vals.cpu});
  Buffer o = upload(Cpu::to_data(x.cpu));
  launch(kernel::copy_kernel(s), 1, [&](LaunchArgs& c) {
    c.buffer(vals.ptr()).buffer(o->ptr()).scalar_int(6);
    c.scalar_int(2).scalar_int(3).scalar_int(3).scalar_int(1);
    c.scalar_int(16).scalar_int(2).scalar_int(1 * 8 + 2);
  });
  expect_close(fetch(*o, Shape{6, 8}, DType::F32), want_sa, "slice_assign");
}
