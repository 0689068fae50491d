// Every shape, dtype, dim and index mistake raises an ember::Error that names the op and
// shows the shapes, and never crashes.
#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

using B = Dispatch;
using T2 = Tensor<B, 2>;
using I2 = Tensor<B, 2, Int>;

template <class E, class F>
void expect_error(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; wanted one containing '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
  }
}

TEST(Errors, ShapesAndDims) {
  auto a = T2::ones({2, 3}), b = T2::ones({4, 5});
  expect_error<ShapeError>([&] { a.matmul(b); },
                           "[matmul] inner dims differ: lhs [2, 3], rhs [4, 5]");
  expect_error<ShapeError>([&] { a.add(b); }, "[add] shapes do not broadcast: [2, 3] and [4, 5]");
  expect_error<ShapeError>([&] { a.reshape<2>({4, -1}); }, "[reshape] cannot reshape [2, 3]");
  expect_error<IndexError>([&] { a.sum_dim(2); }, "[sum] dim 2 out of range for rank 2");
  expect_error<IndexError>([&] { a.swap_dims(0, 5); }, "[swap_dims] dim 5");
  expect_error<ShapeError>([&] { a.squeeze<1>(0); }, "[squeeze] dim 0 of [2, 3] is not 1");
  expect_error<ShapeError>([&] { a.expand<2>({4, 3}); }, "[expand] cannot expand [2, 3] to [4, 3]");
  expect_error<ShapeError>(
      [&] {
        cat<B, 2, Float>({a, b}, 0);
      },
      "[cat] shapes differ outside dim 0");
  expect_error<ValueError>([&] { cat<B, 2, Float>({}, 0); }, "[cat] needs at least one tensor");
  expect_error<IndexError>([&] { a.narrow(1, 2, 2); }, "[narrow] range 2+2 out of dim 1 of [2, 3]");
  expect_error<ValueError>([&] { a.slice({Slice(0, 2, 0)}); }, "[slice] step must not be 0");
  expect_error<ShapeError>(
      [&] {
        a.slice_assign({Slice(0, 1)}, T2::ones({2, 3}));
      },
      "[slice_assign] values [2, 3] do not fill the slice [1, 3]");
  expect_error<ValueError>([&] { T2::zeros({-1, 2}); }, "[full] negative dim in shape [-1, 2]");
  expect_error<ValueError>([&] { a.max_dim(0).narrow(0, 0, 0).max(); },
                           "[max] cannot reduce over a zero-size dim");
  expect_error<ValueError>([&] { a.topk(4, 1); }, "[topk] k = 4 out of range");
  expect_error<ValueError>([&] { a.split(0, 1); }, "[split] size must be positive");
  expect_error<ValueError>([&] { a.pad({1}); }, "[pad] needs {before, after} pairs");
}

