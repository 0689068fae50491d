// Internal: the client side of the Remote backend. A Connection is one session with a server:
// ops and uploads are queued and sent in batches without waiting; downloads and syncs wait for
// the server's answer, at most the timeout ($EMBER_REMOTE_TIMEOUT seconds, default 60), so a
// dead or stalled server is an error, never a hang.
//
//   remote::Connection c("127.0.0.1:7070", token);
//   uint64_t x = c.upload(TensorData::from<float>({1, 2}, Shape{2}));
//   TensorData back = c.download(x);
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/backend/dispatch.h"
#include "ember/backends/remote/protocol.h"

namespace ember::remote {

struct SyncInfo {
  uint64_t live_tensors = 0, live_bytes = 0;
};

class EMBER_API Connection {
 public:
  /// Connects and says hello; throws DeviceError when the server cannot be reached, refuses the
  /// token or speaks another protocol version.
  Connection(const std::string& endpoint, const std::string& token,
             std::chrono::milliseconds timeout = default_timeout());
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  uint64_t upload(const TensorData& d);
  uint64_t run(const Op& op, std::span<const uint64_t> inputs, const TensorMeta& out);
  /// The tensor's data; `expect` (its meta, when the caller knows it) lets the buffer be
  /// allocated while the server prepares the data.
  TensorData download(uint64_t id, const TensorMeta* expect = nullptr);
  /// Queues the tensor's release; never throws (handles call it from their destructors).
  void release(uint64_t id) noexcept;
  /// Sends what is queued without waiting for anything.
  void flush();
  /// Sends what is queued and waits until the server has run it; throws the first error of the
  /// ops since the last sync.
  SyncInfo sync();
  /// Closes the connection now, as a client that goes away does.
  void close();
  bool broken() const;
  const std::string& endpoint() const { return endpoint_; }
  const std::string& server_device() const { return server_device_; }
  const Limits& limits() const { return limits_; }

  /// $EMBER_REMOTE_TIMEOUT (seconds) or 60 s.
  static std::chrono::milliseconds default_timeout();

 private:
  struct Impl;
  void queue(MsgType t, std::span<const std::byte> payload);
  void send_locked(std::span<const std::byte> head = {}, std::span<const std::byte> raw = {});
  Message receive_locked(MsgType want, TensorData* into = nullptr);
  [[noreturn]] void fail_locked(const std::string& what);

  std::string endpoint_, server_device_;
  Limits limits_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::unique_ptr<Impl> impl_;
  std::vector<std::byte> queue_;
  uint64_t next_id_ = 1, next_seq_ = 1;
  bool broken_ = false;
  std::string broken_why_;
};

/// The DeviceBackend of remote:HOST:PORT devices: one connection per endpoint, made at the first
/// use and made again after it broke ($EMBER_REMOTE_TOKEN is the token).
EMBER_API std::unique_ptr<DeviceBackend> make_device_backend();
/// The connection behind a remote device (connecting if needed): tests and tools use it to sync.
EMBER_API std::shared_ptr<Connection> connection_of(Device dev);

}  // namespace ember::remote
