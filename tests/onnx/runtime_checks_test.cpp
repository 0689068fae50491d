// The ONNX runtime's checks on models built with the protobuf API: unsupported operators
// listed all at once, recursive functions refused, and the errors of a run naming the node.
#include "model_builder.h"

namespace ember::onnx {
namespace {

using namespace ember::onnx::test;
namespace fs = std::filesystem;
namespace pb = ::onnx;

// ---- unsupported models ---------------------------------------------------------------------

TEST(OnnxRuntime, UnsupportedListsEveryProblemWithNodeNames) {
  pb::ModelProto m = empty_model();
  pb::GraphProto* g = m.mutable_graph();
  add_value(g->mutable_input(), "s", pb::TensorProto::STRING, std::vector<DimSpec>{int64_t{1}});
  add_value(g->mutable_output(), "y", pb::TensorProto::FLOAT, std::nullopt);
  pb::TensorProto names;
  names.set_name("names");
  names.set_data_type(pb::TensorProto::STRING);
  names.add_dims(1);
  names.add_string_data("a");
  *g->add_initializer() = names;
  add_node(g, "FooOp", {"s"}, {"a"}, "foo");
  add_node(g, "BarOp", {"a"}, {"b"});
  add_node(g, "Baz", {"b"}, {"c"}, "baz", "com.example");
  pb::GraphProto then_branch, else_branch;
  add_node(&then_branch, "Qux", {"c"}, {"t"}, "inner");
  add_node(&else_branch, "Identity", {"c"}, {"t"}, "fine");
  pb::NodeProto* cond = add_node(g, "If", {"c"}, {"y"}, "cond");
  auto* a = cond->add_attribute();
  a->set_name("then_branch");
  a->set_type(pb::AttributeProto::GRAPH);
  *a->mutable_g() = then_branch;
  a = cond->add_attribute();
  a->set_name("else_branch");
  a->set_type(pb::AttributeProto::GRAPH);
  *a->mutable_g() = else_branch;

  const Model model = parse(m);
  const std::vector<std::string> want = {
      "input \"s\": element type STRING has no ember dtype",
      "initializer \"names\": element type STRING has no ember dtype",
      "FooOp \"foo\": operator FooOp is not supported",
      "BarOp #1: operator BarOp is not supported",
      "Baz \"baz\": operator com.example.Baz is not supported",
      "Qux \"inner\": operator Qux is not supported",
  };
  EXPECT_EQ(unsupported(model), want);
  try {
    Session s(model);
    FAIL() << "a model with unsupported operators made a session";
  } catch (const UnsupportedError& e) {
    EXPECT_EQ(e.problems(), want);
    EXPECT_EQ(std::string(e.what()), "[onnx] model: 6 thing(s) ember cannot run:\n  " + want[0] +
                                         "\n  " + want[1] + "\n  " + want[2] + "\n  " + want[3] +
                                         "\n  " + want[4] + "\n  " + want[5]);
    EXPECT_NE(dynamic_cast<const ValueError*>(&e), nullptr);
  }
  EXPECT_TRUE(unsupported(parse(add_relu_model())).empty());
}

pb::FunctionProto* add_function(pb::ModelProto& m, const std::string& name,
                                const std::string& calls_op, const std::string& calls_domain) {
  pb::FunctionProto* f = m.add_functions();
  f->set_name(name);
  f->set_domain("local");
  f->add_input("a");
  f->add_output("b");
  pb::NodeProto* n = f->add_node();
  n->set_op_type(calls_op);
  n->set_domain(calls_domain);
  n->add_input("a");
  if (calls_op == "Mul") n->add_input("a");
  n->add_output("b");
  return f;
}

pb::ModelProto function_model(const std::string& op) {
  pb::ModelProto m = empty_model();
  auto* o = m.add_opset_import();
  o->set_domain("local");
  o->set_version(1);
  pb::GraphProto* g = x_to(m);
  add_node(g, op, {"x"}, {"y"}, "call", "local");
  return m;
}

TEST(OnnxRuntime, FunctionsRunAndRecursiveOnesAreRefused) {
  pb::ModelProto m = function_model("Square");
  add_function(m, "Square", "Mul", "");
  Session s(parse(m));
  auto out = s.run({Value::tensor(TensorData::from<float>({3, -2}, Shape{2}), s.device())});
  EXPECT_EQ(out[0].data().to_vec<float>(), (std::vector<float>{9, 4}));

  pb::ModelProto self = function_model("Loopy");
  add_function(self, "Loopy", "Loopy", "local");
  EXPECT_EQ(unsupported(parse(self)),
            (std::vector<std::string>{
                "Loopy #0: function local.Loopy calls itself (recursion is not supported)"}));
  pb::ModelProto mutual = function_model("Ping");
  add_function(mutual, "Ping", "Pong", "local");
  add_function(mutual, "Pong", "Ping", "local");
  EXPECT_EQ(unsupported(parse(mutual)),
            (std::vector<std::string>{
                "Ping #0: function local.Ping calls itself (recursion is not supported)"}));
  EXPECT_THROW(Session{parse(mutual)}, UnsupportedError);
}

// ---- errors of a run ------------------------------------------------------------------------

Value floats(std::vector<float> v, Shape s) {
  return Value::tensor(TensorData::from<float>(v, std::move(s)), Device::cpu());
}

TEST(OnnxRuntime, AValidModelRunsWithADynamicBatch) {
  Session s(parse(add_relu_model()));
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0]->name, "x");
  auto out = s.run({floats({0, 0, 0, -2, 3, 1}, Shape{2, 3})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data().shape(), (Shape{2, 3}));
  EXPECT_EQ(out[0].data().to_vec<float>(), (std::vector<float>{1, 0, 0.5f, 0, 1, 1.5f}));
}

TEST(OnnxRuntime, ANodeInputNothingProducesIsAClearError) {
  pb::ModelProto m = empty_model();
  pb::GraphProto* g = x_to(m);
  add_node(g, "Relu", {"ghost"}, {"y"}, "r");
  Session s(parse(m));
  EXPECT_EQ(error_of([&] {
              s.run({floats({1, 2}, Shape{2})});
            }),
            "[onnx] Relu \"r\": input \"ghost\" is not produced by any earlier node, input or "
            "initializer");

  // Produced, but only by a later node: the graph is not in topological order.
  pb::ModelProto late = empty_model();
  g = x_to(late);
  add_node(g, "Relu", {"h"}, {"y"});
  add_node(g, "Neg", {"x"}, {"h"});
  Session s2(parse(late));
  EXPECT_EQ(error_of([&] {
              s2.run({floats({1, 2}, Shape{2})});
            }),
            "[onnx] Relu #0: input \"h\" is not produced by any earlier node, input or "
            "initializer");

  // An output nothing produces, an input not given, too many inputs.
  pb::ModelProto no_out = empty_model();
  g = x_to(no_out, "z");
  Session s3(parse(no_out));
  EXPECT_EQ(error_of([&] {
              s3.run({floats({1, 2}, Shape{2})});
            }),
            "[onnx] graph \"g\": output \"z\" is never produced");
  EXPECT_EQ(error_of([&] { s3.run({}); }), "[onnx] graph \"g\": input \"x\" is not given");
  EXPECT_EQ(error_of([&] {
              s3.run({floats({1}, Shape{1}), floats({1}, Shape{1})});
            }),
            "[onnx] the graph takes 1 inputs, 2 given");
}

TEST(OnnxRuntime, ANodeErrorNamesTheNode) {
  for (const std::string name : {"conv1", ""}) {
    pb::ModelProto m = empty_model();
    pb::GraphProto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x", pb::TensorProto::FLOAT,
              std::vector<DimSpec>{int64_t{1}, int64_t{2}, int64_t{5}, int64_t{5}});
    add_value(g->mutable_output(), "y", pb::TensorProto::FLOAT, std::nullopt);
    // The weight has 3 input channels, x has 2.
    *g->add_initializer() = float_tensor("w", {1, 3, 3, 3}, std::vector<float>(27, 1.0f));
    add_node(g, "Conv", {"x", "w"}, {"y"}, name);
    Session s(parse(m));
    const std::string msg = error_of([&] {
      s.run({floats(std::vector<float>(50, 1.0f), Shape{1, 2, 5, 5})});
    });
    const std::string label = name.empty() ? "Conv #0" : "Conv \"conv1\"";
    EXPECT_EQ(msg.rfind("[onnx] " + label + ": ", 0), 0u) << msg;
  }
}

