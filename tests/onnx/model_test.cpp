// The ONNX parser on models built here with the protobuf API: what a valid model becomes,
// external data and its bounds, and files that lie (truncated bytes, sizes, dims, counts, the
// byte limit). Every bad file must be a ValueError, never a crash.
#include "model_builder.h"

namespace ember::onnx {
namespace {

using namespace ember::onnx::test;
namespace fs = std::filesystem;
namespace pb = ::onnx;

// ---- valid models ---------------------------------------------------------------------------

TEST(OnnxParse, ValidModelKeepsOpsetsValuesNodesAndAttributesOfEveryType) {
  pb::ModelProto m = empty_model();
  m.set_producer_name("ember-test");
  m.set_producer_version("1.0");
  m.set_doc_string("a model");
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  pb::GraphProto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x", pb::TensorProto::FLOAT,
            std::vector<DimSpec>{std::string("batch"), int64_t{3}});
  // A dim with neither value nor symbol, and a -1 some exporters write: both unknown.
  add_value(g->mutable_input(), "u", pb::TensorProto::INT64, std::vector<DimSpec>{int64_t{-1}});
  g->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim();
  auto* seq = g->add_input();
  seq->set_name("seq");
  seq->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(pb::TensorProto::DOUBLE);
  add_value(g->mutable_output(), "y", pb::TensorProto::FLOAT, std::nullopt);
  add_value(g->mutable_value_info(), "h", pb::TensorProto::FLOAT,
            std::vector<DimSpec>{std::string("batch"), int64_t{3}});

  add_node(g, "Relu", {"x"}, {"h"}, "relu");
  pb::NodeProto* n = add_node(g, "Custom", {"h", ""}, {"y", ""}, "", "ai.onnx");
  auto attr = [&](const std::string& name, pb::AttributeProto::AttributeType t) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(t);
    return a;
  };
  attr("f", pb::AttributeProto::FLOAT)->set_f(1.5f);
  attr("i", pb::AttributeProto::INT)->set_i(-7);
  attr("s", pb::AttributeProto::STRING)->set_s("text");
  *attr("t", pb::AttributeProto::TENSOR)->mutable_t() = float_tensor("t", {2}, {1, 2});
  pb::GraphProto sub;
  sub.set_name("body");
  add_node(&sub, "Identity", {"h"}, {"z"}, "inner");
  add_value(sub.mutable_output(), "z", pb::TensorProto::FLOAT, std::nullopt);
  *attr("g", pb::AttributeProto::GRAPH)->mutable_g() = sub;
  auto* fs_ = attr("floats", pb::AttributeProto::FLOATS);
  fs_->add_floats(0.25f);
  fs_->add_floats(-1.0f);
  auto* is = attr("ints", pb::AttributeProto::INTS);
  for (int64_t v : {1, 2, 3}) is->add_ints(v);
  auto* ss = attr("strings", pb::AttributeProto::STRINGS);
  ss->add_strings("a");
  ss->add_strings("b");
  auto* ts = attr("tensors", pb::AttributeProto::TENSORS);
  *ts->add_tensors() = float_tensor("t0", {1}, {3});
  *ts->add_tensors() = float_tensor("t1", {}, {4});
  auto* gs = attr("graphs", pb::AttributeProto::GRAPHS);
  *gs->add_graphs() = sub;
  *gs->add_graphs() = sub;
  auto* ref = n->add_attribute();
  ref->set_name("alpha");
  ref->set_ref_attr_name("outer_alpha");
  ref->set_type(pb::AttributeProto::FLOAT);

  const Model model = parse(m);
  EXPECT_EQ(model.ir_version, 8);
  EXPECT_EQ(model.producer_name, "ember-test");
  EXPECT_EQ(model.producer_version, "1.0");
  EXPECT_EQ(model.doc, "a model");
  EXPECT_EQ(model.opsets, (std::map<std::string, int64_t>{{"", 17}, {"com.microsoft", 1}}));
  EXPECT_EQ(model.opset(""), 17);
  EXPECT_EQ(model.opset("ai.onnx"), 17);
  EXPECT_EQ(model.opset("com.microsoft"), 1);
  EXPECT_EQ(model.opset("ai.onnx.ml"), 0);
  EXPECT_TRUE(model.path.empty());

