// Runs every golden case on every device (and once more with the IR round-trip check on).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "golden.h"

namespace ember::test {
namespace {

using nlohmann::json;
using B = Dispatch;

struct Param {
  std::string device;  // "cpu", "cpu+ir", ...
  size_t index;
};

// Every device of this machine and cpu+ir; only $EMBER_TEST_DEVICE when that is set (the
// ops_test@remote entry, against a server it starts).
std::vector<Param> params() {
  std::vector<Param> out;
  std::vector<std::string> devices;
  if (const char* env = std::getenv("EMBER_TEST_DEVICE"); env && *env) {
    devices.push_back(Device::parse(env).to_string());
  } else {
    for (Device d : available_devices()) devices.push_back(d.to_string());
    devices.push_back("cpu+ir");
  }
  for (const auto& d : devices)
    for (size_t i = 0; i < golden_file().at("cases").size(); ++i) out.push_back({d, i});
  return out;
}

class Golden : public ::testing::TestWithParam<Param> {};

TEST_P(Golden, MatchesPyTorch) {
  const auto& p = GetParam();
  const json& c = golden_file().at("cases").at(p.index);
  bool ir = p.device == "cpu+ir";
  Device dev = Device::parse(ir ? "cpu" : p.device);
  Dispatch::set_ir_check(ir);
  auto& ops = golden_ops<B>();
  std::string op = c.at("op").get<std::string>();
  auto it = ops.find(op);
  ASSERT_NE(it, ops.end()) << "no ember call registered for op '" << op << "'";
  Args<B> args = load_inputs<B>(c, dev);
  TensorData want = golden_tensor(c.at("expected"));
  TensorData got;
  try {
    got = B::to_data(it->second(args));
  } catch (const DeviceError& e) {
    // An op a backend has no kernel for yet says so; the case is skipped there, not failed.
    Dispatch::set_ir_check(false);
    if (std::string(e.what()).find("not implemented on") != std::string::npos)
      GTEST_SKIP() << c.at("id") << ": " << e.what();
    throw;
  }
  Dispatch::set_ir_check(false);
  EXPECT_EQ(got.dtype(), want.dtype()) << c.at("id");
  std::string why;
  // integer and bool results exactly (a tolerance relative to large sums hid off-by-one errors)
  const bool exact = !is_float(want.dtype());
  EXPECT_TRUE(got.all_close(want, exact ? 0.0 : c.value("rtol", 1e-5),
                            exact ? 0.0 : c.value("atol", 1e-6), &why))
      << c.at("id") << ": " << why << "\n got " << format_tensor(got) << "\nwant "
      << format_tensor(want);
}

// Every op key registered in golden_cases.cpp has at least one case.
TEST(GoldenCoverage, EveryRegisteredOpHasACase) {
  std::set<std::string> seen;
  for (const auto& c : golden_file().at("cases")) seen.insert(c.at("op").get<std::string>());
  for (const auto& [k, fn] : golden_ops<B>()) EXPECT_TRUE(seen.count(k)) << k;
}

std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  std::string id = golden_file().at("cases").at(info.param.index).at("id").get<std::string>();
  std::string s = info.param.device + "_" + id;
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Ops, Golden, ::testing::ValuesIn(params()), case_name);

}  // namespace
}  // namespace ember::test
