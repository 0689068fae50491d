#include "ember/ir/ir.h"

#include <bit>
#include <cstring>

#include "ember/core/error.h"

namespace ember::ir {

namespace {
constexpr size_t kMaxDims = 64;  // a longer list in a message is malformed
constexpr size_t kMaxString = 1 << 20;
constexpr size_t kMaxInputs = 1 << 16;
}  // namespace

void Writer::u16(uint16_t v) {
  u8(static_cast<uint8_t>(v));
  u8(static_cast<uint8_t>(v >> 8));
}
void Writer::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
}
void Writer::f64(double v) { u64(std::bit_cast<uint64_t>(v)); }
void Writer::dims(const Dims& d) {
  u8(static_cast<uint8_t>(d.size()));
  for (int64_t x : d) i64(x);
}
void Writer::str(std::string_view s) {
  u64(s.size());
  for (char c : s) u8(static_cast<uint8_t>(c));
}

void Reader::need(size_t n) const {
  if (b_.size() - pos_ < n)
    throw ValueError("[ir] truncated message: need " + std::to_string(n) + " bytes at offset " +
                     std::to_string(pos_) + " of " + std::to_string(b_.size()));
}
uint8_t Reader::u8() {
  need(1);
  return static_cast<uint8_t>(b_[pos_++]);
}
uint16_t Reader::u16() {
  uint16_t lo = u8();
  return static_cast<uint16_t>(lo | (uint16_t{u8()} << 8));
}
uint64_t Reader::u64() {
  need(8);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(b_[pos_++])} << (8 * i);
  return v;
}
double Reader::f64() { return std::bit_cast<double>(u64()); }
Dims Reader::dims() {
  size_t n = u8();
  if (n > kMaxDims) throw ValueError("[ir] dim list of " + std::to_string(n) + " entries");
  Dims d(n);
  for (auto& x : d) x = i64();
  return d;
}
std::string Reader::str() {
  uint64_t n = u64();
  if (n > kMaxString) throw ValueError("[ir] string of " + std::to_string(n) + " bytes");
  need(n);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(u8());
  return s;
}

namespace {
void write_scalar(Writer& w, const Scalar& s) {
  w.f64(s.f);
  w.i64(s.i);
  w.u8(s.is_int);
}
Scalar read_scalar(Reader& r) {
  Scalar s;
  s.f = r.f64();
  s.i = r.i64();
  s.is_int = r.u8() != 0;
  return s;
}
// The window of spatial ops, behind one byte that says whether it differs from the default,
// so every other op pays one byte for it.
void write_window(Writer& w, const Window& win) {
  bool set = !(win == Window{});
  w.u8(set);
  if (!set) return;
  w.dims(win.kernel);
  w.dims(win.stride);
  w.dims(win.padding);
  w.dims(win.dilation);
  w.dims(win.output_padding);
  w.i64(win.groups);
  w.u8(win.ceil_mode);
  w.u8(win.count_include_pad);
}
Window read_window(Reader& r) {
  Window win;
  uint8_t set = r.u8();
  if (set > 1) throw ValueError("[ir] bad window tag " + std::to_string(set));
  if (!set) return win;
  win.kernel = r.dims();
  win.stride = r.dims();
  win.padding = r.dims();
  win.dilation = r.dims();
  win.output_padding = r.dims();
  win.groups = r.i64();
  win.ceil_mode = r.u8() != 0;
  win.count_include_pad = r.u8() != 0;
  return win;
}
DType read_dtype(Reader& r) {
  uint8_t t = r.u8();
  if (t >= kNumDTypes) throw ValueError("[ir] bad dtype tag " + std::to_string(t));
  return static_cast<DType>(t);
}
}  // namespace

void write(Writer& w, const Op& op) {
  const OpAttrs& a = op.attrs;
  w.u16(static_cast<uint16_t>(op.code));
  w.dims(a.shape);
  w.dims(a.dims);
  w.dims(a.ends);
  w.dims(a.steps);
  write_scalar(w, a.scalar);
  write_scalar(w, a.scalar2);
  w.i64(a.dim);
  w.u8(static_cast<uint8_t>(a.dtype));
  w.u8(a.flag);
  w.u64(a.seed);
  write_window(w, a.window);
  w.u8(static_cast<uint8_t>(a.interp));
}

Op read_op(Reader& r) {
  uint16_t code = r.u16();
  if (code >= kNumOps) throw ValueError("[ir] unknown op code " + std::to_string(code));
  Op op{static_cast<OpCode>(code), {}};
  OpAttrs& a = op.attrs;
  a.shape = r.dims();
  a.dims = r.dims();
  a.ends = r.dims();
  a.steps = r.dims();
  a.scalar = read_scalar(r);
  a.scalar2 = read_scalar(r);
  a.dim = r.i64();
  a.dtype = read_dtype(r);
  a.flag = r.u8() != 0;
  a.seed = r.u64();
  a.window = read_window(r);
  uint8_t mode = r.u8();
  if (mode >= kNumInterpModes)
    throw ValueError("[ir] bad interpolation mode " + std::to_string(mode));
  a.interp = static_cast<InterpMode>(mode);
  return op;
}

void write(Writer& w, const TensorMeta& m) {
  w.dims(m.shape.dims());
  w.u8(static_cast<uint8_t>(m.dtype));
}
TensorMeta read_meta(Reader& r) {
  TensorMeta m;
  m.shape = Shape(r.dims());
  for (int64_t d : m.shape)
    if (d < 0) throw ValueError("[ir] negative dim in shape " + m.shape.to_string());
  m.dtype = read_dtype(r);
  return m;
}

void write(Writer& w, const Node& n) {
  write(w, n.op);
  w.u64(n.inputs.size());
  for (uint64_t id : n.inputs) w.u64(id);
  w.u64(n.output);
  write(w, n.out);
}
Node read_node(Reader& r) {
  Node n;
  n.op = read_op(r);
  uint64_t k = r.u64();
  if (k > kMaxInputs) throw ValueError("[ir] node with " + std::to_string(k) + " inputs");
  n.inputs.resize(k);
  for (auto& id : n.inputs) id = r.u64();
  n.output = r.u64();
  n.out = read_meta(r);
  return n;
}

std::vector<std::byte> encode(const Op& op) {
  Writer w;
  write(w, op);
  return std::move(w.bytes());
}

Op decode_op(std::span<const std::byte> bytes) {
  Reader r(bytes);
  Op op = read_op(r);
  if (!r.done()) throw ValueError("[ir] trailing bytes after op");
  return op;
}

}  // namespace ember::ir
