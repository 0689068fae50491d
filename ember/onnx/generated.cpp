// What generated code calls (generated.h): node descriptions and the runtime's operators on
// Dispatch and Autodiff<Dispatch>.
#include "ember/onnx/generated.h"

#include "ember/onnx/ops/context.h"

namespace ember::onnx::gen {

namespace {
Attribute make(std::string name, Attribute::Type t) {
  Attribute a;
  a.name = std::move(name);
  a.type = t;
  return a;
}
}  // namespace

Attribute attr(std::string name, int64_t v) {
  Attribute a = make(std::move(name), Attribute::Type::Int);
  a.i = v;
  return a;
}
Attribute attr(std::string name, double v) {
  Attribute a = make(std::move(name), Attribute::Type::Float);
  a.f = v;
  return a;
}
Attribute attr(std::string name, std::string v) {
  Attribute a = make(std::move(name), Attribute::Type::String);
  a.s = std::move(v);
  return a;
}
Attribute attr(std::string name, std::vector<int64_t> v) {
  Attribute a = make(std::move(name), Attribute::Type::Ints);
  a.ints = std::move(v);
  return a;
}
Attribute attr(std::string name, std::vector<double> v) {
  Attribute a = make(std::move(name), Attribute::Type::Floats);
  a.floats = std::move(v);
  return a;
}
Attribute attr(std::string name, std::vector<std::string> v) {
  Attribute a = make(std::move(name), Attribute::Type::Strings);
  a.strings = std::move(v);
  return a;
}
Attribute attr(std::string name, TensorData v) {
  Attribute a = make(std::move(name), Attribute::Type::Tensor);
  a.tensors.push_back(std::move(v));
  return a;
}

Node node(std::string op_type, std::string domain, std::vector<Attribute> attrs, std::string name,
          std::vector<std::string> outputs) {
  Node n;
  n.outputs = std::move(outputs);
  n.op_type = std::move(op_type);
  n.domain = std::move(domain);
  n.attributes = std::move(attrs);
  n.name = std::move(name);
  return n;
}

TensorData tensor(DType t, Dims shape, std::vector<uint8_t> bytes) {
  return TensorData(std::as_bytes(std::span<const uint8_t>(bytes)), Shape(shape), t);
}

namespace {
std::map<std::string, ModelFn>& models() {
  static std::map<std::string, ModelFn> m;
  return m;
}
}  // namespace

bool register_model(const std::string& name, ModelFn fn) {
  models()[name] = fn;
  return true;
}
const std::map<std::string, ModelFn>& registered_models() { return models(); }

template <Backend B>
std::vector<Val<B>> run(const Node& n, int64_t opset, Device dev, std::vector<Val<B>> inputs) {
  const auto& reg = detail::registry<B>();
  const std::string key = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
  auto it = reg.find(key);
  if (it == reg.end()) throw ValueError("[onnx] operator " + key + " is not supported");
  detail::Ctx<B> ctx(n, 0, opset, dev, std::move(inputs), nullptr);
  try {
    return it->second(ctx);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.starts_with("[onnx] " + ctx.label())) throw;
    if (msg.starts_with("[onnx] ")) msg.erase(0, 7);
    throw ValueError("[onnx] " + ctx.label() + ": " + msg);
  }
}

template std::vector<Val<Dispatch>> run<Dispatch>(const Node&, int64_t, Device,
                                                  std::vector<Val<Dispatch>>);
template std::vector<Val<Autodiff<Dispatch>>> run<Autodiff<Dispatch>>(
    const Node&, int64_t, Device, std::vector<Val<Autodiff<Dispatch>>>);

}  // namespace ember::onnx::gen
