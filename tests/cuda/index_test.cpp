// The CUDA backend's index ops and argsort against the CPU backend: cat, slice_assign,
// gather, scatter (duplicates, adds), index_select, index_add, bad indices as IndexError.
#include "backend_fixture.h"

using namespace ember;
using namespace ember::cuda_test;

namespace {

TensorData indices(Shape s, int64_t n, DType t = DType::I64, uint32_t seed = 7) {
  std::mt19937 r(seed);
  std::vector<int64_t> v(s.numel());
  for (auto& k : v) k = std::uniform_int_distribution<int64_t>(0, n - 1)(r);
  return TensorData::from<int64_t>(v, s).convert(t);
}

TEST_F(CudaBackend, CatAndSliceAssign) {
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::Bool})
    for (int64_t dim : {0, 1, 2}) {
      Shape a{4, 6, 5}, b{4, 6, 5}, z{4, 6, 5};
      b[dim] = 3;
      z[dim] = 0;
      Op op{OpCode::Cat, {}};
      op.attrs.dim = dim;
      // A permuted, a flipped and a zero-length input.
      Shape pa{a[2], a[0], a[1]};  // permute({1, 2, 0}) of it is a
      expect_same(op, {random(pa, t), random(b, t), random(z, t), random(a, t)},
                  {{permute({1, 2, 0})}, {}, {}, layouts()[3].ops}, 0, 0,
                  "cat " + std::string(name(t)) + " dim " + std::to_string(dim));
    }
  for (DType t : {DType::F32, DType::I8, DType::BF16}) {
    Op op{OpCode::SliceAssign, {}};
    op.attrs.dims = {1, 0, 0};
    op.attrs.ends = {4, 6, 5};
    op.attrs.steps = {1, 2, 3};
    // x [4, 6, 5] gets values [3, 3, 2] at rows 1.., every 2nd column, every 3rd element;
    // values broadcast from [3, 1, 2].
    expect_same(op, {random({4, 6, 5}, t), random({3, 3, 2}, t)}, {layouts()[3].ops, {}}, 0, 0,
                "slice_assign " + std::string(name(t)));
    expect_same(op, {random({4, 6, 5}, t), random({3, 1, 2}, t)}, {{}, {expand({3, 3, 2})}}, 0, 0,
                "slice_assign broadcast " + std::string(name(t)));
  }
}

TEST_F(CudaBackend, GatherScatter) {
  for (DType t : {DType::F32, DType::F16, DType::I8, DType::I64, DType::Bool})
    for (DType ix : {DType::I64, DType::I32})
      for (int64_t dim : {0, 1, 2}) {
        std::string what =
            std::string(name(t)) + " " + std::string(name(ix)) + " dim " + std::to_string(dim);
        Shape xs{4, 6, 5}, is{3, 4, 5};  // indices smaller than x off dim, longer along it
        is[dim] = 7;
        Op g{OpCode::Gather, {}};
        g.attrs.dim = dim;
        expect_same(g, {random(layouts()[1].in, t), indices(is, xs[dim], ix)}, {layouts()[1].ops},
                    0, 0, "gather " + what);
        // Scatter: 7 positions into a dim of 4..6 elements, so targets repeat. Assign: the
        // last position wins; add: every value adds (small ints wrap as on the CPU).
        for (bool add : {false, true}) {
          if (add && t == DType::Bool) continue;
          Op sc{OpCode::Scatter, {}};
          sc.attrs.dim = dim;
          sc.attrs.flag = add;
          bool half = t == DType::F16 || t == DType::BF16;
          double tl = add && half ? 5e-2 : add && is_float(t) ? 1e-5 : 0;
          expect_same(sc, {random(xs, t), indices(is, xs[dim], ix), random(is, t, -100, 100)},
                      {layouts()[3].ops, {}, {}}, tl, tl,
                      (add ? "scatter add " : "scatter ") + what);
        }
      }
}

