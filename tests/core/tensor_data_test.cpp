#include <gtest/gtest.h>

#include "ember/core/tensor_data.h"

using namespace ember;

TEST(TensorData, FromAndConvert) {
  auto d = TensorData::from<float>({1.5f, -2.5f, 3.0f, 4.0f}, Shape{2, 2});
  EXPECT_EQ(d.dtype(), DType::F32);
  EXPECT_EQ(d.to_vec<int64_t>(), (std::vector<int64_t>{1, -2, 3, 4}));
  auto h = d.convert(DType::F16);
  EXPECT_EQ(h.to_vec<float>(), (std::vector<float>{1.5f, -2.5f, 3.0f, 4.0f}));
  auto b = TensorData::from<bool>({true, false}, Shape{2});
  EXPECT_EQ(b.to_vec<int32_t>(), (std::vector<int32_t>{1, 0}));
  EXPECT_THROW(d.as<double>(), DTypeError);
  EXPECT_THROW(TensorData::from<float>({1, 2, 3}, Shape{2, 2}), ShapeError);
  EXPECT_THROW(TensorData(std::vector<std::byte>(3), Shape{2}, DType::F32), ValueError);
}

TEST(TensorData, AllClose) {
  auto a = TensorData::from<float>({1.0f, NAN}, Shape{2});
  auto b = TensorData::from<double>({1.0 + 1e-9, NAN}, Shape{2});
  EXPECT_TRUE(a.all_close(b));
  auto c = TensorData::from<float>({1.1f, NAN}, Shape{2});
  std::string why;
  EXPECT_FALSE(a.all_close(c, 1e-5, 1e-8, &why));
  EXPECT_NE(why.find("element 0"), std::string::npos);
}

TEST(TensorData, Format) {
  auto d = TensorData::from<float>({1, 2, 3, 4}, Shape{2, 2});
  EXPECT_EQ(format_tensor(d), "tensor([[1., 2.],\n        [3., 4.]], shape=[2, 2], dtype=f32)");
  auto f = TensorData::from<float>({0.5f, -1.25f}, Shape{2});
  EXPECT_EQ(format_tensor(f), "tensor([ 0.5000, -1.2500], shape=[2], dtype=f32)");
  auto i = TensorData::from<int64_t>({7}, Shape{});
  EXPECT_EQ(format_tensor(i, "cuda:0"), "tensor(7, shape=[], dtype=i64, device=cuda:0)");
  auto b = TensorData::from<bool>({true, false}, Shape{2});
  EXPECT_EQ(format_tensor(b), "tensor([ True, False], shape=[2], dtype=bool)");
  auto z = TensorData(Shape{0, 3}, DType::F32);
  EXPECT_EQ(format_tensor(z), "tensor([], shape=[0, 3], dtype=f32)");
}
