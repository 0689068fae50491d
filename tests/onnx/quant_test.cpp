// MatMulInteger and QLinearMatMul on models built with the protobuf API, against the products of
// the operands widened to 64-bit integers with their zero points subtracted: every pairing of u8
// and i8, per-row and per-column zero points and scalar ones, batched and 1-d operands, sizes past
// the CPU kernel's tiles. The node suite has one small MatMulInteger case and two QLinearMatMul.
#include <algorithm>
#include <cmath>
#include <random>

#include "ember/onnx/passes.h"
#include "int8_operands.h"

namespace ember::onnx {
namespace {

using namespace ember::onnx::test;
namespace pb = ::onnx;

// y = MatMulInteger(a, b, za, zb) with every input an initializer; `za`, `zb` empty for none.
std::vector<int32_t> run(const Operand& a, const Operand& b, const Operand* za, const Operand* zb,
                         Shape* shape) {
  pb::ModelProto m = empty_model();
  pb::GraphProto* g = m.mutable_graph();
  add_value(g->mutable_output(), "y", pb::TensorProto::INT32, std::nullopt);
  *g->add_initializer() = bytes_tensor("a", a);
  *g->add_initializer() = bytes_tensor("b", b);
  std::vector<std::string> in{"a", "b"};
  if (za) *g->add_initializer() = bytes_tensor("za", *za);
  if (zb) *g->add_initializer() = bytes_tensor("zb", *zb);
  in.push_back(za ? "za" : "");
  if (zb) in.push_back("zb");
  if (!za && !zb) in.pop_back();
  add_node(g, "MatMulInteger", in, {"y"}, "mm");
  Session s(parse(m));
  auto out = s.run({});
  *shape = out.at(0).data().shape();
  return out.at(0).data().to_vec<int32_t>();
}

// a [..., M, K] (or [K]) times b [K, N] (or [K]), zero points per row of a / column of b (1-d)
// or per tensor (one value)
std::vector<int32_t> expected(const Operand& a, const Operand& b, const Operand* za,
                              const Operand* zb) {
  const bool va = a.dims.size() == 1, vb = b.dims.size() == 1;
  const int64_t k = a.dims.back(), n = vb ? 1 : b.dims.back();
  const int64_t m = va ? 1 : a.dims[a.dims.size() - 2];
  const int64_t batches = int64_t(a.values.size()) / (m * k);
  std::vector<int32_t> y;
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t zai = !za                      ? 0
                            : za->values.size() == 1 ? za->values[0]
                                                     : za->values[size_t(i)];
        const int64_t zbj = !zb                      ? 0
                            : zb->values.size() == 1 ? zb->values[0]
                                                     : zb->values[size_t(j)];
        int64_t s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += (a.values[size_t((bi * m + i) * k + p)] - zai) * (b.values[size_t(p * n + j)] - zbj);
        y.push_back(static_cast<int32_t>(s));
      }
  return y;
}

TEST(OnnxQuant, MatMulIntegerMatchesWidenedProductsWithZeroPoints) {
  std::mt19937 g(5);
  struct Case {
    std::vector<int64_t> a, b;
    bool a_signed, b_signed;
    int zero_points;  // 0: none, 1: per row / column, 2: one each, 3: b's only
  };
  const Case cases[] = {
      {{2, 5, 37}, {37, 19}, false, true, 1},  {{7, 70}, {70, 33}, true, false, 2},
      {{13, 131}, {131, 45}, false, false, 1}, {{6, 9}, {9, 40}, true, true, 3},
      {{37}, {37, 21}, false, true, 2},        {{4, 9}, {9}, true, true, 0},
      {{25, 64}, {64, 32}, false, true, 0},
  };
  for (const Case& c : cases) {
    const Operand a = random_operand(c.a, c.a_signed, g), b = random_operand(c.b, c.b_signed, g);
    const int64_t rows = c.a.size() == 1 ? 1 : c.a[c.a.size() - 2];
    const int64_t cols = c.b.size() == 1 ? 1 : c.b.back();
    std::optional<Operand> za, zb;
    if (c.zero_points == 1) {
      za = random_operand({rows}, c.a_signed, g);
      zb = random_operand({cols}, c.b_signed, g);
    } else if (c.zero_points == 2) {
      za = random_operand({}, c.a_signed, g);
      zb = random_operand({}, c.b_signed, g);
    } else if (c.zero_points == 3) {
      zb = random_operand({cols}, c.b_signed, g);
    }
    Shape shape;
    const auto got = run(a, b, za ? &*za : nullptr, zb ? &*zb : nullptr, &shape);
    std::vector<int64_t> want_dims(c.a.begin(), c.a.end() - 1);
    if (c.b.size() > 1) want_dims.push_back(c.b.back());
    EXPECT_EQ(shape, Shape(want_dims));
    EXPECT_EQ(got, expected(a, b, za ? &*za : nullptr, zb ? &*zb : nullptr))
        << "a " << Shape(c.a).to_string() << (c.a_signed ? " i8" : " u8") << ", b "
        << Shape(c.b).to_string() << (c.b_signed ? " i8" : " u8") << ", zero points "
        << c.zero_points;
  }
}

// MatMulInteger of a graph input by a constant weight with the input's zero point: the passes
// make it ember.MatMulInteger with the weight's column sums made once at load time; with and
// without the passes the outputs are the widened products.
TEST(OnnxQuant, AConstantWeightsColumnSumsAreMadeOnce) {
  std::mt19937 g(13);
  for (const bool b_signed : {true, false}) {
    const Operand a = random_operand({6, 37}, false, g), b = random_operand({37, 45}, b_signed, g);
    const Operand za = random_operand({}, false, g), zb = random_operand({45}, b_signed, g);
    pb::ModelProto m = empty_model();
    pb::GraphProto* gr = m.mutable_graph();
    add_value(gr->mutable_input(), "a", pb::TensorProto::UINT8,
              std::vector<DimSpec>{std::string("N"), int64_t{37}});
    add_value(gr->mutable_output(), "y", pb::TensorProto::INT32, std::nullopt);
    *gr->add_initializer() = bytes_tensor("b", b);
    *gr->add_initializer() = bytes_tensor("za", za);
    *gr->add_initializer() = bytes_tensor("zb", zb);
    add_node(gr, "MatMulInteger", {"a", "b", "za", "zb"}, {"y"}, "mm");
    Model optimized = parse(m);
    const PassReport r = optimize(optimized);
    EXPECT_EQ(r.int_sums, 1) << r.to_string();
    ASSERT_EQ(optimized.graph.nodes.size(), 1u);
    EXPECT_EQ(optimized.graph.nodes[0].domain, "ember");
    EXPECT_EQ(optimized.graph.nodes[0].inputs.size(), 5u);
    std::vector<uint8_t> bytes;
    for (int64_t v : a.values) bytes.push_back(static_cast<uint8_t>(v));
    const Value in = Value::tensor(TensorData::from<uint8_t>(bytes, Shape{6, 37}), Device::cpu());
    const auto want = expected(a, b, &za, &zb);
    for (const bool passes : {true, false}) {
      SessionOptions o;
      o.optimize = passes;
      Session s(parse(m), Device::cpu(), o);
      EXPECT_EQ(s.run({in}).at(0).data().to_vec<int32_t>(), want)
          << (passes ? "with" : "without") << " the passes, b " << (b_signed ? "i8" : "u8");
    }
  }
}

// QLinearMatMul against ONNX's reference arithmetic: the integer sums of (a - za)(b - zb), times
// a_scale * b_scale / y_scale computed in f32, in f64, rounded half to even, plus y's zero point,
// saturated; per-row and per-column scales and zero points, and scalar ones.
TEST(OnnxQuant, QLinearMatMulMatchesTheReferenceArithmetic) {
  std::mt19937 g(9);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (const bool per_axis : {false, true})
    for (const bool b_signed : {false, true}) {
      const int64_t m = 19, k = 45, n = 37;
      const Operand a = random_operand({m, k}, false, g), b = random_operand({k, n}, b_signed, g);
      const Operand za =
          random_operand(per_axis ? std::vector<int64_t>{m} : std::vector<int64_t>{}, false, g);
      const Operand zb =
          random_operand(per_axis ? std::vector<int64_t>{n} : std::vector<int64_t>{}, b_signed, g);
      const Operand zy = random_operand({}, false, g);
      std::vector<float> sa(size_t(per_axis ? m : 1)), sb(size_t(per_axis ? n : 1));
      for (float& v : sa) v = scale(g);
      for (float& v : sb) v = scale(g);
      const float sy = 0.5f;
      pb::ModelProto model = empty_model();
      pb::GraphProto* gr = model.mutable_graph();
      add_value(gr->mutable_output(), "y", pb::TensorProto::UINT8, std::nullopt);
      *gr->add_initializer() = bytes_tensor("a", a);
      *gr->add_initializer() = scale_tensor("sa", sa, per_axis);
      *gr->add_initializer() = bytes_tensor("za", za);
      *gr->add_initializer() = bytes_tensor("b", b);
      *gr->add_initializer() = scale_tensor("sb", sb, per_axis);
      *gr->add_initializer() = bytes_tensor("zb", zb);
      *gr->add_initializer() = scale_tensor("sy", {sy}, false);
      *gr->add_initializer() = bytes_tensor("zy", zy);
      add_node(gr, "QLinearMatMul", {"a", "sa", "za", "b", "sb", "zb", "sy", "zy"}, {"y"}, "q");
      Session s(parse(model));
      const auto got = s.run({}).at(0).data().to_vec<uint8_t>();
      ASSERT_EQ(got.size(), size_t(m * n));
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const int64_t zai = za.values[per_axis ? size_t(i) : 0];
          const int64_t zbj = zb.values[per_axis ? size_t(j) : 0];
          int64_t acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += (a.values[size_t(i * k + p)] - zai) * (b.values[size_t(p * n + j)] - zbj);
          const float f = sa[per_axis ? size_t(i) : 0] * sb[per_axis ? size_t(j) : 0] / sy;
          const double q = std::nearbyint(double(acc) * double(f)) + double(zy.values[0]);
          const auto want = static_cast<uint8_t>(std::clamp(q, 0.0, 255.0));
          EXPECT_EQ(got[size_t(i * n + j)], want)
              << i << "," << j << (per_axis ? " per axis" : " per tensor")
              << (b_signed ? " i8 b" : "");
        }
    }
}

}  // namespace
}  // namespace ember::onnx
