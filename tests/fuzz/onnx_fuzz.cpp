// libFuzzer target for the ONNX importer and runtime: any byte string must either parse into
// a model or raise an ember::Error. A model that parses is checked (`unsupported`); when it
// is small and everything in it runs, a Session is built and run once on zero-filled inputs
// of the declared shapes. Running may fail, but only with an ember::Error. A crash, a
// sanitizer report, another exception type, a hang or a huge allocation is a bug.
//
//   scripts/fuzz.sh onnx 300
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "ember/core/error.h"
#include "ember/onnx/model.h"
#include "ember/onnx/runtime.h"
#include "fuzz_target.h"

namespace {

// Small enough that every run takes milliseconds and no tensor nears the fuzzer's
// allocation limit (-malloc_limit_mb=256).
constexpr int64_t kMaxNodes = 64;
constexpr int64_t kMaxInputElements = 4096;
constexpr int64_t kMaxRuntimeTensorBytes = int64_t{16} << 20;

// The nodes a run executes once (a function call counts its body), saturating past the cap.
// Only for models without problems, where no function calls itself.
int64_t count_nodes(const ember::onnx::Model& m, const std::vector<ember::onnx::Node>& nodes,
                    int depth = 0) {
  int64_t n = 0;
  for (const auto& node : nodes) {
    if (++n > kMaxNodes || depth > 32) return kMaxNodes + 1;
    for (const auto& f : m.functions)
      if (f.name == node.op_type && f.domain == node.domain)
        n += count_nodes(m, f.nodes, depth + 1);
    for (const auto& a : node.attributes)
      for (const auto& sub : a.graphs) n += count_nodes(m, sub->nodes, depth + 1);
  }
  return std::min(n, kMaxNodes + 1);
}

/// Every graph input in graph order: an initializer's own value, zeros of the declared shape
/// for the others; false when one is not a small static tensor.
bool zero_inputs(const ember::onnx::Session& s, std::vector<ember::onnx::Value>& out) {
  const ember::onnx::Graph& g = s.model().graph;
  for (const ember::onnx::ValueInfo& v : g.inputs) {
    const ember::TensorData* init = nullptr;
    for (const auto& [name, d] : g.initializers)
      if (name == v.name) init = &d;
    if (init) {
      out.push_back(ember::onnx::Value::tensor(*init, s.device()));
      continue;
    }
    if (v.kind != ember::onnx::ValueInfo::Kind::Tensor || !v.elem.dtype || !v.shape) return false;
    ember::Dims dims;
    int64_t n = 1;
    for (const auto& d : *v.shape) {
      if (!d.size || *d.size < 0 || *d.size > kMaxInputElements) return false;
      n *= *d.size;
      if (n > kMaxInputElements) return false;
      dims.push_back(*d.size);
    }
    out.push_back(ember::onnx::Value::tensor(ember::TensorData(ember::Shape(dims), *v.elem.dtype),
                                             s.device()));
  }
  return true;
}

}  // namespace

EMBER_FUZZ_TARGET(onnx) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  ember::onnx::Model model;
  try {
    model = ember::onnx::parse_model(bytes, "fuzz");
  } catch (const ember::Error&) {
    return 0;
  }
  const std::vector<std::string> problems = ember::onnx::unsupported(model);
  if (problems.empty() && count_nodes(model, model.graph.nodes) > kMaxNodes) return 0;
  ember::onnx::SessionOptions options;
  options.max_tensor_bytes = kMaxRuntimeTensorBytes;
  try {
    ember::onnx::Session session(std::move(model), ember::Device::cpu(), options);
    if (!problems.empty()) std::abort();  // a model with problems must be refused
    std::vector<ember::onnx::Value> inputs;
    if (!zero_inputs(session, inputs)) return 0;
    auto outputs = session.run(inputs);
    for (const auto& o : outputs)
      if (o.kind == ember::onnx::Value::Kind::Tensor) (void)o.data();
  } catch (const ember::onnx::UnsupportedError& e) {
    if (e.problems() != problems) std::abort();  // the same list as unsupported()
  } catch (const ember::Error&) {
  }
  return 0;
}
