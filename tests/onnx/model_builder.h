// Internal to the ONNX tests: models built with the protobuf API (model_test.cpp,
// runtime_checks_test.cpp), and the error text of a failing call.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "ember/core/error.h"
#include "ember/onnx/model.h"
#include "ember/onnx/runtime.h"
#include "onnx/onnx_pb.h"

namespace ember::onnx::test {

namespace fs = std::filesystem;
namespace pb = ::onnx;
using DimSpec = std::variant<int64_t, std::string>;

inline std::vector<std::byte> bytes_of(const google::protobuf::MessageLite& m) {
  std::string s;
  EXPECT_TRUE(m.SerializeToString(&s));
  std::vector<std::byte> b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

/// The message of the E that `f` throws (a test failure if it throws nothing or another type).
template <class E = ValueError>
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "another exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception";
  return "";
}

inline pb::ValueInfoProto* add_value(google::protobuf::RepeatedPtrField<pb::ValueInfoProto>* to,
                                     const std::string& name, int32_t elem,
                                     std::optional<std::vector<DimSpec>> dims) {
  pb::ValueInfoProto* v = to->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  if (dims) {
    auto* shape = tt->mutable_shape();
    for (const DimSpec& d : *dims) {
      auto* dim = shape->add_dim();
      if (const auto* size = std::get_if<int64_t>(&d))
        dim->set_dim_value(*size);
      else
        dim->set_dim_param(std::get<std::string>(d));
    }
  }
  return v;
}

inline pb::NodeProto* add_node(pb::GraphProto* g, const std::string& op,
                               std::vector<std::string> inputs, std::vector<std::string> outputs,
                               const std::string& name = "", const std::string& domain = "") {
  pb::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  n->set_domain(domain);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline pb::TensorProto float_tensor(const std::string& name, std::vector<int64_t> dims,
                                    std::vector<float> values) {
  pb::TensorProto t;
  if (!name.empty()) t.set_name(name);  // (proto2: an empty name set is still written)
  t.set_data_type(pb::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

inline pb::TensorProto int64_tensor(const std::string& name, std::vector<int64_t> values) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(pb::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

/// ir_version 8, opset 17, an empty graph "g".
inline pb::ModelProto empty_model() {
  pb::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(17);
  m.mutable_graph()->set_name("g");
  return m;
}

/// `m`'s graph, given an input "x" ([2] FLOAT) and an output `out` (FLOAT, shape unknown).
inline pb::GraphProto* x_to(pb::ModelProto& m, const std::string& out = "y") {
  pb::GraphProto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x", pb::TensorProto::FLOAT, std::vector<DimSpec>{int64_t{2}});
  add_value(g->mutable_output(), out, pb::TensorProto::FLOAT, std::nullopt);
  return g;
}

/// y = Relu(x + w): x [N, 3] FLOAT (a dynamic batch), w [3] an initializer.
inline pb::ModelProto add_relu_model() {
  pb::ModelProto m = empty_model();
  pb::GraphProto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x", pb::TensorProto::FLOAT,
            std::vector<DimSpec>{std::string("N"), int64_t{3}});
  add_value(g->mutable_output(), "y", pb::TensorProto::FLOAT,
            std::vector<DimSpec>{std::string("N"), int64_t{3}});
  *g->add_initializer() = float_tensor("w", {3}, {1.0f, -2.0f, 0.5f});
  add_node(g, "Add", {"x", "w"}, {"s"}, "add");
  auto* relu = add_node(g, "Relu", {"s"}, {"y"}, "relu");
  auto* a = relu->add_attribute();  // ignored by Relu; makes the cut points more varied
  a->set_name("note");
  a->set_type(pb::AttributeProto::STRING);
  a->set_s("relu");
  return m;
}

inline Model parse(const pb::ModelProto& m, const ParseOptions& o = {}) {
  return parse_model(bytes_of(m), "m", o);
}

inline std::string parse_error(const pb::ModelProto& m, const ParseOptions& o = {}) {
  return error_of([&] { parse(m, o); });
}

}  // namespace ember::onnx::test
