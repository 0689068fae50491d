// The spatial kernels of spatial.h and interpolate.h on a GPU: max/avg/adaptive pooling and
// their backward ops, interpolate in every mode, unfold, fold and the direct conv, compiled with
// NVRTC, launched through the driver and compared with the CPU backend's result for the same op on
// random inputs (strided views, ties and NaNs for max pooling, strides, padding, dilation,
// ceil mode, zero-size batches). Without a CUDA driver or GPU every test skips, saying so.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <utility>

#include "ember/kernel/kernels/interpolate.h"
#include "ember/kernel/kernels/spatial.h"
#include "gpu_fixture.h"

using namespace ember;

namespace {

using kernel_test::Buffer;
using kernel_test::LaunchArgs;
using kernel_test::View;

Window window(Dims k, Dims s = {}, Dims p = {}, Dims d = {}, bool ceil = false) {
  Window w;
  w.kernel = std::move(k);
  w.stride = std::move(s);
  w.padding = std::move(p);
  w.dilation = std::move(d);
  w.ceil_mode = ceil;
  return w;
}

Dims spatial(const Shape& s) {
  Dims d;
  for (size_t i = 2; i < s.rank(); ++i) d.push_back(s[i]);
  return d;
}

const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

// Its expect_close gives outputs that are not floats the float tolerances (Ints::AsFloats);
// every output here is a float.
class GpuSpatial : public kernel_test::KernelGpu {
 protected:
  GpuSpatial() : KernelGpu(2024, Ints::AsFloats) {}

  // Random values of shape s, dense or (strided) with the last dim's stride 2. With `ties`:
  // small integers (many equal maxima) and a few NaNs.
  View make(DType t, const Shape& s, bool strided = false, bool ties = false) {
    Dims st = contiguous_strides(s);
    int64_t n = s.numel();
    if (strided && n > 0) {
      Dims d = s.dims();
      d.back() *= 2;
      st = contiguous_strides(Shape(d));
      st.back() = 2;
      n = Shape(d).numel();
    }
    std::vector<double> v(std::max<int64_t>(n, 1));
    std::uniform_real_distribution<double> f(-3, 3);
    std::uniform_int_distribution<int> small(-2, 2);
    for (auto& x : v) x = ties ? small(rng_) : f(rng_);
    if (ties && n > 8)
      for (int64_t i : {int64_t{1}, n / 2, n / 2 + 2}) v[i] = NAN;
    TensorData data = TensorData::from<double>(v, Shape{int64_t(v.size())}).convert(t);
    return view_of(data, s, st, 0);
  }

  // Launches 7 workgroups, fewer than the elements: the kernels loop.
  static void launch(kernel::Kernel k, const std::function<void(LaunchArgs&)>& args) {
    KernelGpu::launch(std::move(k), 7, args);
  }

  // Geometry parameters (spatial.h): in*, out*, then the window's lists.
  static void geometry(LaunchArgs& a, const Dims& in, const Dims& out, const Window* w) {
    for (int64_t v : in) a.scalar_int(v);
    for (int64_t v : out) a.scalar_int(v);
    if (!w) return;
    for (const Dims* l : {&w->kernel, &w->stride, &w->padding, &w->dilation})
      for (int64_t v : *l) a.scalar_int(v);
  }
  static void strides(LaunchArgs& a, const CpuTensor& t) {
    for (int64_t s : t.strides) a.scalar_int(s);
  }

