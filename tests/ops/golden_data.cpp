#include <cmath>
#include <cstdlib>
#include <fstream>

#include "golden.h"
#include "suite.h"

namespace ember::test {

using nlohmann::json;

namespace {
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
}  // namespace

const json& golden_file() {
  static const json j = [] {
    std::string path = data_file(EMBER_GOLDENS);  // $EMBER_TEST_DATA: the GPU bundle's copy
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path);
    return json::parse(f);
  }();
  return j;
}

TensorData golden_tensor(const json& t) {
  DType dt = dtype_from_name(t.at("dtype").get<std::string>());
  Shape s(t.at("shape").get<std::vector<int64_t>>());
  if (is_int(dt)) {  // keep large ints exact
    std::vector<int64_t> iv;
    for (const auto& x : t.at("data")) iv.push_back(x.get<int64_t>());
    return TensorData::from<int64_t>(iv, s).convert(dt);
  }
  std::vector<double> v;
  for (const auto& x : t.at("data")) v.push_back(number(x));
  return TensorData::from<double>(v, s).convert(dt);
}

}  // namespace ember::test
