// The cuDNN path of conv, conv_transpose and conv_weight_grad (ember/backends/cuda/cudnn.cpp):
// against the CPU backend and against the unfold + GEMM path (EMBER_CUDNN=0) on random inputs,
// 1 to 3 spatial dims, strides, padding, dilation, groups, f32 and bf16; that cuDNN is taken
// where it is found (cuda::cudnn_conv_calls) and that a conv_transpose it cannot express exactly
// falls back.
#include <cstdlib>
#include <iostream>
#include <optional>

#include "backend_fixture.h"
#include "ember/kernel/cache.h"

using namespace ember;
using namespace ember::cuda_test;

namespace {

struct ConvCase {
  std::string name;
  Shape x;
  int64_t c_out, groups;
  Dims kernel, stride, padding, dilation, output_padding;
  bool transpose_on_cudnn = true;  // output_padding below the stride
};

// A group's channels times taps above 32 throughout, so the forward conv is not the direct
// kernel's.
std::vector<ConvCase> cases() {
  return {
      {"1-d stride 2 pad 3 dilation 2", {2, 8, 30}, 12, 1, {5}, {2}, {3}, {2}, {1}},
      {"2-d 3x3 pad 1", {2, 16, 12, 12}, 16, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}},
      {"2-d groups 4 stride 2 dilation 2",
       {2, 32, 11, 13},
       16,
       4,
       {3, 3},
       {2, 2},
       {2, 1},
       {2, 1},
       {1, 0}},
      {"2-d 1x1 stride 2", {2, 48, 7, 7}, 24, 1, {1, 1}, {2, 2}, {0, 0}, {1, 1}, {1, 1}},
      {"3-d groups 2 stride (1, 2, 2)",
       {1, 8, 5, 7, 6},
       6,
       2,
       {3, 3, 2},
       {1, 2, 2},
       {1, 1, 0},
       {1, 1, 1},
       {0, 1, 1}},
      {"2-d output_padding at the stride (dilation 2)",
       {1, 8, 9, 9},
       8,
       1,
       {3, 3},
       {1, 1},
       {1, 1},
       {2, 2},
       {1, 1},
       false},
  };
}

Window window_of(const ConvCase& c, bool transpose) {
  Window w;
  w.kernel = c.kernel;
  w.stride = c.stride;
  w.padding = c.padding;
  w.dilation = c.dilation;
  w.groups = c.groups;
  if (transpose) w.output_padding = c.output_padding;
  return w;
}
Op conv_op(OpCode code, const Window& w) {
  Op o{code, {}};
  o.attrs.window = w;
  return o;
}
Shape weight_shape(const ConvCase& c) {
  Dims d{c.c_out, c.x[1] / c.groups};
  for (int64_t k : c.kernel) d.push_back(k);
  return Shape(d);
}
Shape infer_shape(Op op, const std::vector<Shape>& in, DType t) {
  std::vector<TensorMeta> metas;
  for (const Shape& s : in) metas.push_back({s, t});
  std::vector<const TensorMeta*> mp;
  for (const TensorMeta& m : metas) mp.push_back(&m);
  return infer(op, mp).shape;
}

double rtol_of(DType t) { return t == DType::F32 ? 1e-4 : 5e-2; }