  // MaxPool or AvgPool (both divisor rules) and the backward op on x of shape xs.
  void pools(DType t, const Shape& xs, const Window& w, bool strided, const std::string& what) {
    int r = static_cast<int>(xs.rank()) - 2;
    for (OpCode fop : {OpCode::MaxPool, OpCode::AvgPool})
      for (bool include_pad : {true, false}) {
        bool max = fop == OpCode::MaxPool;
        if (max && !include_pad) continue;
        std::string tag = std::string(name(fop)) + (include_pad ? " " : " exclude_pad ") + what +
                          " " + std::string(name(t));
        Window ww = w;
        if (!max) {
          ww.dilation = {};
          ww.count_include_pad = include_pad;
        }
        View x = make(t, xs, strided, max);
        Op op{fop, {}};
        op.attrs.window = ww;
        TensorData want = cpu(op, {x.cpu});
        Shape os = want.shape();
        Buffer out = zeros(os, t);
        kernel::PoolSpec ps{fop, t, r};
        ps.count_include_pad = include_pad;
        launch(kernel::pool_kernel(ps), [&](LaunchArgs& a) {
          a.buffer(x.ptr()).buffer(out->ptr()).scalar_int(os.numel()).scalar_int(xs[1]);
          geometry(a, spatial(xs), spatial(os), &op.attrs.window);
          strides(a, x.cpu);
        });
        expect_close(fetch(*out, os, t), want, tag);

        View g = make(t, os, strided);
        Op bop{max ? OpCode::MaxPoolBackward : OpCode::AvgPoolBackward, {}};
        bop.attrs.window = ww;
        if (!max) bop.attrs.shape = spatial(xs);
        TensorData want_b = max ? cpu(bop, {x.cpu, g.cpu}) : cpu(bop, {g.cpu});
        Buffer gx = zeros(xs, t);
        ps.op = bop.code;
        launch(kernel::pool_kernel(ps), [&](LaunchArgs& a) {
          if (max) a.buffer(x.ptr());
          a.buffer(g.ptr()).buffer(gx->ptr()).scalar_int(xs.numel()).scalar_int(xs[1]);
          geometry(a, spatial(xs), spatial(os), &bop.attrs.window);
          if (max) strides(a, x.cpu);
          strides(a, g.cpu);
        });
        // the same additions in the same order as the CPU: exact but for halves' rounding
        expect_close(fetch(*gx, xs, t), want_b, tag + " backward",
                     t == DType::F32 || t == DType::F64 ? 0 : -1);
      }
  }

  void adaptive(DType t, const Shape& xs, const Dims& out_size, bool strided,
                const std::string& what) {
    int r = static_cast<int>(xs.rank()) - 2;
    std::string tag = what + " " + std::string(name(t));
    View x = make(t, xs, strided);
    Op op{OpCode::AdaptiveAvgPool, {}};
    op.attrs.shape = out_size;
    TensorData want = cpu(op, {x.cpu});
    Shape os = want.shape();
    Buffer out = zeros(os, t);
    kernel::PoolSpec ps{OpCode::AdaptiveAvgPool, t, r};
    launch(kernel::pool_kernel(ps), [&](LaunchArgs& a) {
      a.buffer(x.ptr()).buffer(out->ptr()).scalar_int(os.numel()).scalar_int(xs[1]);
      geometry(a, spatial(xs), spatial(os), nullptr);
      strides(a, x.cpu);
    });
    expect_close(fetch(*out, os, t), want, "adaptive_avg_pool " + tag);

    View g = make(t, os, strided);
    Op bop{OpCode::AdaptiveAvgPoolBackward, {}};
    bop.attrs.shape = spatial(xs);
    TensorData want_b = cpu(bop, {g.cpu});
    Buffer gx = zeros(xs, t);
    ps.op = OpCode::AdaptiveAvgPoolBackward;
    launch(kernel::pool_kernel(ps), [&](LaunchArgs& a) {
      a.buffer(g.ptr()).buffer(gx->ptr()).scalar_int(xs.numel()).scalar_int(xs[1]);
      geometry(a, spatial(xs), spatial(os), nullptr);
      strides(a, g.cpu);
    });
    expect_close(fetch(*gx, xs, t), want_b, "adaptive_avg_pool_backward " + tag,
                 t == DType::F32 || t == DType::F64 ? 0 : -1);
  }

  void interpolate(DType t, const Shape& xs, const Dims& out_size, InterpMode mode, bool align,
                   bool strided, const std::string& what) {
    int r = static_cast<int>(xs.rank()) - 2;
    std::string tag = what + " mode " + std::to_string(static_cast<int>(mode)) +
                      (align ? " align_corners " : " ") + std::string(name(t));
    View x = make(t, xs, strided);
    Op op{OpCode::Interpolate, {}};
    op.attrs.shape = out_size;
    op.attrs.interp = mode;
    op.attrs.flag = align;
    TensorData want = cpu(op, {x.cpu});
    Shape os = want.shape();
    Buffer out = zeros(os, t);
    kernel::InterpolateSpec s{t, mode, r, align};
    launch(kernel::interpolate_kernel(s), [&](LaunchArgs& a) {
      a.buffer(x.ptr()).buffer(out->ptr()).scalar_int(os.numel()).scalar_int(xs[1]);
      geometry(a, spatial(xs), spatial(os), nullptr);
      strides(a, x.cpu);
    });
    double f32_tol = t == DType::F32 ? 1e-5 : -1;  // FMA contraction and the order of the sums
    expect_close(fetch(*out, os, t), want, "interpolate " + tag, f32_tol);

    View g = make(t, os, strided);
    Op bop{OpCode::InterpolateBackward, {}};
    bop.attrs.shape = spatial(xs);
    bop.attrs.interp = mode;
    bop.attrs.flag = align;
    TensorData want_b = cpu(bop, {g.cpu});
    DType acc = kernel::interpolate_accumulator(t);
    Buffer gx = zeros(xs, acc);
    s.backward = true;
    launch(kernel::interpolate_kernel(s), [&](LaunchArgs& a) {
      a.buffer(g.ptr()).buffer(gx->ptr()).scalar_int(os.numel()).scalar_int(xs[1]);
      geometry(a, spatial(xs), spatial(os), nullptr);
      strides(a, g.cpu);
    });
    // atomic adds in any order: sums that cancel are off by their terms' rounding
    expect_close(fetch(*gx, xs, acc).convert(t), want_b, "interpolate_backward " + tag, f32_tol,
                 t == DType::F32   ? 1e-5
                 : t == DType::F64 ? 1e-12
                                   : -1);
  }

