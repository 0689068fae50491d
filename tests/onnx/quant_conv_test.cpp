// ConvInteger and QLinearConv on models built with the protobuf API, against the sums of the
// operands widened to 64-bit integers with their zero points subtracted (ONNX pads the centred
// input with zeros): u8 and i8 inputs and weights, per-tensor and per-channel zero points,
// asymmetric padding, strides, dilations, groups and a 1x1 window, sizes past the CPU kernel's
// tiles. The node suite has three small ConvInteger cases and one QLinearConv.
#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "int8_operands.h"

namespace ember::onnx {
namespace {

using namespace ember::onnx::test;
namespace pb = ::onnx;

struct ConvCase {
  int64_t n, c, h, w, m, kh, kw, group;
  std::array<int64_t, 2> stride, dilation;
  std::array<int64_t, 4> pads;  // ONNX's order: top, left, bottom, right
  bool x_signed, w_signed;
  int zero_points;  // 0: none, 1: x's and one per output channel, 2: one each, 3: w's only
};

std::string describe(const ConvCase& c) {
  return std::to_string(c.n) + "x" + std::to_string(c.c) + "x" + std::to_string(c.h) + "x" +
         std::to_string(c.w) + " -> " + std::to_string(c.m) + ", " + std::to_string(c.kh) + "x" +
         std::to_string(c.kw) + " group " + std::to_string(c.group) + (c.x_signed ? " i8" : " u8") +
         (c.w_signed ? " x i8" : " x u8") + ", zero points " + std::to_string(c.zero_points);
}

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t before, int64_t after) {
  return (in + before + after - (d * (k - 1) + 1)) / s + 1;
}

// The sums over each window of (x - zx)(w - zw[o]), the padding contributing nothing.
std::vector<int64_t> centred_sums(const ConvCase& c, const Operand& x, const Operand& w, int64_t zx,
                                  const std::vector<int64_t>& zw) {
  const int64_t oh = out_size(c.h, c.kh, c.stride[0], c.dilation[0], c.pads[0], c.pads[2]);
  const int64_t ow = out_size(c.w, c.kw, c.stride[1], c.dilation[1], c.pads[1], c.pads[3]);
  const int64_t cg = c.c / c.group, mg = c.m / c.group;
  std::vector<int64_t> y;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t o = 0; o < c.m; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t z = zw.size() == 1 ? zw[0] : zw[size_t(o)];
          int64_t s = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < c.kh; ++a)
              for (int64_t b = 0; b < c.kw; ++b) {
                const int64_t r = i * c.stride[0] - c.pads[0] + a * c.dilation[0];
                const int64_t q = j * c.stride[1] - c.pads[1] + b * c.dilation[1];
                if (r < 0 || r >= c.h || q < 0 || q >= c.w) continue;
                const int64_t ch = o / mg * cg + ci;
                const int64_t xv = x.values[size_t(((n * c.c + ch) * c.h + r) * c.w + q)];
                const int64_t wv = w.values[size_t(((o * cg + ci) * c.kh + a) * c.kw + b)];
                s += (xv - zx) * (wv - z);
              }
          y.push_back(s);
        }
  return y;
}

void ints_attr(pb::NodeProto* node, const std::string& name, std::vector<int64_t> v) {
  pb::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INTS);
  for (int64_t i : v) a->add_ints(i);
}

void window_attrs(pb::NodeProto* node, const ConvCase& c) {
  ints_attr(node, "strides", {c.stride[0], c.stride[1]});
  ints_attr(node, "dilations", {c.dilation[0], c.dilation[1]});
  ints_attr(node, "pads", {c.pads[0], c.pads[1], c.pads[2], c.pads[3]});
  pb::AttributeProto* g = node->add_attribute();
  g->set_name("group");
  g->set_type(pb::AttributeProto::INT);
  g->set_i(c.group);
}

struct ZeroPoints {
  std::optional<Operand> x, w;
  int64_t zx() const { return x ? x->values[0] : 0; }
  std::vector<int64_t> zw() const { return w ? w->values : std::vector<int64_t>{0}; }
};

ZeroPoints zero_points(const ConvCase& c, std::mt19937& g) {
  ZeroPoints z;
  if (c.zero_points == 1 || c.zero_points == 2) z.x = random_operand({}, c.x_signed, g);
  if (c.zero_points == 1 || c.zero_points == 3) z.w = random_operand({c.m}, c.w_signed, g);
  if (c.zero_points == 2) z.w = random_operand({}, c.w_signed, g);
  return z;
}

const ConvCase kCases[] = {
    // a 1x1 window (the input read in place), deep enough for whole tiles
    {2, 64, 5, 7, 40, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, true, 1},
    // 3x3 with asymmetric padding, several images side by side
    {3, 6, 9, 8, 19, 3, 3, 1, {1, 1}, {1, 1}, {1, 0, 2, 1}, false, true, 1},
    {2, 5, 7, 7, 8, 3, 3, 1, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, true, 2},
    {2, 4, 9, 9, 6, 3, 2, 2, {1, 2}, {2, 1}, {2, 1, 2, 1}, false, false, 3},
    // depthwise with a channel multiplier, one image
    {1, 4, 6, 6, 8, 3, 3, 4, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, true, 1},
    {1, 3, 7, 5, 4, 2, 2, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, false, 0},
    // an i8 input through the direct kernel (stored with its top bit flipped)
    {2, 6, 6, 19, 14, 3, 3, 1, {1, 1}, {1, 1}, {1, 1, 0, 2}, true, true, 1},
};