// Sets EMBER_CUDNN for the scope and restores it after.
class CudnnEnv {
 public:
  explicit CudnnEnv(const char* value) {
    if (const char* v = std::getenv("EMBER_CUDNN")) old_ = v;
    ::setenv("EMBER_CUDNN", value, 1);
  }
  ~CudnnEnv() {
    if (old_)
      ::setenv("EMBER_CUDNN", old_->c_str(), 1);
    else
      ::unsetenv("EMBER_CUDNN");
  }
  CudnnEnv(const CudnnEnv&) = delete;
  CudnnEnv& operator=(const CudnnEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

class CudnnConv : public CudaBackend {
 protected:
  // The three ops of a case: (op, input shapes, whether cuDNN should take it).
  struct Run {
    std::string what;
    Op op;
    std::vector<Shape> in;
    bool cudnn;
  };
  std::vector<Run> runs(const ConvCase& c, DType t) {
    Window w = window_of(c, false);
    Op conv = conv_op(OpCode::Conv, w);
    Shape ws = weight_shape(c);
    Shape ys = infer_shape(conv, {c.x, ws}, t);
    Op tr = conv_op(OpCode::ConvTranspose, window_of(c, true));
    return {{"conv " + c.name, conv, {c.x, ws}, true},
            {"conv_transpose " + c.name, tr, {ys, ws}, c.transpose_on_cudnn},
            {"conv_weight_grad " + c.name, conv_op(OpCode::ConvWeightGrad, w), {c.x, ys}, true}};
  }
  std::vector<TensorData> inputs(const Run& r, DType t) {
    std::vector<TensorData> d;
    for (const Shape& s : r.in) d.push_back(random(s, t, -1, 1));
    return d;
  }
  static TensorData on_gpu(const Op& op, const std::vector<TensorData>& in) {
    std::vector<H> h;
    for (const TensorData& d : in) h.push_back(on(d, kGpu));
    return Dispatch::to_data(run(op, h, kGpu));
  }
};

TEST_F(CudnnConv, MatchesCpu) {
  std::string why;
  bool found = cuda::cudnn_version(&why) > 0;
  if (!found) std::cout << "[ cudnn    ] not used: " << why << "\n";
  for (DType t : {DType::F32, DType::BF16})
    for (const ConvCase& c : cases())
      for (const Run& r : runs(c, t)) {
        std::string what = r.what + " " + std::string(name(t));
        int64_t before = cuda::cudnn_conv_calls();
        expect_same(r.op, inputs(r, t), {}, rtol_of(t), rtol_of(t), what);
        int64_t used = cuda::cudnn_conv_calls() - before;
        if (!found) {
          EXPECT_EQ(used, 0) << what;
        } else if (t == DType::F32 || !r.cudnn) {
          // every f32 case that maps exactly runs on cuDNN; the others never do
          EXPECT_EQ(used, r.cudnn ? 1 : 0) << what;
        } else if (used == 0) {
          std::cout << "[ cudnn    ] " << what << ": cuDNN declined, unfold + GEMM ran\n";
        }
      }
}

TEST_F(CudnnConv, AgreesWithGemmPath) {
  for (DType t : {DType::F32, DType::BF16})
    for (const ConvCase& c : cases())
      for (const Run& r : runs(c, t)) {
        std::string what = r.what + " " + std::string(name(t));
        std::vector<TensorData> in = inputs(r, t);
        TensorData with = on_gpu(r.op, in);
        TensorData without;
        {
          CudnnEnv off("0");
          EXPECT_EQ(cuda::cudnn_version(), 0);
          int64_t before = cuda::cudnn_conv_calls();
          without = on_gpu(r.op, in);
          EXPECT_EQ(cuda::cudnn_conv_calls(), before) << what << ": cuDNN ran with EMBER_CUDNN=0";
        }
        std::string diff;
        EXPECT_TRUE(with.all_close(without, rtol_of(t), rtol_of(t), &diff)) << what << ": " << diff;
      }
}

TEST_F(CudnnConv, UsedWhereFound) {
  std::string why;
  int v = cuda::cudnn_version(&why);
  if (v == 0) GTEST_SKIP() << "cuDNN not used: " << why;
  std::cout << "[ cudnn    ] version " << v << "\n";
  EXPECT_GE(v, 90000);
  // The benchmark's conv, smaller: 3x3, padding 1, strict f32 and TF32, a transposed input.
  ConvCase c{"3x3", {4, 32, 16, 16}, 32, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}};
  Op conv = conv_op(OpCode::Conv, window_of(c, false));
  Shape ws = weight_shape(c);
  for (bool tf32 : {false, true}) {
    cuda::set_allow_tf32(tf32);
    int64_t before = cuda::cudnn_conv_calls();
    double tol = tf32 ? 1e-2 : 1e-4;
    expect_same(conv, {random(c.x, DType::F32, -1, 1), random(ws, DType::F32, -1, 1)}, {}, tol, tol,
                tf32 ? "conv tf32" : "conv f32");
    // x stored [N, C, W, H] and seen through a permute: copied to contiguous, then cuDNN
    expect_same(conv, {random({4, 32, 16, 16}, DType::F32, -1, 1), random(ws, DType::F32, -1, 1)},
                {{permute({0, 1, 3, 2})}}, tol, tol, "conv of a transposed view");
    EXPECT_EQ(cuda::cudnn_conv_calls() - before, 2) << (tf32 ? "tf32" : "f32");
  }
  cuda::set_allow_tf32(false);
}

// A choice is kept on disk: after the plans are forgotten (as in a new process) the same conv
// takes its algorithm from disk, searches nothing, and gives the CPU's result again.
TEST_F(CudnnConv, ChoiceKeptOnDisk) {
  std::string why;
  if (cuda::cudnn_version(&why) == 0) GTEST_SKIP() << "cuDNN not used: " << why;
  if (kernel::KernelCache::default_dir().empty()) GTEST_SKIP() << "the disk cache is off";
  ConvCase c{"3x3 stride 2", {3, 24, 15, 9}, 20, 1, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}};
  Op conv = conv_op(OpCode::Conv, window_of(c, false));
  std::vector<TensorData> in = {random(c.x, DType::F32, -1, 1),
                                random(weight_shape(c), DType::F32, -1, 1)};
  cuda::CudnnChoiceStats s0 = cuda::cudnn_choice_stats();
  expect_same(conv, in, {}, 1e-4, 1e-4, "first process");
  cuda::CudnnChoiceStats s1 = cuda::cudnn_choice_stats();
  // searched now, or stored by an earlier run of this suite over the same cache
  EXPECT_EQ(s1.from_disk + s1.searched - s0.from_disk - s0.searched, 1);
  cuda::forget_cudnn_plans();
  expect_same(conv, in, {}, 1e-4, 1e-4, "second process");
  cuda::CudnnChoiceStats s2 = cuda::cudnn_choice_stats();
  EXPECT_EQ(s2.from_disk - s1.from_disk, 1);
  EXPECT_EQ(s2.searched, s1.searched);
}

// No GPU needed: the library is looked for and EMBER_CUDNN=0 turns it off, saying so.
TEST(CudnnLibrary, VersionAndSwitch) {
  std::string why;
  int v = cuda::cudnn_version(&why);
  if (v == 0) {
    EXPECT_FALSE(why.empty());
  } else {
    EXPECT_GE(v, 90000);
  }
  std::cout << "[ cudnn    ] " << (v ? "version " + std::to_string(v) : "none: " + why) << "\n";
  CudnnEnv off("0");
  std::string off_why;
  EXPECT_EQ(cuda::cudnn_version(&off_why), 0);
  if (v) {
    EXPECT_NE(off_why.find("EMBER_CUDNN=0"), std::string::npos) << off_why;
  }
}

}  // namespace