  const Graph& gr = model.graph;
  EXPECT_EQ(gr.name, "g");
  ASSERT_EQ(gr.inputs.size(), 3u);
  EXPECT_EQ(gr.inputs[0].name, "x");
  EXPECT_EQ(gr.inputs[0].kind, ValueInfo::Kind::Tensor);
  EXPECT_EQ(gr.inputs[0].elem, (ElemType{1, DType::F32}));
  ASSERT_TRUE(gr.inputs[0].shape);
  EXPECT_EQ(*gr.inputs[0].shape, (std::vector<Dim>{Dim{std::nullopt, "batch"}, Dim{3, ""}}));
  EXPECT_FALSE((*gr.inputs[0].shape)[0].known());
  EXPECT_EQ(*gr.inputs[1].shape, (std::vector<Dim>{Dim{}, Dim{}}));
  EXPECT_EQ(gr.inputs[1].elem, (ElemType{7, DType::I64}));
  EXPECT_EQ(gr.inputs[2].kind, ValueInfo::Kind::Sequence);
  EXPECT_EQ(gr.inputs[2].elem, (ElemType{11, DType::F64}));
  EXPECT_FALSE(gr.outputs[0].shape.has_value());
  ASSERT_EQ(gr.value_info.size(), 1u);
  EXPECT_EQ(gr.value_info[0].name, "h");

