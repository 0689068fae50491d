// Test helpers for the quantized ONNX ops (quant_test.cpp, quant_conv_test.cpp): 8-bit operands
// kept as numbers beside the tensors that carry them into a model.
#pragma once
#include <random>
#include <string>
#include <vector>

#include "model_builder.h"

namespace ember::onnx::test {

struct Operand {
  std::vector<int64_t> dims;
  bool is_signed;
  std::vector<int64_t> values;  // as numbers
};

inline Operand random_operand(std::vector<int64_t> dims, bool is_signed, std::mt19937& g) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::uniform_int_distribution<int> u(is_signed ? -128 : 0, is_signed ? 127 : 255);
  Operand o{std::move(dims), is_signed, std::vector<int64_t>(size_t(n))};
  for (int64_t& v : o.values) v = u(g);
  return o;
}

inline pb::TensorProto bytes_tensor(const std::string& name, const Operand& o) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(o.is_signed ? pb::TensorProto::INT8 : pb::TensorProto::UINT8);
  for (int64_t d : o.dims) t.add_dims(d);
  std::string raw;
  for (int64_t v : o.values) raw.push_back(static_cast<char>(static_cast<uint8_t>(v)));
  t.set_raw_data(raw);
  return t;
}

inline pb::TensorProto scale_tensor(const std::string& name, const std::vector<float>& v,
                                    bool vector) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(pb::TensorProto::FLOAT);
  if (vector) t.add_dims(static_cast<int64_t>(v.size()));
  for (float f : v) t.add_float_data(f);
  return t;
}

}  // namespace ember::onnx::test
