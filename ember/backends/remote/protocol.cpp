#include "ember/backends/remote/protocol.h"

#include <algorithm>
#include <cstring>

#include "ember/core/shape.h"

namespace ember::remote {

namespace {
constexpr size_t kMaxToken = 4096;
constexpr size_t kMaxText = 1 << 16;

uint64_t load_u64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

std::string text(ir::Reader& r, size_t max, const char* what) {
  std::string s = r.str();
  if (s.size() > max)
    throw ProtocolError("[remote] " + std::string(what) + " of " + std::to_string(s.size()) +
                        " bytes (at most " + std::to_string(max) + ")");
  return s;
}

uint64_t meta_bytes(const TensorMeta& m, uint64_t max_tensor_bytes) {
  int64_t n = byte_size(m.shape, size_of(m.dtype), "remote");
  if (static_cast<uint64_t>(n) > max_tensor_bytes)
    throw ProtocolError("[remote] tensor " + m.shape.to_string() + " of " + std::to_string(n) +
                        " bytes is over the limit of " + std::to_string(max_tensor_bytes));
  return static_cast<uint64_t>(n);
}
}  // namespace

std::string_view name(MsgType t) {
  static constexpr std::string_view names[] = {"?",    "hello",    "welcome", "upload",
                                               "run",  "download", "data",    "free",
                                               "sync", "synced",   "error"};
  auto i = static_cast<size_t>(t);
  return i <= kMaxMsgType ? names[i] : names[0];
}

uint64_t max_payload(MsgType type, const Limits& limits) {
  constexpr uint64_t kHello = 8 << 10, kControl = 8 << 20;
  switch (type) {
    case MsgType::Hello:
      return std::min(limits.max_message, kHello);
    case MsgType::Upload:
    case MsgType::Data:
      return limits.max_message;
    default:
      return std::min(limits.max_message, kControl);
  }
}

std::array<std::byte, kHeaderSize> encode_header(MsgType type, uint64_t length) {
  std::array<std::byte, kHeaderSize> h{};
  std::memcpy(h.data(), kMagic.data(), 4);
  h[4] = std::byte{static_cast<uint8_t>(kProtocolVersion)};
  h[5] = std::byte{static_cast<uint8_t>(kProtocolVersion >> 8)};
  h[6] = std::byte{static_cast<uint8_t>(type)};
  for (int i = 0; i < 8; ++i) h[8 + i] = std::byte{static_cast<uint8_t>(length >> (8 * i))};
  return h;
}

FrameHeader decode_header(std::span<const std::byte> b, uint64_t max_payload) {
  if (b.size() != kHeaderSize)
    throw ProtocolError("[remote] frame header of " + std::to_string(b.size()) + " bytes");
  if (std::memcmp(b.data(), kMagic.data(), 4) != 0)
    throw ProtocolError("[remote] not an ember remote frame (bad magic)");
  uint16_t version =
      static_cast<uint16_t>(static_cast<uint8_t>(b[4]) | (static_cast<uint8_t>(b[5]) << 8));
  if (version != kProtocolVersion)
    throw ProtocolError("[remote] protocol version " + std::to_string(version) +
                        ", this side speaks version " + std::to_string(kProtocolVersion));
  auto type = static_cast<uint8_t>(b[6]);
  if (type == 0 || type > kMaxMsgType)
    throw ProtocolError("[remote] unknown message type " + std::to_string(type));
  if (b[7] != std::byte{0}) throw ProtocolError("[remote] reserved header byte is not zero");
  FrameHeader h{static_cast<MsgType>(type), load_u64(b.data() + 8)};
  if (h.length > max_payload)
    throw ProtocolError("[remote] " + std::string(name(h.type)) + " message of " +
                        std::to_string(h.length) + " bytes is over the limit of " +
                        std::to_string(max_payload));
  return h;
}

std::vector<std::byte> frame(MsgType type, std::span<const std::byte> payload) {
  auto h = encode_header(type, payload.size());
  std::vector<std::byte> out(kHeaderSize + payload.size());
  std::memcpy(out.data(), h.data(), kHeaderSize);
  if (!payload.empty()) std::memcpy(out.data() + kHeaderSize, payload.data(), payload.size());
  return out;
}

std::vector<std::byte> tensor_head(uint64_t id, const TensorMeta& meta) {
  ir::Writer w;
  w.u16(0);  // the head's length, set below
  w.u64(id);
  ir::write(w, meta);
  auto& b = w.bytes();
  size_t n = b.size() - 2;
  b[0] = std::byte{static_cast<uint8_t>(n)};
  b[1] = std::byte{static_cast<uint8_t>(n >> 8)};
  return std::move(b);
}

void decode_tensor_head(std::span<const std::byte> head, uint64_t raw_bytes,
                        uint64_t max_tensor_bytes, Message& m) {
  try {
    ir::Reader r(head);
    m.id = r.u64();
    m.meta = ir::read_meta(r);
    if (!r.done()) throw ProtocolError("[remote] trailing bytes in a tensor head");
  } catch (const ProtocolError&) {
    throw;
  } catch (const Error& e) {
    throw ProtocolError(std::string("[remote] malformed tensor head: ") + e.what());
  }
  uint64_t want = meta_bytes(m.meta, max_tensor_bytes);
  if (raw_bytes != want)
    throw ProtocolError("[remote] tensor " + m.meta.shape.to_string() + " " +
                        std::string(ember::name(m.meta.dtype)) + " needs " + std::to_string(want) +
                        " bytes, the message has " + std::to_string(raw_bytes));
}

std::vector<std::byte> hello_payload(std::string_view token) {
  ir::Writer w;
  w.str(token);
  return std::move(w.bytes());
}

std::vector<std::byte> welcome_payload(std::string_view device, const Limits& l) {
  ir::Writer w;
  w.str(device);
  w.u64(l.max_message);
  w.u64(l.max_tensor_bytes);
  w.u64(l.max_tensors);
  w.u64(l.max_session_bytes);
  return std::move(w.bytes());
}

std::vector<std::byte> run_payload(const ir::Node& n) {
  ir::Writer w;
  ir::write(w, n);
  return std::move(w.bytes());
}

std::vector<std::byte> id_payload(uint64_t id) {
  ir::Writer w;
  w.u64(id);
  return std::move(w.bytes());
}

std::vector<std::byte> synced_payload(uint64_t seq, uint64_t tensors, uint64_t bytes) {
  ir::Writer w;
  w.u64(seq);
  w.u64(tensors);
  w.u64(bytes);
  return std::move(w.bytes());
}

std::vector<std::byte> error_payload(ErrorKind kind, std::string_view message) {
  ir::Writer w;
  w.u8(static_cast<uint8_t>(kind));
  w.str(message.substr(0, kMaxText));
  return std::move(w.bytes());
}

Message decode_message(MsgType type, std::span<const std::byte> payload,
                       uint64_t max_tensor_bytes) {
  Message m;
  m.type = type;
  try {
    ir::Reader r(payload);
    switch (type) {
      case MsgType::Hello:
        m.text = text(r, kMaxToken, "token");
        break;
      case MsgType::Welcome:
        m.text = text(r, kMaxText, "device name");
        m.limits.max_message = r.u64();
        m.limits.max_tensor_bytes = r.u64();
        m.limits.max_tensors = r.u64();
        m.limits.max_session_bytes = r.u64();
        break;
      case MsgType::Upload:
      case MsgType::Data: {
        uint16_t n = r.u16();
        if (payload.size() < 2u + n) throw ProtocolError("[remote] truncated tensor head");
        decode_tensor_head(payload.subspan(2, n), payload.size() - 2 - n, max_tensor_bytes, m);
        m.raw = payload.subspan(2 + n);
        return m;
      }
      case MsgType::Run:
        m.node = ir::read_node(r);
        break;
      case MsgType::Download:
      case MsgType::Free:
      case MsgType::Sync:
        m.id = r.u64();
        break;
      case MsgType::Synced:
        m.id = r.u64();
        m.live_tensors = r.u64();
        m.live_bytes = r.u64();
        break;
      case MsgType::Error: {
        uint8_t k = r.u8();
        if (k > static_cast<uint8_t>(ErrorKind::Protocol))
          throw ProtocolError("[remote] unknown error kind " + std::to_string(k));
        m.kind = static_cast<ErrorKind>(k);
        m.text = text(r, kMaxText, "error message");
        break;
      }
      default:
        throw ProtocolError("[remote] unknown message type");
    }
    if (!r.done())
      throw ProtocolError("[remote] trailing bytes after a " + std::string(name(type)) +
                          " message");
  } catch (const ProtocolError&) {
    throw;
  } catch (const Error& e) {
    throw ProtocolError("[remote] malformed " + std::string(name(type)) + " message: " + e.what());
  }
  return m;
}

ErrorKind error_kind_of(const std::exception& e) {
  if (dynamic_cast<const ProtocolError*>(&e)) return ErrorKind::Protocol;
  if (dynamic_cast<const ShapeError*>(&e)) return ErrorKind::Shape;
  if (dynamic_cast<const DTypeError*>(&e)) return ErrorKind::DType;
  if (dynamic_cast<const IndexError*>(&e)) return ErrorKind::Index;
  if (dynamic_cast<const ValueError*>(&e)) return ErrorKind::Value;
  if (dynamic_cast<const DeviceError*>(&e)) return ErrorKind::Device;
  if (dynamic_cast<const MemoryError*>(&e)) return ErrorKind::Memory;
  return ErrorKind::Error;
}

void throw_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::Shape:
      throw ShapeError(message);
    case ErrorKind::DType:
      throw DTypeError(message);
    case ErrorKind::Index:
      throw IndexError(message);
    case ErrorKind::Value:
      throw ValueError(message);
    case ErrorKind::Device:
      throw DeviceError(message);
    case ErrorKind::Memory:
      throw MemoryError(message, -1);
    case ErrorKind::Protocol:
      throw ProtocolError(message);
    default:
      throw Error(message);
  }
}

}  // namespace ember::remote