  ASSERT_EQ(gr.nodes.size(), 2u);
  EXPECT_EQ(gr.nodes[0].label(0), "Relu \"relu\"");
  const Node& c = gr.nodes[1];
  EXPECT_EQ(c.label(1), "Custom #1");
  EXPECT_EQ(c.domain, "");  // "ai.onnx" is the default domain
  EXPECT_EQ(c.inputs, (std::vector<std::string>{"h", ""}));
  EXPECT_EQ(c.outputs, (std::vector<std::string>{"y", ""}));
  ASSERT_EQ(c.attributes.size(), 11u);
  using T = Attribute::Type;
  EXPECT_EQ(c.attr("f")->type, T::Float);
  EXPECT_EQ(c.attr("f")->f, 1.5);
  EXPECT_EQ(c.attr("i")->type, T::Int);
  EXPECT_EQ(c.attr("i")->i, -7);
  EXPECT_EQ(c.attr("s")->type, T::String);
  EXPECT_EQ(c.attr("s")->s, "text");
  EXPECT_EQ(c.attr("t")->type, T::Tensor);
  ASSERT_EQ(c.attr("t")->tensors.size(), 1u);
  EXPECT_EQ(c.attr("t")->tensors[0].to_vec<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(c.attr("g")->type, T::Graph);
  ASSERT_EQ(c.attr("g")->graphs.size(), 1u);
  EXPECT_EQ(c.attr("g")->graphs[0]->name, "body");
  ASSERT_EQ(c.attr("g")->graphs[0]->nodes.size(), 1u);
  EXPECT_EQ(c.attr("g")->graphs[0]->nodes[0].label(0), "Identity \"inner\"");
  EXPECT_EQ(c.attr("floats")->type, T::Floats);
  EXPECT_EQ(c.attr("floats")->floats, (std::vector<double>{0.25, -1.0}));
  EXPECT_EQ(c.attr("ints")->type, T::Ints);
  EXPECT_EQ(c.attr("ints")->ints, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(c.attr("strings")->type, T::Strings);
  EXPECT_EQ(c.attr("strings")->strings, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.attr("tensors")->type, T::Tensors);
  ASSERT_EQ(c.attr("tensors")->tensors.size(), 2u);
  EXPECT_EQ(c.attr("tensors")->tensors[1].shape(), Shape{});
  EXPECT_EQ(c.attr("tensors")->tensors[1].to_vec<float>(), (std::vector<float>{4}));
  EXPECT_EQ(c.attr("graphs")->type, T::Graphs);
  EXPECT_EQ(c.attr("graphs")->graphs.size(), 2u);
  EXPECT_EQ(c.attr("alpha")->ref_attr_name, "outer_alpha");
  EXPECT_EQ(c.attr("missing"), nullptr);
}

TEST(OnnxParse, ModelsWithoutOpsetsOrGraph) {
  pb::ModelProto m = empty_model();
  m.clear_opset_import();
  EXPECT_EQ(parse_error(m), "[onnx] m: the model imports no opset");
  m.set_ir_version(2);  // before IR 3, no opset import means opset 1
  EXPECT_EQ(parse(m).opset(""), 1);
  EXPECT_EQ(parse_error(pb::ModelProto()), "[onnx] m: the model has no graph");
}

struct DtypeCase {
  int32_t onnx;
  DType dtype;
  std::vector<double> values;
};

TEST(OnnxParse, InitializersOfEveryDtypeFromRawDataAndTypedFields) {
  const std::vector<DtypeCase> cases = {
      {pb::TensorProto::FLOAT, DType::F32, {1.5, -2, 3, 0}},
      {pb::TensorProto::DOUBLE, DType::F64, {1.25, -2, 1e300, 0}},
      {pb::TensorProto::INT64, DType::I64, {1, -2, 4e15, 0}},
      {pb::TensorProto::INT32, DType::I32, {1, -2, 2e9, 0}},
      {pb::TensorProto::INT16, DType::I16, {1, -2, 30000, 0}},
      {pb::TensorProto::INT8, DType::I8, {1, -2, 127, -128}},
      {pb::TensorProto::UINT8, DType::U8, {1, 2, 255, 0}},
      {pb::TensorProto::BOOL, DType::Bool, {1, 0, 1, 0}},
      {pb::TensorProto::FLOAT16, DType::F16, {1.5, -2, 65504, 0}},
      {pb::TensorProto::BFLOAT16, DType::BF16, {1.5, -2, 3e38, 0}},
  };
  pb::ModelProto m = empty_model();
  pb::GraphProto* g = m.mutable_graph();
  std::vector<TensorData> expect;
  for (const DtypeCase& c : cases) {
    TensorData want = TensorData::from<double>(c.values, Shape{2, 2}).convert(c.dtype);
    expect.push_back(want);
    const std::string nm(onnx_type_name(c.onnx));
    pb::TensorProto raw;
    raw.set_name(nm + "_raw");
    raw.set_data_type(c.onnx);
    raw.add_dims(2);
    raw.add_dims(2);
    raw.set_raw_data(reinterpret_cast<const char*>(want.bytes().data()), want.bytes().size());
    pb::TensorProto typed = raw;
    typed.clear_raw_data();
    typed.set_name(nm + "_typed");
    const auto n = static_cast<size_t>(want.numel());
    switch (c.dtype) {
      case DType::F32:
        for (float v : want.to_vec<float>()) typed.add_float_data(v);
        break;
      case DType::F64:
        for (double v : want.to_vec<double>()) typed.add_double_data(v);
        break;
      case DType::I64:
        for (int64_t v : want.to_vec<int64_t>()) typed.add_int64_data(v);
        break;
      case DType::F16:
      case DType::BF16: {  // int32_data holds the bit patterns
        std::vector<uint16_t> bits(n);
        std::memcpy(bits.data(), want.bytes().data(), 2 * n);
        for (uint16_t b : bits) typed.add_int32_data(b);
        break;
      }
      default:
        for (int64_t v : want.to_vec<int64_t>()) typed.add_int32_data(static_cast<int32_t>(v));
    }
    *g->add_initializer() = raw;
    *g->add_initializer() = typed;
  }
  // An element type ember has no dtype for is kept by its number (unsupported() names it).
  pb::TensorProto str;
  str.set_name("names");
  str.set_data_type(pb::TensorProto::STRING);
  str.add_dims(1);
  str.add_string_data("x");
  *g->add_initializer() = str;
  // Empty and scalar tensors.
  *g->add_initializer() = float_tensor("empty", {0, 3}, {});
  *g->add_initializer() = float_tensor("scalar", {}, {2.5f});

  const Model model = parse(m);
  const auto& inits = model.graph.initializers;
  ASSERT_EQ(inits.size(), 2 * cases.size() + 2);
  for (size_t k = 0; k < cases.size(); ++k) {
    for (size_t j = 0; j < 2; ++j) {
      const auto& [name, d] = inits[2 * k + j];
      SCOPED_TRACE(name);
      EXPECT_EQ(name, std::string(onnx_type_name(cases[k].onnx)) + (j ? "_typed" : "_raw"));
      EXPECT_EQ(d.dtype(), cases[k].dtype);
      EXPECT_EQ(d.shape(), (Shape{2, 2}));
      ASSERT_EQ(d.bytes().size(), expect[k].bytes().size());
      EXPECT_EQ(std::memcmp(d.bytes().data(), expect[k].bytes().data(), d.bytes().size()), 0);
    }
  }
  EXPECT_EQ(inits[2 * cases.size()].second.shape(), (Shape{0, 3}));
  EXPECT_EQ(inits[2 * cases.size() + 1].second.shape(), Shape{});
  EXPECT_EQ(inits[2 * cases.size() + 1].second.to_vec<float>(), (std::vector<float>{2.5f}));
  ASSERT_EQ(model.graph.unsupported_initializers.size(), 1u);
  EXPECT_EQ(model.graph.unsupported_initializers[0].name, "names");
  EXPECT_EQ(model.graph.unsupported_initializers[0].data_type, pb::TensorProto::STRING);
}

TEST(OnnxParse, ParseTensorReadsTheBackendTestsTensorFiles) {
  pb::TensorProto t = float_tensor("x", {2}, {1, 2});
  EXPECT_EQ(parse_tensor(bytes_of(t), "t").to_vec<float>(), (std::vector<float>{1, 2}));
  t.set_data_type(pb::TensorProto::UINT32);
  EXPECT_EQ(error_of([&] { parse_tensor(bytes_of(t), "t"); }),
            "[onnx] t: a UINT32 tensor (no ember dtype for it)");
  // Unnamed: the values are the last field, so every proper prefix lacks some of them.
  auto b = bytes_of(float_tensor("", {2}, {1, 2}));
  EXPECT_EQ(parse_tensor(b, "t").numel(), 2);
  for (size_t cut = 0; cut < b.size(); ++cut) {
    SCOPED_TRACE(cut);
    EXPECT_EQ(error_of([&] { parse_tensor(std::span(b).first(cut), "t"); }).rfind("[onnx] t: ", 0),
              0u);
  }
}

// ---- external data --------------------------------------------------------------------------

class OnnxExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ember_onnx_ext_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "sub");
    // 8 bytes of header, then the 6 floats of w.
    std::vector<float> w = {1, 2, 3, 4, 5, 6};
    std::ofstream f(dir_ / "w.bin", std::ios::binary);
    f.write("HEADER..", 8);
    f.write(reinterpret_cast<const char*>(w.data()), 24);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A model whose initializer w [2, 3] FLOAT is external, with these key/value pairs.
  pb::ModelProto model(std::vector<std::pair<std::string, std::string>> kv) const {
    pb::ModelProto m = empty_model();
    pb::TensorProto* t = m.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(pb::TensorProto::FLOAT);
    t->add_dims(2);
    t->add_dims(3);
    t->set_data_location(pb::TensorProto::EXTERNAL);
    for (const auto& [k, v] : kv) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    return m;
  }
  ParseOptions in_dir() const {
    ParseOptions o;
    o.external_dir = dir_;
    return o;
  }
  std::string error(std::vector<std::pair<std::string, std::string>> kv) const {
    return parse_error(model(std::move(kv)), in_dir());
  }