TEST(Errors, NnOps) {
  using T3 = Tensor<B, 3>;
  using T4 = Tensor<B, 4>;
  auto x = T4::ones({2, 3, 5, 5});
  expect_error<ShapeError>(
      [&] {
        conv2d(x, T4::ones({4, 2, 3, 3}));
      },
      "[conv] input channels 3 do not match the weight [4, 2, 3, 3] with "
      "groups 1 (input [2, 3, 5, 5])");
  expect_error<ShapeError>(
      [&] {
        conv2d(T4::ones({2, 4, 5, 5}), T4::ones({6, 2, 3, 3}), {.groups = 3});
      },
      "[conv] groups 3 do not divide the input channels 4 (shapes [2, 4, 5, 5], [6, 2, 3, 3])");
  expect_error<ShapeError>(
      [&] {
        conv2d(T4::ones({2, 4, 5, 5}), T4::ones({3, 2, 3, 3}), {.groups = 2});
      },
      "[conv] groups 2 do not divide the output channels 3");
  expect_error<ShapeError>(
      [&] {
        conv2d(T4::ones({1, 1, 2, 2}), T4::ones({1, 1, 5, 5}));
      },
      "[conv] kernel [5, 5] (dilation [1, 1]) is larger than the padded "
      "input in spatial dim 0 (2); shapes [1, 1, 2, 2], [1, 1, 5, 5]");
  expect_error<ShapeError>(
      [&] {
        max_pool2d(x, {8, 8}, {.padding = {1}});
      },
      "[max_pool] kernel [8, 8] (dilation [1, 1]) is larger than the "
      "padded input in spatial dim 0 (7)");
  expect_error<ValueError>(
      [&] {
        conv2d(x, T4::ones({4, 3, 3, 3}), {.stride = {1, 2, 3}});
      },
      "[conv] stride [1, 2, 3] has 3 entries for 2 spatial dims");
  expect_error<ValueError>(
      [&] {
        conv2d(x, T4::ones({4, 3, 3, 3}), {.stride = {0}});
      },
      "[conv] stride must be positive, got [0, 0]");
  expect_error<DTypeError>(
      [&] {
        conv2d(x, T4::ones({4, 3, 3, 3}, Device::cpu(), DType::F64));
      },
      "[conv] element types differ: f32 and f64");
  expect_error<ShapeError>(
      [&] {
        conv_transpose2d(T4::ones({1, 1, 1, 1}), T4::ones({1, 1, 1, 1}), {.padding = {1}});
      },
      "[conv_transpose] output size -1 in spatial dim 0 is not positive");
  expect_error<ValueError>(
      [&] {
        conv_transpose2d(x, T4::ones({3, 2, 3, 3}), {.stride = {2}, .output_padding = {2}});
      },
      "[conv_transpose] output_padding [2, 2] must be smaller than the stride or the dilation");
  expect_error<ValueError>(
      [&] {
        max_pool2d(x, {3, 3}, {.padding = {2}});
      },
      "[max_pool] padding [2, 2] must be at most half the kernel [3, 3]");
  expect_error<ValueError>(
      [&] {
        interpolate(x, {0, 3});
      },
      "[interpolate] output size must be positive, got [0, 3] for input "
      "[2, 3, 5, 5]");
  expect_error<ValueError>(
      [&] {
        interpolate(x, {4, 4, 4}, InterpMode::Linear);
      },
      "[interpolate] output size [4, 4, 4] needs 2 entries");
  expect_error<ValueError>(
      [&] {
        interpolate(x, {4, 4}, InterpMode::Nearest, true);
      },
      "[interpolate] align_corners applies to the linear and cubic modes");
  expect_error<ValueError>(
      [&] {
        interpolate(T3::ones({1, 2, 5}), {7}, InterpMode::Cubic);
      },
      "[interpolate] cubic mode takes 2 spatial dims (bicubic), got [1, 2, 5]");
  expect_error<ValueError>(
      [&] {
        adaptive_avg_pool2d(x, {-1, 2});
      },
      "[adaptive_avg_pool] output size must be positive, got [-1, 2]");
  expect_error<ShapeError>(
      [&] {
        fold(T3::ones({1, 4, 5}), {4, 4}, {2, 2});
      },
      "[fold] input [1, 4, 5] is not [N, C * 4, 9] for output size [4, 4] "
      "and kernel [2, 2]");
  // through the op itself (the typed functions reject the rank at compile time)
  expect_error<ShapeError>(
      [&] {
        Op op{OpCode::MaxPool, {}};
        op.attrs.window.kernel = {2};
        auto h = Tensor<B, 2>::ones({3, 5}).handle();
        apply<B>(op, std::span<B::Handle>(&h, 1));
      },
      "[max_pool] needs input [N, C, *spatial] with 1 to 3 spatial dims, got [3, 5]");
}

TEST(Errors, Attention) {
  using T3 = Tensor<B, 3>;
  using T4 = Tensor<B, 4>;
  using M4 = Tensor<B, 4, Bool>;
  auto q = T4::ones({2, 3, 4, 8}), k = T4::ones({2, 3, 5, 8});
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q, T4::ones({2, 2, 5, 8}), T4::ones({2, 2, 5, 8}));
      },
      "[attention] q, k and v need the same leading (batch, head) dims (q [2, 3, 4, 8], k [2, 2, "
      "5, 8], v [2, 2, 5, 8])");
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(T3::ones({2, 4, 8}), T3::ones({2, 5, 6}), T3::ones({2, 5, 6}));
      },
      "[attention] q and k need the same feature size (q [2, 4, 8], k [2, 5, 6], v [2, 5, 6])");
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q, k, T4::ones({2, 3, 6, 8}));
      },
      "[attention] k and v need the same length (q [2, 3, 4, 8], k [2, 3, "
      "5, 8], v [2, 3, 6, 8])");
  expect_error<ShapeError>(
      [&] {
        scaled_dot_product_attention(q, k, k, {.mask = M4::ones({2, 1, 3, 5})});
      },
      "[attention] the mask does not broadcast to the scores [2, 3, 4, 5] (q [2, 3, 4, 8], k "
      "[2, 3, 5, 8], v [2, 3, 5, 8], mask [2, 1, 3, 5])");
  expect_error<DTypeError>(
      [&] {
        scaled_dot_product_attention(q, k, T4::ones({2, 3, 5, 8}, Device::cpu(), DType::F64));
      },
      "[attention] q, k and v need one element type, got f32, f32 and f64");
  auto run = [&](std::vector<B::Handle> in) {
    Op op{OpCode::Attention, {}};
    apply<B>(op, std::span<B::Handle>(in));
  };
  expect_error<ValueError>(
      [&] {
        run({q.handle(), k.handle()});
      },
      "[attention] takes q, k, v and an optional mask, got 2 inputs");
  expect_error<DTypeError>(
      [&] {
        run({q.handle(), k.handle(), k.handle(), q.handle()});
      },
      "[attention] the mask must be bool, got f32");
  expect_error<DTypeError>(
      [&] {
        auto i = Tensor<B, 4, Int>::ones({2, 3, 4, 8});
        run({i.handle(), i.handle(), i.handle()});
      },
      "[attention] needs a float tensor, got i64 [2, 3, 4, 8]");
}

