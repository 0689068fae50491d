// An ember-server inside the test process (port 0, a fresh token) and a raw socket that speaks
// the protocol frame by frame, for the hostile and fault cases.
#pragma once
#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <thread>

#include "ember/backends/remote/client.h"
#include "ember/backends/remote/server.h"

namespace ember::remote::test {

inline const std::string kToken = "token-of-the-test";

struct LocalServer {
  explicit LocalServer(Limits limits = {}, int max_sessions = 64, double hello_timeout = 10) {
    ServerConfig c;
    c.token = kToken;
    c.limits = limits;
    c.max_sessions = max_sessions;
    server = std::make_unique<Server>(c, "127.0.0.1", 0);
    server->set_hello_timeout(hello_timeout);
    server->start(2);
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server->port()); }
  const ServerStats& stats() const { return server->stats(); }
  // Waits up to `seconds` for the server to hold no session and no tensor.
  bool drained(double seconds = 5) const {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (stats().sessions == 0 && stats().live_tensors == 0 && stats().live_bytes == 0)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  std::unique_ptr<Server> server;
};

/// A blocking socket to the server: sends raw bytes, reads whole frames.
struct RawClient {
  explicit RawClient(uint16_t port) : sock(io) {
    sock.connect({asio::ip::make_address("127.0.0.1"), port});
  }
  void send(std::span<const std::byte> b) { asio::write(sock, asio::buffer(b.data(), b.size())); }
  void send_frame(MsgType t, std::span<const std::byte> payload) { send(frame(t, payload)); }
  void hello(const std::string& token = kToken) {
    send_frame(MsgType::Hello, hello_payload(token));
    EXPECT_EQ(read().type, MsgType::Welcome);
  }
  /// The next frame, decoded; a Message of type Hello (never sent by a server) on EOF.
  Message read() {
    std::array<std::byte, kHeaderSize> hb;
    std::error_code ec;
    asio::read(sock, asio::buffer(hb), ec);
    if (ec) return Message{};
    FrameHeader h = decode_header(hb, uint64_t{1} << 32);
    last_payload.resize(h.length);
    asio::read(sock, asio::buffer(last_payload), ec);
    if (ec) return Message{};
    return decode_message(h.type, last_payload, UINT64_MAX);
  }
  /// True once the server has closed the connection.
  bool closed() {
    std::array<std::byte, 1> b;
    std::error_code ec;
    asio::read(sock, asio::buffer(b), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }
  asio::io_context io;
  asio::ip::tcp::socket sock;
  std::vector<std::byte> last_payload;
};

}  // namespace ember::remote::test