  fs::path dir_;
};

TEST_F(OnnxExternalData, LoadsATensorFromASideFile) {
  const pb::ModelProto m = model({{"location", "w.bin"}, {"offset", "8"}, {"length", "24"}});
  {
    std::ofstream f(dir_ / "model.onnx", std::ios::binary);
    std::string s;
    m.SerializeToString(&s);
    f << s;
  }
  const Model loaded = load_model(dir_ / "model.onnx");
  EXPECT_EQ(loaded.path, dir_ / "model.onnx");
  ASSERT_EQ(loaded.graph.initializers.size(), 1u);
  EXPECT_EQ(loaded.graph.initializers[0].second.shape(), (Shape{2, 3}));
  EXPECT_EQ(loaded.graph.initializers[0].second.to_vec<float>(),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Without a length: the rest of the file; in a subfolder through "..": still inside.
  const Model rest = parse(model({{"location", "sub/../w.bin"}, {"offset", "8"}}), in_dir());
  EXPECT_EQ(rest.graph.initializers[0].second.to_vec<float>()[5], 6.0f);
}

TEST_F(OnnxExternalData, RangesOutsideTheFileNameTheTensor) {
  EXPECT_EQ(error({{"location", "w.bin"}, {"offset", "100"}, {"length", "24"}}),
            "[onnx] m: tensor \"w\": external data offset 100 lies past the end of w.bin (32 "
            "bytes)");
  EXPECT_EQ(error({{"location", "w.bin"}, {"offset", "32"}, {"length", "24"}}),
            "[onnx] m: tensor \"w\": external data range [32, +24) lies outside w.bin (32 bytes)");
  EXPECT_EQ(error({{"location", "w.bin"}, {"offset", "16"}, {"length", "24"}}),
            "[onnx] m: tensor \"w\": external data range [16, +24) lies outside w.bin (32 bytes)");
  EXPECT_EQ(error({{"location", "w.bin"}, {"offset", "33"}}),
            "[onnx] m: tensor \"w\": external data offset 33 lies past the end of w.bin (32 "
            "bytes)");
  EXPECT_EQ(error({{"location", "w.bin"}, {"offset", "8"}, {"length", "16"}}),
            "[onnx] m: tensor \"w\": external data holds 16 bytes, its shape and type need 24");
  EXPECT_EQ(error({{"location", "w.bin"}}),  // all 32 bytes
            "[onnx] m: tensor \"w\": external data holds 32 bytes, its shape and type need 24");
  EXPECT_EQ(error({{"location", "w.bin"}, {"offset", "-8"}}),
            "[onnx] m: tensor \"w\": external data offset \"-8\" is not a byte count");
  EXPECT_EQ(error({{"location", "w.bin"}, {"length", "24 "}}),
            "[onnx] m: tensor \"w\": external data length \"24 \" is not a byte count");
  EXPECT_EQ(error({{"location", "w.bin"}, {"length", "99999999999999999999"}}),
            "[onnx] m: tensor \"w\": external data length \"99999999999999999999\" is not a "
            "byte count");
}

TEST_F(OnnxExternalData, LocationsOutsideTheFolderAreRefused) {
  for (const std::string& loc :
       std::vector<std::string>{"../w.bin", "sub/../../w.bin", "..", (dir_ / "w.bin").string()}) {
    SCOPED_TRACE(loc);
    EXPECT_EQ(
        error({{"location", loc}, {"offset", "8"}}),
        "[onnx] m: tensor \"w\": external data location \"" + loc + "\" leaves the model's folder");
  }
  EXPECT_EQ(error({{"offset", "8"}}), "[onnx] m: tensor \"w\": external data without a location");
  EXPECT_NE(error({{"location", "missing.bin"}}).find("tensor \"w\": cannot read external data"),
            std::string::npos);
  EXPECT_NE(error({{"location", "sub"}}).find("tensor \"w\": "), std::string::npos);
  // Parsed from memory: there is no folder to read from.
  EXPECT_EQ(parse_error(model({{"location", "w.bin"}})),
            "[onnx] m: tensor \"w\": external data \"w.bin\" but the model was parsed from "
            "memory (no folder to read it from)");
}

// ---- files that lie -------------------------------------------------------------------------

TEST(OnnxParse, EveryTruncationOfAModelIsAValueError) {
  const auto bytes = bytes_of(add_relu_model());
  ASSERT_GT(bytes.size(), 100u);
  EXPECT_EQ(parse_model(bytes, "m").graph.nodes.size(), 2u);
  // Fields are written in field order and the opset import (8) follows the graph (7): every
  // proper prefix is malformed, lacks the graph or lacks the opset.
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    SCOPED_TRACE(cut);
    const std::string msg = error_of([&] { parse_model(std::span(bytes).first(cut), "m"); });
    EXPECT_EQ(msg.rfind("[onnx] m: ", 0), 0u) << msg;
  }
}

