// Runs every golden case on every device (and once more with the IR round-trip check on).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "golden.h"

namespace ember::test {
namespace {

using nlohmann::json;

double number(const json& v) {
  if (v.is_string()) {
    auto s = v.get<std::string>();
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    throw ValueError("[golden] bad number " + s);
  }
  return v.get<double>();
}

TensorData to_data(const json& t) {
  DType dt = dtype_from_name(t.at("dtype").get<std::string>());
  Shape s(t.at("shape").get<std::vector<int64_t>>());
  std::vector<double> v;
  for (const auto& x : t.at("data")) v.push_back(number(x));
  TensorData d64 = TensorData::from<double>(v, s);
  if (is_int(dt)) {  // keep large ints exact
    std::vector<int64_t> iv;
    for (const auto& x : t.at("data")) iv.push_back(x.get<int64_t>());
    return TensorData::from<int64_t>(iv, s).convert(dt);
  }
  return d64.convert(dt);
}

struct Case {
  std::string id, op;
  json spec;
};

const json& goldens() {
  static const json j = [] {
    std::ifstream f(EMBER_GOLDENS);
    if (!f) throw std::runtime_error("cannot open " EMBER_GOLDENS);
    return json::parse(f);
  }();
  return j;
}

struct Param {
  std::string device;  // "cpu", "cpu+ir", ...
  size_t index;
};

std::vector<Param> params() {
  std::vector<Param> out;
  std::vector<std::string> devices;
  for (Device d : available_devices()) devices.push_back(d.to_string());
  devices.push_back("cpu+ir");
  for (const auto& d : devices)
    for (size_t i = 0; i < goldens().at("cases").size(); ++i) out.push_back({d, i});
  return out;
}

class Golden : public ::testing::TestWithParam<Param> {};

TEST_P(Golden, MatchesPyTorch) {
  const auto& p = GetParam();
  const json& c = goldens().at("cases").at(p.index);
  bool ir = p.device == "cpu+ir";
  Device dev = Device::parse(ir ? "cpu" : p.device);
  Dispatch::set_ir_check(ir);
  auto& ops = golden_ops();
  std::string op = c.at("op").get<std::string>();
  auto it = ops.find(op);
  ASSERT_NE(it, ops.end()) << "no ember call registered for op '" << op << "'";
  Args args{{}, &c.at("attrs")};
  for (const auto& in : c.at("inputs")) {
    TensorData d = to_data(in);
    std::string layout = in.value("layout", "contiguous");
    if (layout == "transposed") {  // stored with the last two dims swapped: view it back
      Op sw{OpCode::Permute, {}};
      size_t r = d.shape().rank();
      for (size_t k = 0; k < r; ++k) sw.attrs.dims.push_back(static_cast<int64_t>(k));
      std::swap(sw.attrs.dims[r - 1], sw.attrs.dims[r - 2]);
      std::array<DispatchHandle, 1> h{B::from_data(d, dev)};
      args.in.push_back(apply<B>(sw, std::span<DispatchHandle>(h)));
    } else {
      args.in.push_back(B::from_data(d, dev));
    }
  }
  TensorData want = to_data(c.at("expected"));
  TensorData got = B::to_data(it->second(args));
  Dispatch::set_ir_check(false);
  EXPECT_EQ(got.dtype(), want.dtype()) << c.at("id");
  std::string why;
  EXPECT_TRUE(got.all_close(want, c.value("rtol", 1e-5), c.value("atol", 1e-6), &why))
      << c.at("id") << ": " << why << "\n got " << format_tensor(got) << "\nwant "
      << format_tensor(want);
}

// Every op key registered in golden_cases.cpp has at least one case.
TEST(GoldenCoverage, EveryRegisteredOpHasACase) {
  std::set<std::string> seen;
  for (const auto& c : goldens().at("cases")) seen.insert(c.at("op").get<std::string>());
  for (const auto& [k, fn] : golden_ops()) EXPECT_TRUE(seen.count(k)) << k;
}

std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  std::string id = goldens().at("cases").at(info.param.index).at("id").get<std::string>();
  std::string s = info.param.device + "_" + id;
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Ops, Golden, ::testing::ValuesIn(params()), case_name);

}  // namespace
}  // namespace ember::test