  void unfold_fold(DType t, const Shape& xs, const Window& w, bool strided,
                   const std::string& what) {
    int r = static_cast<int>(xs.rank()) - 2;
    std::string tag = what + " " + std::string(name(t));
    View x = make(t, xs, strided);
    Op op{OpCode::Unfold, {}};
    op.attrs.window = w;
    TensorData want = cpu(op, {x.cpu});
    Shape os = want.shape();
    const Window& ww = op.attrs.window;
    Dims blocks(r);
    for (int i = 0; i < r; ++i)
      blocks[i] =
          (xs[i + 2] + 2 * ww.padding[i] - ww.dilation[i] * (ww.kernel[i] - 1) - 1) / ww.stride[i] +
          1;
    Buffer out = zeros(os, t);
    kernel::UnfoldSpec s{t, r};
    launch(kernel::unfold_kernel(s), [&](LaunchArgs& a) {
      a.buffer(x.ptr()).buffer(out->ptr()).scalar_int(os.numel()).scalar_int(xs[1]);
      geometry(a, spatial(xs), blocks, &ww);
      strides(a, x.cpu);
      a.scalar_int(os[1] * os[2]).scalar_int(os[2]).scalar_int(1);
    });
    expect_close(fetch(*out, os, t), want, "unfold " + tag, 0);

    View cols = make(t, os, strided);
    Op fop{OpCode::Fold, {}};
    fop.attrs.window = w;
    fop.attrs.shape = spatial(xs);
    TensorData want_f = cpu(fop, {cols.cpu});
    Buffer y = zeros(xs, t);
    s.fold = true;
    launch(kernel::unfold_kernel(s), [&](LaunchArgs& a) {
      a.buffer(cols.ptr()).buffer(y->ptr()).scalar_int(xs.numel()).scalar_int(xs[1]);
      geometry(a, spatial(xs), blocks, &fop.attrs.window);
      strides(a, cols.cpu);
    });
    expect_close(fetch(*y, xs, t), want_f, "fold " + tag,
                 t == DType::F32 || t == DType::F64 ? 0 : -1);
  }

  // Conv (no bias) of x [N, C_in, *s] by a weight [c_out, C_in / groups, *kernel].
  void conv(DType t, const Shape& xs, int64_t c_out, int64_t groups, const Window& w, bool strided,
            const std::string& what) {
    int r = static_cast<int>(xs.rank()) - 2;
    std::string tag = what + " " + std::string(name(t));
    View x = make(t, xs, strided);
    Dims wd{c_out, xs[1] / groups};
    for (int i = 0; i < r; ++i) wd.push_back(w.kernel[i]);
    View wt = make(t, Shape(wd));
    Op op{OpCode::Conv, {}};
    op.attrs.window = w;
    op.attrs.window.groups = groups;
    TensorData want = cpu(op, {x.cpu, wt.cpu});
    Shape os = want.shape();
    Buffer out = zeros(os, t);
    launch(kernel::conv_direct_kernel({t, r}), [&](LaunchArgs& a) {
      a.buffer(x.ptr()).buffer(wt.ptr()).buffer(out->ptr()).scalar_int(os.numel());
      a.scalar_int(xs[1]).scalar_int(c_out).scalar_int(groups);
      geometry(a, spatial(xs), spatial(os), &op.attrs.window);
      strides(a, x.cpu);
      strides(a, wt.cpu);
    });
    // the CPU's GEMM sums in another order
    bool f32 = t == DType::F32, f64 = t == DType::F64;
    expect_close(fetch(*out, os, t), want, "conv " + tag, f32 ? 1e-4 : -1,
                 f32   ? 1e-4
                 : f64 ? 1e-10
                       : -1);
  }
};

}  // namespace

