// A program with its own CPU kernel table (f32 creation, arithmetic, casts and reductions)
// and EMBER_CPU_ONLY: what it names runs as in any program, what it leaves out throws a
// DTypeError that names the op, the family and the element type, and no GPU device exists.
#include <gtest/gtest.h>

#include <string>

#include "ember/backends/cpu/kernel_table.h"
#include "ember/ember.h"

EMBER_CPU_KERNELS(
    ember::cpu::Families<ember::OpFamily::Create, ember::OpFamily::Binary, ember::OpFamily::Cast,
                         ember::OpFamily::Reduce, ember::OpFamily::Movement>,
    ember::cpu::DTypes<float>)

namespace {

using namespace ember;
using B = Dispatch;

TEST(LeanKernels, TableHoldsWhatItNames) {
  const cpu::KernelTable& t = cpu::kernel_table();
  auto has = [&](OpFamily f, DType d) {
    return t.at[static_cast<int>(f)][static_cast<int>(d)] != nullptr;
  };
  EXPECT_TRUE(has(OpFamily::Binary, DType::F32));
  EXPECT_TRUE(has(OpFamily::Cast, DType::F32));
  EXPECT_FALSE(has(OpFamily::Binary, DType::I64));
  EXPECT_FALSE(has(OpFamily::Unary, DType::F32));
  EXPECT_FALSE(has(OpFamily::Matmul, DType::F32));
  // The library's table, for comparison: every family for every type.
  const cpu::KernelTable& all = cpu::kernels_of<cpu::AllFamilies, cpu::AllDTypes>;
  for (int f = 0; f < cpu::kNumOpFamilies; ++f)
    for (int d = 0; d < kNumDTypes; ++d) EXPECT_NE(all.at[f][d], nullptr) << f << " " << d;
}

TEST(LeanKernels, NamedKernelsRun) {
  auto a = Tensor<B, 1>::from_data(TensorData::from(std::vector<float>{1, 2, 3}, {3}));
  auto b = Tensor<B, 1>::from_data(TensorData::from(std::vector<float>{10, 20, 30}, {3}));
  EXPECT_EQ((a + b).to_vec<float>(), (std::vector<float>{11, 22, 33}));
  EXPECT_FLOAT_EQ((a * b).sum().into_scalar<float>(), 140.0f);
  // f32 -> i64 is the Cast kernel of f32, which converts to every type.
  auto i = (a * 2.0).int_();
  EXPECT_EQ(i.to_vec<int64_t>(), (std::vector<int64_t>{2, 4, 6}));
}

TEST(LeanKernels, LeftOutKernelNamesOpAndType) {
  auto i = Tensor<B, 1, Int>::from_data(TensorData::from(std::vector<int64_t>{1, 2}, {2}));
  try {
    (void)(i + i).to_data();
    FAIL() << "i64 add ran without an i64 Binary kernel";
  } catch (const DTypeError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[add]", 0), 0u) << m;
    EXPECT_NE(m.find("Binary"), std::string::npos) << m;
    EXPECT_NE(m.find("i64"), std::string::npos) << m;
  }
  auto x = Tensor<B, 1>::from_data(TensorData::from(std::vector<float>{1, 2}, {2}));
  try {
    (void)x.exp().to_data();
    FAIL() << "exp ran without a Unary kernel";
  } catch (const DTypeError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[exp]", 0), 0u) << m;
    EXPECT_NE(m.find("Unary"), std::string::npos) << m;
    EXPECT_NE(m.find("f32"), std::string::npos) << m;
  }
}

TEST(LeanKernels, CpuOnlyProgramHasNoGpuDevice) {
  for (const Device& d : available_devices()) EXPECT_EQ(d.kind, DeviceKind::Cpu) << d.to_string();
}

}  // namespace
