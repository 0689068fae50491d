// The serializable op IR: ops (code + attributes), tensor metas and graphs of op nodes, in a
// compact little-endian binary form. Fusion records it, Remote sends it over the network,
// and Dispatch can round-trip every op through it (`Dispatch::set_ir_check(true)`).
//
//   std::vector<std::byte> bytes = ir::encode(op);
//   Op back = ir::decode_op(bytes);        // == op; throws ValueError on malformed bytes
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/ops/op.h"

namespace ember::ir {

class EMBER_API Writer {
 public:
  void u8(uint8_t v) { bytes_.push_back(std::byte{v}); }
  void u16(uint16_t v);
  void u64(uint64_t v);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v);
  void dims(const Dims& d);
  void str(std::string_view s);
  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

/// Reads what Writer wrote; every read checks bounds and throws ValueError when truncated.
class EMBER_API Reader {
 public:
  explicit Reader(std::span<const std::byte> b) : b_(b) {}
  uint8_t u8();
  uint16_t u16();
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  double f64();
  Dims dims();
  std::string str();
  bool done() const { return pos_ == b_.size(); }

 private:
  void need(size_t n) const;
  std::span<const std::byte> b_;
  size_t pos_ = 0;
};

EMBER_API void write(Writer& w, const Op& op);
EMBER_API Op read_op(Reader& r);
EMBER_API void write(Writer& w, const TensorMeta& m);
EMBER_API TensorMeta read_meta(Reader& r);

/// One node of a recorded graph: out = op(inputs...), tensors named by id.
struct Node {
  Op op;
  std::vector<uint64_t> inputs;
  uint64_t output = 0;
  TensorMeta out;
  friend bool operator==(const Node&, const Node&) = default;
};
EMBER_API void write(Writer& w, const Node& n);
EMBER_API Node read_node(Reader& r);

EMBER_API std::vector<std::byte> encode(const Op& op);
EMBER_API Op decode_op(std::span<const std::byte> bytes);

}  // namespace ember::ir
