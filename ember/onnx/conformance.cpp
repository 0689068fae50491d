// Runs ONNX backend-test folders (conformance.h).
#include "ember/onnx/conformance.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "ember/onnx/passes.h"
#include "onnx/onnx-data_pb.h"
#include "onnx/onnx_pb.h"

namespace ember::onnx {

namespace {

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw ValueError("[onnx] cannot open " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Files of ONNX 1.12 store bfloat16 values as UINT16 bit patterns (the graph says BFLOAT16).
TensorData tensor_of(::onnx::TensorProto t, const std::string& what, int32_t expected) {
  if (t.data_type() == ::onnx::TensorProto::UINT16 && expected == ::onnx::TensorProto::BFLOAT16)
    t.set_data_type(::onnx::TensorProto::BFLOAT16);
  std::string bytes = t.SerializeAsString();
  return parse_tensor(std::as_bytes(std::span(bytes.data(), bytes.size())), what);
}

std::vector<double> as_f64(const TensorData& d) {
  std::vector<double> v(static_cast<size_t>(d.numel()));
  convert_elements(d.bytes().data(), d.dtype(), v.data(), DType::F64, v.size());
  return v;
}

}  // namespace

Value load_value(const std::filesystem::path& path, const ValueInfo& info, Device dev) {
  const std::string bytes = read_bytes(path);
  const std::string what = path.string();
  const ValueInfo::Kind kind = info.kind;
  const int32_t et = info.elem.onnx;
  if (kind == ValueInfo::Kind::Sequence) {
    ::onnx::SequenceProto s;
    if (!s.ParseFromString(bytes)) throw ValueError("[onnx] " + what + ": not a SequenceProto");
    std::vector<TensorData> items;
    for (const auto& t : s.tensor_values()) items.push_back(tensor_of(t, what, et));
    return Value::sequence_of(items, dev);
  }
  if (kind == ValueInfo::Kind::Optional) {
    ::onnx::OptionalProto o;
    if (!o.ParseFromString(bytes)) throw ValueError("[onnx] " + what + ": not an OptionalProto");
    if (o.has_tensor_value()) return Value::tensor(tensor_of(o.tensor_value(), what, et), dev);
    if (o.has_sequence_value()) {
      std::vector<TensorData> items;
      for (const auto& t : o.sequence_value().tensor_values())
        items.push_back(tensor_of(t, what, et));
      return Value::sequence_of(items, dev);
    }
    return Value{};
  }
  ::onnx::TensorProto t;
  if (!t.ParseFromString(bytes)) throw ValueError("[onnx] " + what + ": not a TensorProto");
  return Value::tensor(tensor_of(std::move(t), what, et), dev);
}

std::string compare(const TensorData& e, const TensorData& a, const TestOptions& o) {
  if (e.shape() != a.shape())
    return "shape " + a.shape().to_string() + ", expected " + e.shape().to_string();
  if (e.dtype() != a.dtype())
    return "type " + std::string(name(a.dtype())) + ", expected " + std::string(name(e.dtype()));
  const auto ev = as_f64(e), av = as_f64(a);
  const bool exact = !is_float(e.dtype());
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    const double x = ev[i], y = av[i];
    bool ok;
    if (std::isnan(x) || std::isnan(y))
      ok = std::isnan(x) && std::isnan(y);
    else if (std::isinf(x) || std::isinf(y))
      ok = x == y;
    else
      ok = exact ? x == y : std::abs(x - y) <= o.atol + o.rtol * std::abs(x);
    if (!ok) {
      if (bad++ == 0) first = i;
      if (!std::isnan(x - y)) worst = std::max(worst, std::abs(x - y));
    }
  }
  if (bad == 0) return {};
  std::ostringstream s;
  s << bad << " of " << ev.size() << " values differ (first at " << first << ": " << av[first]
    << ", expected " << ev[first] << "; largest difference " << worst << ")";
  return s.str();
}

TestResult run_backend_test(const std::filesystem::path& dir, Device device,
                            const TestOptions& options) {
  TestResult r;
  r.name = dir.filename().string();
  try {
    ParseOptions po;
    po.infer_shapes = options.infer_shapes;
    Model m = load_model(dir / "model.onnx", po);
    for (const Node& n : m.graph.nodes)
      if (std::find(r.ops.begin(), r.ops.end(), n.op_type) == r.ops.end())
        r.ops.push_back(n.op_type);
    auto problems = unsupported(m);
    if (!problems.empty()) {
      r.status = TestStatus::Skipped;
      for (size_t i = 0; i < problems.size(); ++i) r.message += (i ? "; " : "") + problems[i];
      return r;
    }
    SessionOptions so;
    so.optimize = options.optimize;
    Session s(std::move(m), device, so);
    auto inputs = s.inputs();
    std::vector<std::filesystem::path> sets;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().starts_with("test_data_set_"))
        sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) throw ValueError("no test_data_set_* folder");
    const auto& outs = s.model().graph.outputs;
    for (const auto& set : sets) {
      std::vector<Value> in;
      for (size_t k = 0;; ++k) {
        auto p = set / ("input_" + std::to_string(k) + ".pb");
        if (!std::filesystem::exists(p)) break;
        if (k >= inputs.size()) throw ValueError("more input files than graph inputs");
        in.push_back(load_value(p, *inputs[k], device));
      }
      auto got = s.run(in);
      for (size_t k = 0; k < outs.size(); ++k) {
        auto p = set / ("output_" + std::to_string(k) + ".pb");
        if (!std::filesystem::exists(p)) continue;
        Value want = load_value(p, outs[k], Device::cpu());
        const std::string where =
            set.filename().string() + " output " + std::to_string(k) + " (" + outs[k].name + "): ";
        if (want.kind != got[k].kind) {
          r.message = where + "the kind of value differs";
          return r;
        }
        if (want.kind == Value::Kind::Tensor) {
          std::string d = compare(want.data(), got[k].data(), options);
          if (!d.empty()) {
            r.message = where + d;
            return r;
          }
        } else if (want.kind == Value::Kind::Sequence) {
          auto w = want.sequence_data(), g = got[k].sequence_data();
          if (w.size() != g.size()) {
            r.message = where + "sequence of " + std::to_string(g.size()) + ", expected " +
                        std::to_string(w.size());
            return r;
          }
          for (size_t i = 0; i < w.size(); ++i) {
            std::string d = compare(w[i], g[i], options);
            if (!d.empty()) {
              r.message = where + "item " + std::to_string(i) + ": " + d;
              return r;
            }
          }
        }
      }
    }
    r.status = TestStatus::Passed;
  } catch (const UnsupportedError& e) {
    r.status = TestStatus::Skipped;
    r.message = e.what();
  } catch (const std::exception& e) {
    r.status = TestStatus::Failed;
    r.message = e.what();
  }
  return r;
}

}  // namespace ember::onnx