TEST_F(GpuSpatial, PoolsMatchTheCpuBackend) {
  for (DType t : kFloats) {
    pools(t, Shape{2, 3, 11}, window({3}, {2}, {1}, {2}), false, "1-d stride 2 pad 1 dilation 2");
    pools(t, Shape{2, 3, 9, 10}, window({3, 2}, {2, 2}, {1, 1}, {1, 1}, true), true,
          "2-d ceil mode, strided input");
    pools(t, Shape{1, 2, 7, 8}, window({3, 3}, {2, 1}, {1, 0}, {2, 1}), false, "2-d dilation");
    pools(t, Shape{2, 2, 4, 8}, window({2, 2}), false, "2-d 2x2 tiles");
    pools(t, Shape{2, 2, 5, 6, 7}, window({2, 3, 3}, {1, 2, 2}, {1, 1, 0}, {1, 1, 2}, true), false,
          "3-d");
    pools(t, Shape{0, 2, 5, 6}, window({2, 2}), false, "zero-size batch");
  }
}

TEST_F(GpuSpatial, AdaptiveAvgPoolMatchesTheCpuBackend) {
  for (DType t : kFloats) {
    adaptive(t, Shape{2, 3, 10}, {4}, false, "1-d");
    adaptive(t, Shape{2, 3, 7, 9}, {3, 5}, true, "2-d strided");
    adaptive(t, Shape{1, 2, 5, 4, 6}, {2, 7, 3}, false, "3-d up and down");
    adaptive(t, Shape{2, 0, 4, 4}, {2, 2}, false, "zero channels");
  }
}

TEST_F(GpuSpatial, InterpolateMatchesTheCpuBackend) {
  for (DType t : kFloats)
    for (InterpMode m : {InterpMode::Nearest, InterpMode::Linear, InterpMode::Cubic})
      for (bool align : {false, true}) {
        if (m == InterpMode::Nearest && align) continue;
        if (m != InterpMode::Cubic) {
          interpolate(t, Shape{2, 3, 7}, {12}, m, align, false, "1-d up");
          interpolate(t, Shape{2, 3, 12}, {5}, m, align, false, "1-d down");
          interpolate(t, Shape{1, 2, 3, 4, 5}, {5, 4, 2}, m, align, true, "3-d strided");
        }
        interpolate(t, Shape{2, 3, 5, 6}, {9, 4}, m, align, true, "2-d strided");
        interpolate(t, Shape{2, 2, 1, 5}, {3, 1}, m, align, false, "2-d from and to size 1");
        interpolate(t, Shape{2, 3, 5, 6}, {5, 6}, m, align, false, "2-d same size");
        interpolate(t, Shape{0, 3, 5, 6}, {7, 3}, m, align, false, "zero-size batch");
      }
}

TEST_F(GpuSpatial, UnfoldAndFoldMatchTheCpuBackend) {
  for (DType t : kFloats) {
    unfold_fold(t, Shape{2, 3, 10}, window({3}, {2}, {1}, {2}), false, "1-d");
    unfold_fold(t, Shape{2, 3, 7, 8}, window({3, 2}, {2, 1}, {1, 1}, {1, 2}), true, "2-d strided");
    unfold_fold(t, Shape{1, 2, 4, 5, 6}, window({2, 2, 3}, {1, 2, 2}, {1, 0, 1}, {2, 1, 1}), false,
                "3-d");
    unfold_fold(t, Shape{0, 3, 6, 6}, window({3, 3}, {2, 2}, {1, 1}), false, "zero-size batch");
  }
}

TEST_F(GpuSpatial, DirectConvMatchesTheCpuBackend) {
  for (DType t : kFloats) {
    conv(t, Shape{2, 4, 9, 8}, 4, 4, window({3, 3}, {2, 1}, {1, 1}, {1, 2}), true, "depthwise 2-d");
    conv(t, Shape{2, 4, 11}, 6, 2, window({3}, {2}, {2}, {2}), false, "grouped 1-d");
    conv(t, Shape{1, 3, 4, 5, 6}, 2, 1, window({2, 3, 2}, {1, 2, 1}, {1, 1, 0}, {2, 1, 1}), false,
         "3-d");
    conv(t, Shape{0, 3, 5, 5}, 2, 1, window({3, 3}), false, "zero-size batch");
  }
}