TEST(OnnxRuntime, ConvWeightsOfAnotherRankAreRefused) {
  for (const std::string op : {"Conv", "ConvTranspose"}) {
    pb::ModelProto m = empty_model();
    pb::GraphProto* g = m.mutable_graph();
    add_value(g->mutable_output(), "y", pb::TensorProto::FLOAT, std::nullopt);
    *g->add_initializer() = float_tensor("x", {1, 1, 3}, {1, 2, 3});
    *g->add_initializer() = float_tensor("w", {1}, {1});  // found by the fuzzer (ConvTranspose)
    add_node(g, op, {"x", "w"}, {"y"}, "c");
    Session s(parse(m));
    EXPECT_EQ(error_of([&] { s.run({}); }),
              "[onnx] " + op + " \"c\": weight [1] and input [1, 1, 3] differ in rank");
  }
}

TEST(OnnxRuntime, GatherNDNeedsIndicesWithALastDim) {
  pb::ModelProto m = empty_model();
  pb::GraphProto* g = m.mutable_graph();
  add_value(g->mutable_output(), "y", pb::TensorProto::FLOAT, std::nullopt);
  *g->add_initializer() = float_tensor("x", {2, 2}, {1, 2, 3, 4});
  pb::TensorProto idx = int64_tensor("i", {0});
  idx.clear_dims();  // a scalar (found by the fuzzer)
  *g->add_initializer() = idx;
  add_node(g, "GatherND", {"x", "i"}, {"y"}, "g");
  Session s(parse(m));
  EXPECT_EQ(error_of([&] { s.run({}); }),
            "[onnx] GatherND \"g\": indices [] need more dims than batch_dims 0");
}