TEST(Errors, Norms) {
  using T1 = Tensor<B, 1>;
  using T3 = Tensor<B, 3>;
  auto x = T3::ones({2, 3, 4});
  expect_error<ShapeError>(
      [&] { layer_norm(x, T1::ones({5}), T1::zeros({5})); },
      "[layer_norm] gamma [5] does not match the normalized shape [4] (dims 2.. "
      "of input [2, 3, 4])");
  expect_error<ShapeError>(
      [&] {
        layer_norm(x, T2::ones({3, 4}), T2::zeros({4, 3}));
      },
      "[layer_norm] beta [4, 3] does not match the normalized shape [3, 4]");
  expect_error<ShapeError>(
      [&] {
        rms_norm(x, T2::ones({2, 4}));
      },
      "[rms_norm] gamma [2, 4] does not match the normalized shape [3, 4]");
  expect_error<DTypeError>([&] { rms_norm(x, T1::ones({4}, Device::cpu(), DType::F64)); },
                           "[rms_norm] element types differ: f32 and f64");
  expect_error<ValueError>([&] { rms_norm(x, T1::ones({4}), -1.0); },
                           "[rms_norm] epsilon must be non-negative");
  expect_error<DTypeError>(
      [&] {
        auto i = Tensor<B, 3, Int>::ones({2, 3, 4});
        Op op{OpCode::RmsNorm, {}};
        std::vector<B::Handle> in{i.handle(), i.handle()};
        apply<B>(op, std::span<B::Handle>(in));
      },
      "[rms_norm] needs a float tensor, got i64 [2, 3, 4]");
  expect_error<ShapeError>(
      [&] {
        Op op{OpCode::LayerNorm, {}};
        auto s = Tensor<B, 0>::ones(Shape{});
        std::vector<B::Handle> in{s.handle(), s.handle(), s.handle()};
        apply<B>(op, std::span<B::Handle>(in));
      },
      "[layer_norm] needs an input of rank 1 or more, got []");
  expect_error<ValueError>(
      [&] {
        Op op{OpCode::LayerNorm, {}};
        std::vector<B::Handle> in{x.handle(), x.handle()};
        apply<B>(op, std::span<B::Handle>(in));
      },
      "[layer_norm] takes 3 inputs, got 2");
}

TEST(Errors, Padding) {
  auto x = T2::ones({2, 3});
  expect_error<ShapeError>(
      [&] {
        x.pad({3, 0}, PadMode::Reflect);
      },
      "[pad] reflect padding of 3 does not fit dim 1 of size 3 (needs pad < size): pads [0, 0, "
      "3, 0] on input [2, 3]");
  expect_error<ShapeError>(
      [&] {
        x.pad({4, 0}, PadMode::Circular);
      },
      "[pad] circular padding of 4 does not fit dim 1 of size 3");
  expect_error<ShapeError>([&] { x.pad({-2, -2}); }, "[pad] crops more than dim 1 holds");
  expect_error<ValueError>([&] { x.pad({1, 1, 1}); }, "[pad] needs {before, after} pairs");
  expect_error<ShapeError>(
      [&] {
        T2::ones({2, 0}).pad({1, 0}, PadMode::Replicate);
      },
      "[pad] replicate padding of 1 does not fit dim 1 of size 0");
}

TEST(Errors, DTypes) {
  auto f = T2::ones({2, 2});
  auto h = T2::ones({2, 2}, Device::cpu(), DType::F16);
  expect_error<DTypeError>([&] { f.add(h); }, "[add] element types differ: f32 and f16");
  expect_error<DTypeError>([&] { f.cast(DType::I32); }, "[cast] i32 does not fit");
  auto i = I2::ones({2, 2});
  expect_error<DTypeError>([&] { T2(i.handle()); }, "[tensor] kind does not hold i64");
}

