// A client's byte stream through a server session, as the server handles it (frames cut,
// decoded, handled in order), without a network: the fuzz target, the corpus replay and the
// mutation driver all use it.
#pragma once
#include <span>
#include <string>

#include "ember/backends/remote/session.h"

namespace ember::remote::test {

struct ReplayResult {
  int frames = 0, replies = 0, error_replies = 0;
  bool protocol_error = false;  // the session was closed for breaking the protocol
  bool closed = false;          // closed by a reply (a refused token)
  std::string last_error;
};

/// Small limits, so hostile inputs meet them quickly; the token is "fuzz".
inline const ServerConfig& replay_config() {
  static const ServerConfig config = [] {
    ServerConfig c;
    c.token = "fuzz";
    c.limits.max_message = 1 << 16;
    c.limits.max_tensor_bytes = 1 << 16;
    c.limits.max_tensors = 64;
    c.limits.max_session_bytes = 1 << 18;
    return c;
  }();
  return config;
}

/// Replays `in`; `stats` must show nothing live afterwards (the session is gone).
inline ReplayResult replay(std::span<const std::byte> in, ServerStats& stats) {
  const ServerConfig& config = replay_config();
  ReplayResult r;
  Session session(config, stats);
  try {
    while (in.size() >= kHeaderSize) {
      FrameHeader h = decode_header(in.first(kHeaderSize), config.limits.max_message);
      in = in.subspan(kHeaderSize);
      if (h.length > max_payload(h.type, config.limits))
        throw ProtocolError("[remote] message over its type's size");
      if (h.length > in.size()) break;  // the rest of the frame never came
      Message m = decode_message(h.type, in.first(h.length), config.limits.max_tensor_bytes);
      in = in.subspan(h.length);
      ++r.frames;
      Reply reply = session.handle(m);
      if (!reply.bytes.empty()) {
        ++r.replies;
        if (reply.bytes.size() > kHeaderSize &&
            static_cast<uint8_t>(reply.bytes[6]) == static_cast<uint8_t>(MsgType::Error)) {
          ++r.error_replies;
          auto payload = std::span(reply.bytes).subspan(kHeaderSize);
          r.last_error = decode_message(MsgType::Error, payload).text;
        }
      }
      if (reply.close) {
        r.closed = true;
        break;
      }
    }
  } catch (const ProtocolError& e) {
    r.protocol_error = true;
    r.last_error = e.what();
  }
  return r;
}

}  // namespace ember::remote::test
