// Tensor-level semantics: value semantics, in-place reuse, views sharing buffers, printing.
#include <gtest/gtest.h>

#include <sstream>

#include "ember/ember.h"

namespace ember {
namespace {

using T2 = Tensor<Cpu, 2>;

TEST(Tensor, CopiesShareAndOpsDoNotMutate) {
  auto a = T2::ones({2, 2});
  auto b = a;
  auto c = a + 1.0f;
  EXPECT_EQ(a.to_vec<float>(), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(b.handle().storage.get(), a.handle().storage.get());
  EXPECT_EQ(c.to_vec<float>(), (std::vector<float>{2, 2, 2, 2}));
}

TEST(Tensor, TemporariesAreReusedInPlace) {
  auto a = T2::ones({64, 64});
  auto t = a + 1.0f;  // a fresh buffer
  const std::byte* p = t.handle().storage.get();
  auto u = std::move(t).exp();  // sole owner: the same buffer comes back
  EXPECT_EQ(u.handle().storage.get(), p);
  auto v = u.exp();  // u is still held: a new buffer
  EXPECT_NE(v.handle().storage.get(), p);
  EXPECT_FLOAT_EQ(u.to_vec<float>()[0], std::exp(2.0f));
}

TEST(Tensor, ViewsShareTheBuffer) {
  auto a = T2::from_values<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto t = a.transpose();
  auto s = a.slice({Slice::all(), Slice(1, 3)});
  EXPECT_EQ(t.handle().storage.get(), a.handle().storage.get());
  EXPECT_EQ(s.handle().storage.get(), a.handle().storage.get());
  EXPECT_EQ(t.to_vec<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(s.to_vec<float>(), (std::vector<float>{2, 3, 5, 6}));
  // reshape of a non-contiguous view copies and still gives the right order
  EXPECT_EQ(t.reshape<1>({6}).to_vec<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

// contiguous() copies a view into fresh dense memory and leaves a dense tensor as it is.
TEST(Tensor, ContiguousCopiesViewsOnly) {
  auto a = T2::from_values<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto t = a.transpose();
  ASSERT_FALSE(t.handle().is_contiguous());
  auto c = t.contiguous();
  EXPECT_TRUE(c.handle().is_contiguous());
  EXPECT_NE(c.handle().storage.get(), a.handle().storage.get());
  EXPECT_EQ(c.to_vec<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(a.contiguous().handle().storage.get(), a.handle().storage.get());
  auto g = Tensor<Autodiff<Cpu>, 2>::from_values<float>({1, 2, 3, 4, 5, 6}, {2, 3}).require_grad();
  auto grads = (g.transpose().contiguous() * 2.0).sum().backward();
  EXPECT_EQ(g.grad(grads)->to_vec<float>(), (std::vector<float>(6, 2.0f)));
}

TEST(Tensor, Printing) {
  std::ostringstream os;
  os << Tensor<Dispatch, 1, Int>::arange(int64_t{0}, int64_t{3});
  EXPECT_EQ(os.str(), "tensor([0, 1, 2], shape=[3], dtype=i64)");
  auto big = Tensor<Cpu, 1>::zeros({2000}).to_string();
  EXPECT_NE(big.find("..."), std::string::npos);
}

TEST(Tensor, InfoAndScalars) {
  auto a = T2::full({2, 5}, 3.5);
  EXPECT_EQ(a.dims(), (std::array<int64_t, 2>{2, 5}));
  EXPECT_EQ(a.numel(), 10);
  EXPECT_EQ(a.dim(-1), 5);
  EXPECT_EQ(a.sum().into_scalar(), 35.0f);
  EXPECT_THROW(a.into_scalar(), ShapeError);
  EXPECT_EQ(a.device(), Device::cpu());
}

}  // namespace
}  // namespace ember