TEST_F(CudaBackend, IndexSelectAndAdd) {
  for (DType t : {DType::F32, DType::BF16, DType::I16, DType::I64, DType::Bool})
    for (int64_t dim : {0, 1, 2}) {
      std::string what = std::string(name(t)) + " dim " + std::to_string(dim);
      Shape xs{4, 6, 5};
      Op sel{OpCode::IndexSelect, {}};
      sel.attrs.dim = dim;
      expect_same(sel, {random(layouts()[1].in, t), indices({9}, xs[dim])}, {layouts()[1].ops}, 0,
                  0, "index_select " + what);
      Shape vs = xs;
      vs[dim] = 9;
      Op add{OpCode::IndexAdd, {}};
      add.attrs.dim = dim;
      // The CPU rounds bf16 after every add, the GPU once (an f32 accumulator).
      double rtol = t == DType::BF16 ? 5e-2 : is_float(t) ? 1e-5 : 0;
      double atol = t == DType::BF16 ? 0.15 : rtol;
      Shape pv{vs[2], vs[0], vs[1]};  // permute({1, 2, 0}) of it is vs
      expect_same(add, {random(xs, t), indices({9}, xs[dim], DType::I32), random(pv, t)},
                  {{}, {}, {permute({1, 2, 0})}}, rtol, atol, "index_add " + what);
    }
}

TEST_F(CudaBackend, BadIndicesAreIndexErrors) {
  H x = on(random({4, 3}, DType::F32), kGpu);
  H bad = on(TensorData::from<int64_t>({0, 5, 1}, Shape{3}), kGpu);
  auto expect_error = [&](Op op, std::vector<H> in, const std::string& want) {
    try {
      run(std::move(op), std::move(in), kGpu);
      FAIL() << "no error: " << want;
    } catch (const IndexError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  Op sel{OpCode::IndexSelect, {}};
  expect_error(sel, {x, bad}, "[index_select] index 5 out of range for dim 0 of size 4");
  Op add{OpCode::IndexAdd, {}};
  expect_error(add, {x, bad, on(random({3, 3}, DType::F32), kGpu)},
               "[index_add] index 5 out of range for dim 0 of size 4");
  H bad2 = on(TensorData::from<int64_t>({0, 1, -1, 2}, Shape{2, 2}), kGpu);
  Op g{OpCode::Gather, {}};
  g.attrs.dim = 1;
  expect_error(g, {x, bad2}, "[gather] index -1 out of range for dim 1 of size 3");
  for (bool flag : {false, true}) {
    Op sc{OpCode::Scatter, {}};
    sc.attrs.dim = 1;
    sc.attrs.flag = flag;
    expect_error(sc, {x, bad2, on(random({2, 2}, DType::F32), kGpu)},
                 "[scatter] index -1 out of range for dim 1 of size 3");
  }
  EXPECT_EQ(Dispatch::to_data(x).shape(), (Shape{4, 3}));  // the device is still usable
}

TEST_F(CudaBackend, Argsort) {
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I32, DType::I64, DType::U8})
    for (bool desc : {false, true})
      for (int64_t dim : {0, 1, 2}) {
        Op op{OpCode::ArgSort, {}};
        op.attrs.dim = dim;
        op.attrs.flag = desc;
        // Few distinct values: ties must keep their order (stable).
        expect_same(op, {random(layouts()[1].in, t, 0, 4)}, {layouts()[1].ops}, 0, 0,
                    "argsort " + std::string(name(t)) + (desc ? " desc" : "") + " dim " +
                        std::to_string(dim));
      }
  // Rows longer than one tile take the merge passes; NaN sorts last (first descending).
  for (int64_t n : {1000, 1025, 5000, 70000})
    for (bool desc : {false, true}) {
      TensorData d = random({3, n}, DType::F32, -50, 50);
      auto* p = reinterpret_cast<float*>(d.bytes().data());
      for (int64_t i = 0; i < 3 * n; i += 97) p[i] = NAN;
      for (int64_t i = 5; i < 3 * n; i += 31) p[i] = 1.0f;
      Op op{OpCode::ArgSort, {}};
      op.attrs.dim = 1;
      op.attrs.flag = desc;
      expect_same(op, {d}, {}, 0, 0, "argsort long " + std::to_string(n) + (desc ? " desc" : ""));
    }
}

}  // namespace
