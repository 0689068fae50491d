// Internal: the Remote server over asio (tools/ember-server is its command line). One session
// per connection, each a coroutine on a pool of threads; a session's tensors are freed when its
// client disconnects, and a malformed message closes that session only.
//
//   remote::ServerConfig c;  c.token = "secret";
//   remote::Server s(c, "127.0.0.1", 0);    // port 0: any free port, s.port() says which
//   s.start(2);                               // serves on two threads until s.stop()
#pragma once
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ember/backends/remote/session.h"

namespace ember::remote {

class EMBER_API Server {
 public:
  /// Binds and listens; throws DeviceError when the address cannot be used.
  Server(ServerConfig config, const std::string& host, uint16_t port);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  /// Serves on `threads` threads in the background.
  void start(int threads);
  /// Serves on this thread and `threads - 1` more until stop() (from another thread or a signal).
  void run(int threads);
  /// Stops serving: every session is closed and its tensors freed.
  void stop();
  const ServerStats& stats() const { return stats_; }
  /// Seconds a connection may take to say hello before it is closed (default 10).
  void set_hello_timeout(double seconds) { hello_timeout_s_ = seconds; }

 private:
  struct Impl;
  void start_threads(int n);
  ServerConfig config_;
  ServerStats stats_;
  double hello_timeout_s_ = 10;
  std::unique_ptr<Impl> impl_;
  std::vector<std::thread> threads_;
};

}  // namespace ember::remote
