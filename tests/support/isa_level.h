// A test fixture for kernels chosen by instruction set (cpu/isa.h): each test runs at the level
// it is given, capped to it, and is skipped where the CPU lacks that level.
//
//   class MyKernel : public test::IsaLevel {};
//   TEST_P(MyKernel, Matches) { /* cpu::cpu_isa() is GetParam() here */ }
//   INSTANTIATE_TEST_SUITE_P(Levels, MyKernel,
//                            ::testing::Values(cpu::CpuIsa::Avx512, cpu::CpuIsa::Avx2),
//                            test::isa_level_name);
#pragma once
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "ember/backends/cpu/isa.h"

namespace ember::test {

class IsaLevel : public ::testing::TestWithParam<cpu::CpuIsa> {
 protected:
  void SetUp() override {
    if (cpu::cpu_isa_available() < GetParam())
      GTEST_SKIP() << "this CPU lacks " << cpu::name(GetParam()) << " (it has "
                   << cpu::name(cpu::cpu_isa_available()) << ")";
    cpu::set_cpu_isa_cap(GetParam());
  }
  void TearDown() override { cpu::set_cpu_isa_cap(std::nullopt); }
  bool avx512() const { return GetParam() >= cpu::CpuIsa::Avx512; }
};

/// The test name suffix of a level: "avx512", "avx2".
inline std::string isa_level_name(const ::testing::TestParamInfo<cpu::CpuIsa>& info) {
  return std::string(cpu::name(info.param));
}

}  // namespace ember::test
