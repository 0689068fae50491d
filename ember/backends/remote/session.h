// Internal: one client's session on a Remote server, apart from the network: it takes decoded
// messages and gives the frames to answer with. Its table of live tensors is its own, so a
// client can name no other client's tensor. Ops run on the server's device through Dispatch,
// validated again here (a client's output meta must be what `infer` says), so a hostile
// message becomes an error, never a wrong-sized buffer in a backend.
//
//   remote::Session s(config, stats);
//   remote::Reply r = s.handle(message);   // throws ProtocolError: answer it, then close
#pragma once
#include <atomic>
#include <optional>
#include <string>
#include <unordered_map>

#include "ember/backend/dispatch.h"
#include "ember/backends/remote/protocol.h"

namespace ember::remote {

/// What a server was started with.
struct ServerConfig {
  Device device = Device::cpu();  // where the ops run
  std::string token;              // a client must present it
  Limits limits;
  int max_sessions = 64;
};

/// Counters of a server, over its sessions.
struct ServerStats {
  std::atomic<int64_t> sessions{0}, live_tensors{0}, live_bytes{0};
  std::atomic<int64_t> sessions_total{0}, refused{0}, protocol_errors{0}, ops{0};
};

/// A large download sent in parts: the tensor flattened, read `part` elements at a time, so
/// that reading a part out of the backend overlaps with sending the previous one.
struct Stream {
  DispatchHandle flat;
  int64_t numel = 0, part = 0;
  Device device;
  /// Elements [start, end) of the tensor, on the host.
  TensorData read(int64_t start, int64_t end) const;
};

/// A frame to send: header and head in `bytes`, then a tensor's raw bytes (`data`, or `stream`
/// for a large tensor) when it carries one.
struct Reply {
  std::vector<std::byte> bytes;
  std::optional<TensorData> data;
  std::optional<Stream> stream;
  bool close = false;  // the session ends once it is sent
};

class EMBER_API Session {
 public:
  Session(const ServerConfig& config, ServerStats& stats) : config_(config), stats_(stats) {}
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Handles one message; the reply is empty when the message has none.
  Reply handle(const Message& m);
  /// An upload whose bytes the transport has read into `data` already.
  void upload(uint64_t id, const TensorData& data);
  /// Where the transport reads an upload of this meta: the previous upload's buffer when the
  /// meta is the same (a training loop's batches), which saves allocating and zeroing it.
  TensorData& upload_buffer(const TensorMeta& m);
  /// Whether an upload of this meta will be kept: false (its bytes are to be read and dropped)
  /// after an earlier error, or when it does not fit the session's limits (then it is that
  /// error, raised at the next sync or download).
  bool upload_fits(const TensorMeta& m);
  bool authenticated() const { return authenticated_; }
  size_t live_tensors() const { return tensors_.size(); }

 private:
  struct Entry {
    DispatchHandle h;
    int64_t bytes;
  };
  void run(const ir::Node& n);
  void insert(uint64_t id, DispatchHandle h);
  void erase(uint64_t id);
  void check_room(const TensorMeta& m);
  Reply error_reply();

  const ServerConfig& config_;
  ServerStats& stats_;
  bool authenticated_ = false;
  std::unordered_map<uint64_t, Entry> tensors_;
  int64_t bytes_ = 0;
  // The first error of the ops since the last Sync or Download: later ops of the batch are
  // skipped (they depend on it), and the next Sync or Download answers with it.
  std::optional<std::pair<ErrorKind, std::string>> failed_;
  TensorData upload_buffer_;
};

}  // namespace ember::remote