/// One node `op` named "big" on int64 initializers `ints` (name -> values) and float inputs.
pb::ModelProto one_node(const std::string& op, std::vector<std::string> inputs,
                        std::vector<pb::TensorProto> inits) {
  pb::ModelProto m = empty_model();
  pb::GraphProto* g = m.mutable_graph();
  add_value(g->mutable_output(), "y", pb::TensorProto::FLOAT, std::nullopt);
  for (auto& t : inits) *g->add_initializer() = std::move(t);
  add_node(g, op, std::move(inputs), {"y"}, "big");
  return m;
}

TEST(OnnxRuntime, HugeOutputsAreRefusedBeforeAllocating) {
  const int64_t big = int64_t{1} << 20;
  const std::string limit =
      " would take more than the session's limit of 17179869184 bytes "
      "(SessionOptions::max_tensor_bytes)";
  auto run_error = [](const pb::ModelProto& m) {
    Session s(parse(m));
    return error_of([&] { s.run({}); });
  };
  EXPECT_EQ(run_error(one_node("ConstantOfShape", {"shape"}, {int64_tensor("shape", {big, big})})),
            "[onnx] ConstantOfShape \"big\": tensor [1048576, 1048576] f32" + limit);
  EXPECT_EQ(
      run_error(one_node("Expand", {"x", "shape"},
                         {float_tensor("x", {1, 1}, {1}), int64_tensor("shape", {big, big})})),
      "[onnx] Expand \"big\": tensor [1048576, 1048576] f32" + limit);
  EXPECT_EQ(
      run_error(one_node("Tile", {"x", "reps"},
                         {float_tensor("x", {1, 2}, {1, 2}), int64_tensor("reps", {big, big})})),
      "[onnx] Tile \"big\": tensor [1048576, 1, 1048576, 2] f32" + limit);
  EXPECT_EQ(run_error(one_node("Range", {"start", "limit", "delta"},
                               {float_tensor("start", {}, {0}), float_tensor("limit", {}, {1e12f}),
                                float_tensor("delta", {}, {1})})),
            "[onnx] Range \"big\": tensor [999999995904] f32" + limit);
  EXPECT_EQ(run_error(one_node(
                "Pad", {"x", "pads"},
                {float_tensor("x", {1, 1}, {1}), int64_tensor("pads", {0, big * big, 0, 0})})),
            "[onnx] Pad \"big\": tensor [1, 1099511627777] f32" + limit);
  // Dims whose product overflows int64 are refused the same way.
  EXPECT_EQ(run_error(one_node("ConstantOfShape", {"shape"},
                               {int64_tensor("shape", {big * big, big * big})})),
            "[onnx] ConstantOfShape \"big\": tensor [1099511627776, 1099511627776] f32" + limit);
  const std::string reshape = run_error(
      one_node("Reshape", {"x", "shape"},
               {float_tensor("x", {1}, {1}), int64_tensor("shape", {big * big, big * big})}));
  EXPECT_EQ(reshape, "[onnx] Reshape \"big\": target shape size overflows int64");
}

TEST(OnnxRuntime, RangeNeedsOneValuePerInput) {
  Session s(parse(one_node("Range", {"start", "limit", "delta"},
                           {float_tensor("start", {0}, {}), float_tensor("limit", {}, {1}),
                            float_tensor("delta", {}, {1})})));
  EXPECT_EQ(error_of([&] { s.run({}); }), "[onnx] Range \"big\": input 0 must hold one value");
}

TEST(OnnxRuntime, TheSessionLimitAppliesToEveryNodeOutput) {
  SessionOptions o;
  o.max_tensor_bytes = 64;
  Session ok(parse(add_relu_model()), Device::cpu(), o);
  EXPECT_NO_THROW(ok.run({floats(std::vector<float>(15, 1.0f), Shape{5, 3})}));  // 60 bytes
  EXPECT_EQ(error_of([&] {
              ok.run({floats(std::vector<float>(18, 1.0f), Shape{6, 3})});
            }),
            "[onnx] Add \"add\": tensor [6, 3] f32 would take more than the session's limit of 64 "
            "bytes (SessionOptions::max_tensor_bytes)");
  // An operator that allocates without the runtime's helpers is stopped at its output.
  pb::ModelProto m = empty_model();
  pb::GraphProto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x", pb::TensorProto::FLOAT, std::vector<DimSpec>{int64_t{20}});
  add_value(g->mutable_output(), "y", pb::TensorProto::FLOAT, std::nullopt);
  add_node(g, "Relu", {"x"}, {"y"}, "r");
  Session relu(parse(m), Device::cpu(), o);
  EXPECT_EQ(error_of([&] { relu.run({floats(std::vector<float>(20, 1.0f), Shape{20})}); }),
            "[onnx] Relu \"r\": output 0 [20] takes 80 bytes, more than the session's limit of 64 "
            "(SessionOptions::max_tensor_bytes)");
}

}  // namespace
}  // namespace ember::onnx