// y = ConvInteger(x, w, zx, zw) with every input an initializer.
TEST(OnnxQuant, ConvIntegerMatchesCentredSums) {
  std::mt19937 g(21);
  for (const ConvCase& c : kCases) {
    const Operand x = random_operand({c.n, c.c, c.h, c.w}, c.x_signed, g);
    const Operand w = random_operand({c.m, c.c / c.group, c.kh, c.kw}, c.w_signed, g);
    const ZeroPoints z = zero_points(c, g);
    pb::ModelProto model = empty_model();
    pb::GraphProto* gr = model.mutable_graph();
    add_value(gr->mutable_output(), "y", pb::TensorProto::INT32, std::nullopt);
    *gr->add_initializer() = bytes_tensor("x", x);
    *gr->add_initializer() = bytes_tensor("w", w);
    std::vector<std::string> in{"x", "w"};
    if (z.x) *gr->add_initializer() = bytes_tensor("zx", *z.x);
    if (z.w) *gr->add_initializer() = bytes_tensor("zw", *z.w);
    if (z.x || z.w) in.push_back(z.x ? "zx" : "");
    if (z.w) in.push_back("zw");
    window_attrs(add_node(gr, "ConvInteger", in, {"y"}, "conv"), c);
    Session s(parse(model));
    const auto got = s.run({}).at(0).data().to_vec<int32_t>();
    const auto sums = centred_sums(c, x, w, z.zx(), z.zw());
    ASSERT_EQ(got.size(), sums.size()) << describe(c);
    size_t wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != static_cast<int32_t>(sums[i]);
    EXPECT_EQ(wrong, 0u) << describe(c);
  }
}

// QLinearConv against ONNX's reference arithmetic: the integer sums of (x - zx)(w - zw) plus the
// bias, times x_scale * w_scale / y_scale computed in f32, in f64, rounded half to even, plus y's
// zero point, saturated; per-channel and per-tensor weight scales and zero points.
TEST(OnnxQuant, QLinearConvMatchesTheReferenceArithmetic) {
  std::mt19937 g(17);
  std::uniform_real_distribution<float> scale(0.0005f, 0.004f);
  std::uniform_int_distribution<int> bias(-3000, 3000);
  for (const ConvCase& base : {kCases[1], kCases[4], kCases[6]})
    for (const bool per_channel : {false, true}) {
      ConvCase c = base;
      c.zero_points = per_channel ? 1 : 2;
      const Operand x = random_operand({c.n, c.c, c.h, c.w}, c.x_signed, g);
      const Operand w = random_operand({c.m, c.c / c.group, c.kh, c.kw}, c.w_signed, g);
      const ZeroPoints z = zero_points(c, g);
      const Operand zy = random_operand({}, true, g);
      std::vector<float> sx{scale(g)}, sw(size_t(per_channel ? c.m : 1));
      for (float& v : sw) v = scale(g) * 10;
      const float sy = c.x_signed ? 1.0f : 0.25f;  // (an i8 input: larger centred sums)
      std::vector<int64_t> b(size_t(c.m));
      for (int64_t& v : b) v = bias(g);
      pb::ModelProto model = empty_model();
      pb::GraphProto* gr = model.mutable_graph();
      add_value(gr->mutable_output(), "y", pb::TensorProto::INT8, std::nullopt);
      *gr->add_initializer() = bytes_tensor("x", x);
      *gr->add_initializer() = scale_tensor("sx", sx, false);
      *gr->add_initializer() = bytes_tensor("zx", *z.x);
      *gr->add_initializer() = bytes_tensor("w", w);
      *gr->add_initializer() = scale_tensor("sw", sw, per_channel);
      *gr->add_initializer() = bytes_tensor("zw", *z.w);
      *gr->add_initializer() = scale_tensor("sy", {sy}, false);
      *gr->add_initializer() = bytes_tensor("zy", zy);
      pb::TensorProto bt;
      bt.set_name("b");
      bt.set_data_type(pb::TensorProto::INT32);
      bt.add_dims(c.m);
      for (int64_t v : b) bt.add_int32_data(static_cast<int32_t>(v));
      *gr->add_initializer() = bt;
      window_attrs(add_node(gr, "QLinearConv", {"x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"},
                            {"y"}, "q"),
                   c);
      Session s(parse(model));
      const auto got = s.run({}).at(0).data().to_vec<int8_t>();
      const auto sums = centred_sums(c, x, w, z.zx(), z.zw());
      ASSERT_EQ(got.size(), sums.size()) << describe(c);
      const size_t plane = sums.size() / size_t(c.n * c.m);
      size_t wrong = 0, saturated = 0;
      for (size_t i = 0; i < sums.size(); ++i) {
        const size_t o = i / plane % size_t(c.m);
        const float f = sx[0] * sw[per_channel ? o : 0] / sy;
        const double q = std::nearbyint(double(sums[i] + b[o]) * double(f)) + double(zy.values[0]);
        const auto want = static_cast<int8_t>(std::clamp(q, -128.0, 127.0));
        saturated += q < -128 || q > 127;
        wrong += got[i] != want;
      }
      EXPECT_EQ(wrong, 0u) << describe(c) << (per_channel ? " per channel" : " per tensor");
      EXPECT_LT(saturated, sums.size() / 4) << "the scales leave too few values unsaturated";
    }
}

}  // namespace
}  // namespace ember::onnx
