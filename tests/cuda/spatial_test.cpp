// The CUDA backend's spatial ops against the CPU backend: pooling and its backward ops,
// interpolate, unfold and fold, conv, conv_transpose and conv_weight_grad (also with TF32).
#include "backend_fixture.h"

using namespace ember;
using namespace ember::cuda_test;

namespace {

Window window(Dims k, Dims s = {}, Dims p = {}, Dims d = {}, bool ceil = false) {
  Window w;
  w.kernel = std::move(k);
  w.stride = std::move(s);
  w.padding = std::move(p);
  w.dilation = std::move(d);
  w.ceil_mode = ceil;
  return w;
}
Op spatial_op(OpCode c, const Window& w, Dims shape = {}) {
  Op o{c, {}};
  o.attrs.window = w;
  o.attrs.shape = std::move(shape);
  return o;
}
Dims spatial_dims(const Shape& s) {
  Dims d;
  for (size_t i = 2; i < s.rank(); ++i) d.push_back(s[i]);
  return d;
}
// The output shape of `op` on inputs of these shapes and dtype.
Shape out_shape(Op op, const std::vector<Shape>& in, DType t) {
  std::vector<TensorMeta> metas;
  for (const Shape& s : in) metas.push_back({s, t});
  std::vector<const TensorMeta*> mp;
  for (const TensorMeta& m : metas) mp.push_back(&m);
  return infer(op, mp).shape;
}
// Memory with the last two dims swapped, seen through a permute as shape `s`: the op's input
// is not row-major. Returns the stored shape and the view.
std::pair<Shape, std::vector<Op>> transposed(const Shape& s) {
  Dims d = s.dims(), order;
  for (size_t i = 0; i < d.size(); ++i) order.push_back(int64_t(i));
  std::swap(d[d.size() - 1], d[d.size() - 2]);
  std::swap(order[d.size() - 1], order[d.size() - 2]);
  return {Shape(d), {permute(order)}};
}

class CudaSpatial : public CudaBackend {
 protected:
  void same(const Op& op, const std::vector<Shape>& in, DType t, double rtol, double atol,
            const std::string& what, double lo = -3, double hi = 3) {
    for (bool strided : {false, true}) {
      std::vector<TensorData> data;
      std::vector<std::vector<Op>> lay;
      for (const Shape& s : in) {
        bool tr = strided && s.rank() >= 2;
        auto [stored, v] = tr ? transposed(s) : std::pair<Shape, std::vector<Op>>{s, {}};
        data.push_back(random(stored, t, lo, hi));
        lay.push_back(v);
      }
      expect_same(op, data, lay, rtol, atol,
                  what + " " + std::string(name(t)) + (strided ? " transposed" : ""));
    }
  }
};

double loose(DType t) {  // sums in another order (GEMM, atomics): f32 within 1e-4
  return t == DType::F32 ? 1e-4 : t == DType::F64 ? 1e-10 : 5e-2;
}

TEST_F(CudaSpatial, Pooling) {
  struct Case {
    std::string name;
    Shape x;
    Window w;
  };
  const Case cases[] = {
      {"1-d stride 2 pad 1 dilation 2", {2, 3, 11}, window({3}, {2}, {1}, {2})},
      {"2-d ceil mode", {2, 3, 9, 10}, window({3, 2}, {2, 2}, {1, 1}, {1, 1}, true)},
      {"2-d dilation", {1, 2, 7, 8}, window({3, 3}, {2, 1}, {1, 0}, {2, 1})},
      {"3-d ceil mode", {2, 2, 5, 6, 7}, window({2, 3, 3}, {1, 2, 2}, {1, 1, 0}, {1, 1, 1}, true)},
      {"zero-size batch", {0, 2, 5, 6}, window({2, 2})}};
  for (DType t : {DType::F32, DType::BF16})
    for (const Case& c : cases) {
      Op mp = spatial_op(OpCode::MaxPool, c.w);
      Shape os = out_shape(mp, {c.x}, t);
      same(mp, {c.x}, t, tol(t), tol(t), "max_pool " + c.name);
      same(spatial_op(OpCode::MaxPoolBackward, c.w), {c.x, os}, t, tol(t), tol(t),
           "max_pool_backward " + c.name);
      for (bool include : {true, false}) {
        Window w = c.w;
        w.dilation = {};
        w.count_include_pad = include;
        std::string what = c.name + (include ? "" : " exclude pad");
        Op ap = spatial_op(OpCode::AvgPool, w);
        Shape as = out_shape(ap, {c.x}, t);
        same(ap, {c.x}, t, tol(t), tol(t), "avg_pool " + what);
        same(spatial_op(OpCode::AvgPoolBackward, w, spatial_dims(c.x)), {as}, t, tol(t), tol(t),
             "avg_pool_backward " + what);
      }
    }
  for (DType t : {DType::F32, DType::F16})
    for (auto& [x, size] : std::vector<std::pair<Shape, Dims>>{{{2, 3, 10}, {4}},
                                                               {{2, 3, 7, 9}, {3, 5}},
                                                               {{1, 2, 5, 4, 6}, {2, 7, 3}},
                                                               {{0, 2, 4, 4}, {2, 2}}}) {
      Op op = spatial_op(OpCode::AdaptiveAvgPool, {}, size);
      Shape os = out_shape(op, {x}, t);
      same(op, {x}, t, tol(t), tol(t), "adaptive_avg_pool " + x.to_string());
      same(spatial_op(OpCode::AdaptiveAvgPoolBackward, {}, spatial_dims(x)), {os}, t, tol(t),
           tol(t), "adaptive_avg_pool_backward " + x.to_string());
    }
}

TEST_F(CudaSpatial, Interpolate) {
  struct Case {
    Shape x;
    Dims size;
  };
  const Case lin[] = {{{2, 3, 7}, {12}}, {{2, 3, 12}, {5}}, {{1, 2, 3, 4, 5}, {5, 4, 2}}};
  const Case two[] = {{{2, 3, 5, 6}, {9, 4}},
                      {{2, 2, 1, 5}, {3, 1}},
                      {{2, 3, 5, 6}, {5, 6}},
                      {{0, 3, 5, 6}, {7, 3}}};
  for (DType t : {DType::F32, DType::BF16})
    for (InterpMode m : {InterpMode::Nearest, InterpMode::Linear, InterpMode::Cubic})
      for (bool align : {false, true}) {
        if (m == InterpMode::Nearest && align) continue;
        std::vector<Case> cases(std::begin(two), std::end(two));
        if (m != InterpMode::Cubic) cases.insert(cases.end(), std::begin(lin), std::end(lin));
        for (const Case& c : cases) {
          std::string what = c.x.to_string() + " to " + Shape(c.size).to_string() + " mode " +
                             std::to_string(int(m)) + (align ? " align_corners" : "");
          Op op = spatial_op(OpCode::Interpolate, {}, c.size);
          op.attrs.interp = m;
          op.attrs.flag = align;
          Shape os = out_shape(op, {c.x}, t);
          same(op, {c.x}, t, loose(t), loose(t), "interpolate " + what);
          Op bop = spatial_op(OpCode::InterpolateBackward, {}, spatial_dims(c.x));
          bop.attrs.interp = m;
          bop.attrs.flag = align;
          same(bop, {os}, t, loose(t), loose(t), "interpolate_backward " + what);
        }
      }
}

TEST_F(CudaSpatial, UnfoldAndFold) {
  struct Case {
    Shape x;
    Window w;
  };
  const Case cases[] = {{{2, 3, 10}, window({3}, {2}, {1}, {2})},
                        {{2, 3, 7, 8}, window({3, 2}, {2, 1}, {1, 1}, {1, 2})},
                        {{1, 2, 4, 5, 6}, window({2, 2, 3}, {1, 2, 2}, {1, 0, 1}, {2, 1, 1})},
                        {{0, 3, 6, 6}, window({2, 2})}};
  for (DType t : {DType::F32, DType::F16})
    for (const Case& c : cases) {
      Op u = spatial_op(OpCode::Unfold, c.w);
      Shape cols = out_shape(u, {c.x}, t);
      same(u, {c.x}, t, 0, 0, "unfold " + c.x.to_string());
      same(spatial_op(OpCode::Fold, c.w, spatial_dims(c.x)), {cols}, t, tol(t), tol(t),
           "fold " + c.x.to_string());
    }
}

struct ConvCase {
  std::string name;
  Shape x;
  int64_t c_out, groups;
  Window w;
  Dims output_padding = {};  // conv_transpose
};
// GEMM compositions (a group's channels times taps above the direct kernel's range) and
// direct ones (depthwise, few channels), 1 to 3 spatial dims, zero-size batches.
std::vector<ConvCase> conv_cases() {
  return {
      {"2-d groups 2 stride 2 pad 1 dilation 2",
       {2, 8, 9, 10},
       6,
       2,
       window({3, 3}, {2, 2}, {1, 1}, {2, 2}),
       {1, 1}},
      {"2-d 1x1", {2, 40, 5, 5}, 8, 1, window({1, 1}), {0, 0}},
      {"2-d 1x1 stride 2", {2, 40, 5, 6}, 8, 2, window({1, 1}, {2, 2}), {1, 1}},
      {"1-d stride 3 pad 2", {3, 6, 20}, 4, 1, window({7}, {3}, {2}), {2}},
      {"3-d groups 2", {1, 4, 5, 6, 7}, 4, 2, window({2, 3, 3}, {1, 2, 1}, {1, 1, 0}), {0, 1, 0}},
      {"2-d depthwise (direct)",
       {2, 4, 7, 8},
       8,
       4,
       window({3, 3}, {2, 1}, {1, 1}, {1, 2}),
       {1, 0}},
      {"2-d rgb (direct)", {2, 3, 8, 8}, 5, 1, window({3, 3}, {1, 1}, {1, 1}), {0, 0}},
      {"zero-size batch", {0, 8, 5, 5}, 4, 1, window({3, 3}), {0, 0}},
      {"batch of one", {1, 16, 6, 6}, 4, 4, window({3, 3}, {2, 2}, {1, 1}), {0, 0}}};
}
Shape weight_shape(int64_t a, int64_t b, const Window& w) {
  Dims d{a, b};
  for (int64_t k : w.kernel) d.push_back(k);
  return Shape(d);
}

TEST_F(CudaSpatial, Conv) {
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (const ConvCase& c : conv_cases()) {
      if (t == DType::F64 && c.name.find("2-d groups") == std::string::npos) continue;
      Window w = c.w;
      w.groups = c.groups;
      Op conv = spatial_op(OpCode::Conv, w);
      Shape ws = weight_shape(c.c_out, c.x[1] / c.groups, c.w);
      Shape ys = out_shape(conv, {c.x, ws}, t);
      same(conv, {c.x, ws}, t, loose(t), loose(t), "conv " + c.name, -1, 1);
      Op wg = spatial_op(OpCode::ConvWeightGrad, w);
      same(wg, {c.x, ys}, t, loose(t), loose(t), "conv_weight_grad " + c.name, -1, 1);
      // conv_transpose from ys back to (about) x's size, weight [C_out, C_in / groups, *k]
      Window tw = w;
      tw.output_padding = c.output_padding;
      Op tr = spatial_op(OpCode::ConvTranspose, tw);
      Shape tws = weight_shape(c.c_out, c.x[1] / c.groups, c.w);
      same(tr, {ys, tws}, t, loose(t), loose(t), "conv_transpose " + c.name, -1, 1);
    }
}

TEST_F(CudaSpatial, ConvWithTf32) {
  cuda::set_allow_tf32(true);
  const ConvCase c = conv_cases()[0];
  Window w = c.w;
  w.groups = c.groups;
  same(spatial_op(OpCode::Conv, w), {c.x, weight_shape(c.c_out, c.x[1] / c.groups, c.w)},
       DType::F32, 1e-2, 1e-2, "conv tf32", -1, 1);
  cuda::set_allow_tf32(false);
}

}  // namespace