TEST(Errors, IndexValuesAreChecked) {
  auto x = T2::ones({2, 3});
  auto bad = I2::from_values<int64_t>({0, 5, 1, 2}, {2, 2});
  expect_error<IndexError>([&] { x.gather(1, bad); },
                           "[gather] index 5 out of range for dim 1 of size 3");
  expect_error<IndexError>([&] { x.scatter(1, bad, T2::ones({2, 2})); }, "[scatter] index 5");
  auto neg = Tensor<B, 1, Int>::from_values<int64_t>({-1}, {1});
  expect_error<IndexError>([&] { x.select(0, neg); }, "[index_select] index -1 out of range");
  expect_error<IndexError>(
      [&] {
        Tensor<B, 1, Int>::from_values<int64_t>({0, 7}, {2}).one_hot(3);
      },
      "[one_hot] class index 7 out of range for 3 classes");
  expect_error<ShapeError>(
      [&] {
        x.gather(1, Tensor<B, 2, Int>::zeros({3, 2}));
      },
      "[gather] indices [3, 2] do not fit [2, 3]");
}

TEST(Errors, IntegerDivisionByZero) {
  auto a = I2::ones({2, 2}), z = I2::zeros({2, 2});
  expect_error<ValueError>([&] { a.div(z); }, "[div] integer division by zero");
  expect_error<ValueError>([&] { a.remainder(z); }, "[remainder] integer division by zero");
  // INT64_MIN / -1 wraps instead of trapping
  auto m = Tensor<B, 1, Int>::from_values<int64_t>({INT64_MIN}, {1});
  EXPECT_EQ(m.div_scalar(int64_t{-1}).into_scalar(), INT64_MIN);
}

TEST(Errors, Devices) {
  expect_error<DeviceError>([&] { T2::ones({2}, Device::parse("cuda:7")); }, "cuda:7");
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

using B = Dispatch;

// The extreme shapes that used to crash, hang or return garbage (issue: hardening).
TEST(Errors, SizesThatOverflowInt64) {
  const int64_t big = int64_t{1} << 40, huge = int64_t{1} << 32;
  using T2 = Tensor<B, 2>;
  expect_error<ShapeError>(
      [&] {
        T2::zeros({big, big});
      },
      "[full] output shape [1099511627776, 1099511627776] has more elements "
      "than int64 can count");
  expect_error<ShapeError>(
      [&] {
        T2::from_values<float>({}, {huge, huge});
      },
      "[tensor_data] shape [4294967296, 4294967296] has more elements");
  expect_error<ShapeError>(
      [&] {
        Tensor<B, 1>::zeros({0}).reshape<2>({huge, huge});
      },
      "[reshape] target shape [4294967296, 4294967296] overflows int64");
  expect_error<ShapeError>([&] { T2::zeros({INT64_MAX, 3}); }, "[full] output shape");
  expect_error<ShapeError>(
      [&] {
        T2::random({INT64_MAX, 3}, Distribution::uniform(0, 1));
      },
      "[random_uniform] output shape");
  expect_error<ShapeError>([&] { Tensor<B, 1>::zeros({int64_t{1} << 62}); },
                           "needs more bytes than int64 can count");
  expect_error<ShapeError>([&] { T2::ones({1, 1}).expand<2>({big, big}); }, "[expand]");
}

// Memory that cannot be had is a MemoryError naming the op, the shape and the bytes.
TEST(Errors, AllocationFailureNamesTheOpTheShapeAndTheBytes) {
  const int64_t n = int64_t{1} << 47;  // 512 TiB of f32: more than any address space
  try {
    Tensor<B, 1>::zeros({n});
    ADD_FAILURE() << "no error";
  } catch (const MemoryError& e) {
    EXPECT_EQ(e.bytes(), n * 4);
    std::string m = e.what();
    EXPECT_NE(m.find("[full] out of memory: 562949953421312 bytes asked for"), std::string::npos)
        << m;
    EXPECT_NE(m.find("for output [140737488355328] f32"), std::string::npos) << m;
  }
  // through a composite's decomposition: the innermost op names itself once (with fusion on,
  // EMBER_FUSION=1, when the recorded exp runs: at the read)
  try {
    (void)Tensor<B, 2>::ones({1, 1}).expand<2>({n, 1}).exp().to_data();
    ADD_FAILURE() << "no error";
  } catch (const MemoryError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[exp] out of memory", 0), 0u) << e.what();
  }
  // the host-side buffer of TensorData too
  expect_error<MemoryError>([&] { TensorData(Shape{n}, DType::F32); },
                            "[tensor_data] out of memory: 562949953421312 bytes for "
                            "[140737488355328] of f32");
}

}  // namespace
}  // namespace ember