TEST(OnnxParse, CorruptedBytesParseOrRaiseAValueError) {
  const auto good = bytes_of(add_relu_model());
  int parsed = 0, rejected = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (std::byte flip : {std::byte{0xff}, std::byte{0x80}, std::byte{0x01}}) {
      auto bytes = good;
      bytes[i] ^= flip;
      try {
        Model m = parse_model(bytes, "m");
        (void)unsupported(m);
        ++parsed;
      } catch (const ValueError&) {
        ++rejected;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "byte " << i << ": " << e.what();
      }
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

TEST(OnnxParse, TensorsWhoseSizesLieNameTheTensor) {
  auto with = [](pb::TensorProto t) {
    pb::ModelProto m = empty_model();
    *m.mutable_graph()->add_initializer() = std::move(t);
    return parse_error(m);
  };
  pb::TensorProto raw = float_tensor("w", {2, 3}, {});
  raw.set_raw_data(std::string(20, '\0'));
  EXPECT_EQ(with(raw),
            "[onnx] m: tensor \"w\" FLOAT [2, 3] needs 24 bytes of raw data, the file "
            "has 20");
  raw.set_raw_data(std::string(28, '\0'));
  EXPECT_EQ(with(raw),
            "[onnx] m: tensor \"w\" FLOAT [2, 3] needs 24 bytes of raw data, the file "
            "has 28");
  EXPECT_EQ(with(float_tensor("w", {2, -1}, {})), "[onnx] m: tensor \"w\" has a negative dim -1");
  EXPECT_EQ(with(float_tensor("w", {int64_t{1} << 40, int64_t{1} << 40}, {})),
            "[onnx] m: tensor \"w\" has dims whose product overflows int64");
  EXPECT_EQ(with(float_tensor("w", {0, int64_t{1} << 40, int64_t{1} << 40}, {})),
            "[onnx] m: tensor \"w\" has dims whose product overflows int64");
  // Empty, but its other dims' bytes do not fit int64 (found by the fuzzer).
  EXPECT_EQ(with(float_tensor("w", {0, int64_t{1} << 61}, {})),
            "[onnx] m: tensor \"w\" [0, 2305843009213693952] has more bytes than int64 holds");
  EXPECT_EQ(with(float_tensor("w", {int64_t{1} << 31, int64_t{1} << 31}, {})),
            "[onnx] m: tensor \"w\" [2147483648, 2147483648] has more bytes than int64 holds");
  EXPECT_EQ(with(float_tensor("w", {int64_t{1} << 40}, {})),
            "[onnx] m: tensor \"w\" takes the model's tensors past the limit of 17179869184 bytes");
  EXPECT_EQ(with(float_tensor("w", {2, 3}, {1, 2})),
            "[onnx] m: tensor \"w\" FLOAT [2, 3] needs 6 values, the file has 2");
  EXPECT_EQ(with(float_tensor("w", {2}, {1, 2, 3})),
            "[onnx] m: tensor \"w\" FLOAT [2] needs 2 values, the file has 3");
  pb::TensorProto i64 = int64_tensor("idx", {1, 2});
  i64.set_data_type(pb::TensorProto::INT32);  // int32 values belong in int32_data
  EXPECT_EQ(with(i64), "[onnx] m: tensor \"idx\" INT32 [2] needs 2 values, the file has 0");
  pb::TensorProto seg = float_tensor("w", {1}, {1});
  seg.mutable_segment()->set_begin(0);
  EXPECT_EQ(with(seg), "[onnx] m: tensor \"w\" is segmented (not supported)");
  EXPECT_EQ(with(float_tensor("", {1}, {1})), "[onnx] m: an initializer has no name");

  // Inside an attribute too.
  pb::ModelProto m = empty_model();
  auto* a = add_node(m.mutable_graph(), "Constant", {}, {"c"}, "k")->add_attribute();
  a->set_name("value");
  a->set_type(pb::AttributeProto::TENSOR);
  *a->mutable_t() = float_tensor("cv", {3}, {1});
  EXPECT_EQ(parse_error(m), "[onnx] m: tensor \"cv\" FLOAT [3] needs 3 values, the file has 1");
  a->mutable_t()->set_data_type(pb::TensorProto::STRING);
  EXPECT_EQ(parse_error(m), "[onnx] m: attribute \"value\" holds a STRING tensor (no ember dtype)");
}

TEST(OnnxParse, TheTensorByteLimitCountsEveryTensor) {
  pb::ModelProto m = empty_model();
  *m.mutable_graph()->add_initializer() = float_tensor("a", {6}, {1, 2, 3, 4, 5, 6});
  *m.mutable_graph()->add_initializer() = float_tensor("b", {2, 3}, {1, 2, 3, 4, 5, 6});
  ParseOptions o;
  o.max_tensor_bytes = 48;
  EXPECT_EQ(parse(m, o).graph.initializers.size(), 2u);  // exactly at the limit
  o.max_tensor_bytes = 47;
  EXPECT_EQ(parse_error(m, o),
            "[onnx] m: tensor \"b\" takes the model's tensors past the limit of 47 bytes");
  // Attribute tensors count too, subgraphs included.
  o.max_tensor_bytes = 48;
  pb::GraphProto sub;
  auto* a = add_node(&sub, "Constant", {}, {"c"}, "k")->add_attribute();
  a->set_name("value");
  a->set_type(pb::AttributeProto::TENSOR);
  *a->mutable_t() = float_tensor("c", {1}, {1});
  auto* g = add_node(m.mutable_graph(), "If", {"cond"}, {"y"}, "if")->add_attribute();
  g->set_name("then_branch");
  g->set_type(pb::AttributeProto::GRAPH);
  *g->mutable_g() = sub;
  // (nodes are read before initializers: "c" counts first, and "b" no longer fits)
  EXPECT_EQ(parse_error(m, o),
            "[onnx] m: tensor \"b\" takes the model's tensors past the limit of 48 bytes");
}

TEST(OnnxParse, SubgraphsNestAtMost32Deep) {
  auto nested = [](int depth) {
    pb::GraphProto g;
    for (int k = 0; k < depth; ++k) {
      pb::GraphProto outer;
      auto* a = add_node(&outer, "If", {"c"}, {"y"})->add_attribute();
      a->set_name("then_branch");
      a->set_type(pb::AttributeProto::GRAPH);
      *a->mutable_g() = g;
      g = outer;
    }
    pb::ModelProto m = empty_model();
    *m.mutable_graph() = g;
    return m;
  };
  EXPECT_NO_THROW(parse(nested(32)));
  EXPECT_EQ(parse_error(nested(34)), "[onnx] m: subgraphs nest deeper than 32 levels");
}

}  // namespace
}  // namespace ember::onnx
