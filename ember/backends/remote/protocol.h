// Internal: the Remote backend's wire protocol (docs/remote.md). Every message is a frame: a
// 16-byte header (magic "EMBR", protocol version, message type, a zero byte, payload length,
// little-endian) and a binary payload. Tensor bytes travel raw after a short head that names
// the tensor, so neither side converts them to text or copies them through a second buffer.
//
//   std::vector<std::byte> f = remote::frame(remote::MsgType::Sync, payload);
//   remote::FrameHeader h = remote::decode_header(first16, limits);  // throws ProtocolError
//   remote::Message m = remote::decode_message(h.type, payload);     // validates every field
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/ir/ir.h"

namespace ember::remote {

inline constexpr std::array<std::byte, 4> kMagic = {std::byte{'E'}, std::byte{'M'}, std::byte{'B'},
                                                    std::byte{'R'}};
inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr size_t kHeaderSize = 16;

enum class MsgType : uint8_t {
  Hello = 1,     // client: token
  Welcome = 2,   // server: its device and limits
  Upload = 3,    // client: tensor id, meta, raw bytes
  Run = 4,       // client: an op IR node (op, input ids, output id, output meta)
  Download = 5,  // client: tensor id
  Data = 6,      // server: tensor id, meta, raw bytes
  Free = 7,      // client: tensor id
  Sync = 8,      // client: sequence number
  Synced = 9,    // server: sequence number, live tensors and bytes of the session
  Error = 10,    // server: error kind and message
};
inline constexpr uint8_t kMaxMsgType = 10;

/// The ember error type a server error is raised as on the client.
enum class ErrorKind : uint8_t { Error, Shape, DType, Index, Value, Device, Memory, Protocol };

/// A message that breaks the protocol: the server answers it with an Error frame and closes
/// the session.
class EMBER_API ProtocolError : public ValueError {
 public:
  using ValueError::ValueError;
};

/// What a server accepts from one session.
struct Limits {
  uint64_t max_message = uint64_t{1} << 30;        // bytes of one frame's payload
  uint64_t max_tensor_bytes = uint64_t{1} << 30;   // bytes of one tensor
  uint64_t max_tensors = 1'000'000;                // live tensors per session
  uint64_t max_session_bytes = uint64_t{4} << 30;  // bytes of the live tensors per session
};

/// The largest payload a server reads for a message of this type: a hello before the token is
/// checked, and the other small messages, are capped far below the upload limit, so that an
/// unauthenticated or hostile connection cannot make the server allocate much.
EMBER_API uint64_t max_payload(MsgType type, const Limits& limits);

struct FrameHeader {
  MsgType type = MsgType::Hello;
  uint64_t length = 0;
};

/// A decoded message; which fields are set depends on `type`.
struct Message {
  MsgType type = MsgType::Hello;
  uint64_t id = 0;   // Upload, Download, Data, Free; the sequence of Sync and Synced
  std::string text;  // Hello's token, Welcome's device, Error's message
  TensorMeta meta;   // Upload, Data
  ir::Node node;     // Run
  ErrorKind kind = ErrorKind::Error;          // Error
  Limits limits;                              // Welcome
  uint64_t live_tensors = 0, live_bytes = 0;  // Synced
  std::span<const std::byte> raw;             // Upload, Data: the tensor's bytes (in the payload)
};

/// The 16-byte header of a payload of `length` bytes.
EMBER_API std::array<std::byte, kHeaderSize> encode_header(MsgType type, uint64_t length);
/// Checks magic, version, type and length against `max_payload`; throws ProtocolError.
EMBER_API FrameHeader decode_header(std::span<const std::byte> bytes, uint64_t max_payload);
/// Header and payload in one buffer.
EMBER_API std::vector<std::byte> frame(MsgType type, std::span<const std::byte> payload);

// Payloads. Tensor payloads (Upload, Data) are a u16 head length, the head (id, meta) and the
// raw bytes; `tensor_head` encodes the first two parts.
EMBER_API std::vector<std::byte> tensor_head(uint64_t id, const TensorMeta& meta);
/// Decodes a tensor head (after its u16 length) and checks that `raw_bytes` is the meta's size.
EMBER_API void decode_tensor_head(std::span<const std::byte> head, uint64_t raw_bytes,
                                  uint64_t max_tensor_bytes, Message& m);
EMBER_API std::vector<std::byte> hello_payload(std::string_view token);
EMBER_API std::vector<std::byte> welcome_payload(std::string_view device, const Limits& l);
EMBER_API std::vector<std::byte> run_payload(const ir::Node& n);
EMBER_API std::vector<std::byte> id_payload(uint64_t id);
EMBER_API std::vector<std::byte> synced_payload(uint64_t seq, uint64_t tensors, uint64_t bytes);
EMBER_API std::vector<std::byte> error_payload(ErrorKind kind, std::string_view message);

/// Decodes a whole payload of the given type; throws ProtocolError on anything malformed
/// (truncated, trailing bytes, bad tags, sizes that do not add up). `raw` points into `payload`.
EMBER_API Message decode_message(MsgType type, std::span<const std::byte> payload,
                                 uint64_t max_tensor_bytes = Limits{}.max_tensor_bytes);

/// The kind an ember exception is sent as, and the exception a received kind is raised as.
EMBER_API ErrorKind error_kind_of(const std::exception& e);
[[noreturn]] EMBER_API void throw_error(ErrorKind kind, const std::string& message);

EMBER_API std::string_view name(MsgType t);

}  // namespace ember::remote
