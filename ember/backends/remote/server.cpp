#include "ember/backends/remote/server.h"

#include <asio.hpp>
#include <future>
#include <limits>

namespace ember::remote {

using asio::ip::tcp;

struct Server::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  // Keeps the pool's threads in run() while no connection is open.
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
};

namespace {

// Whole buffers per system call where the kernel takes them (asio's default is 64 KiB).
constexpr auto kWhole = [](const std::error_code& ec, std::size_t) -> std::size_t {
  return ec ? 0 : std::numeric_limits<std::size_t>::max();
};

asio::awaitable<void> write_reply(tcp::socket& sock, const Reply& r) {
  std::array<asio::const_buffer, 2> bufs = {
      asio::buffer(r.bytes),
      r.data ? asio::buffer(r.data->bytes().data(), r.data->bytes().size()) : asio::const_buffer()};
  co_await asio::async_write(sock, bufs, kWhole, asio::use_awaitable);
  if (!r.stream) co_return;
  // A large tensor goes in parts: the next part is read out of the backend on another thread
  // while this one is sent. A part that cannot be read ends the session (the client sees the
  // connection close before the tensor is complete, never a short tensor).
  const Stream& st = *r.stream;
  auto read = [&st](int64_t start) {
    return std::async(std::launch::async,
                      [&st, start] { return st.read(start, std::min(start + st.part, st.numel)); });
  };
  std::future<TensorData> next = read(0);
  for (int64_t start = 0; start < st.numel; start += st.part) {
    TensorData part;
    try {
      part = next.get();
    } catch (const std::exception&) {
      std::error_code ignored;
      sock.close(ignored);
      co_return;
    }
    if (start + st.part < st.numel) next = read(start + st.part);
    co_await asio::async_write(sock, asio::buffer(part.bytes().data(), part.bytes().size()), kWhole,
                               asio::use_awaitable);
  }
}

// Reads an Upload's head, then its raw bytes straight into the tensor's buffer.
asio::awaitable<void> read_upload(tcp::socket& sock, uint64_t length, Session& s,
                                  const Limits& limits) {
  if (length < 2) throw ProtocolError("[remote] truncated upload message");
  std::array<std::byte, 2> n_bytes;
  co_await asio::async_read(sock, asio::buffer(n_bytes), asio::use_awaitable);
  size_t n = static_cast<uint8_t>(n_bytes[0]) | (static_cast<uint8_t>(n_bytes[1]) << 8);
  if (length < 2 + n) throw ProtocolError("[remote] truncated tensor head");
  std::vector<std::byte> head(n);
  co_await asio::async_read(sock, asio::buffer(head), asio::use_awaitable);
  Message m;
  decode_tensor_head(head, length - 2 - n, limits.max_tensor_bytes, m);
  if (!s.upload_fits(m.meta)) {
    // Read and dropped in small pieces: a refused upload allocates nothing.
    std::array<std::byte, 64 << 10> sink;
    for (uint64_t left = length - 2 - n; left > 0;) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(left, sink.size()));
      co_await asio::async_read(sock, asio::buffer(sink.data(), k), asio::use_awaitable);
      left -= k;
    }
    co_return;
  }
  TensorData& data = s.upload_buffer(m.meta);
  co_await asio::async_read(sock, asio::buffer(data.bytes().data(), data.bytes().size()), kWhole,
                            asio::use_awaitable);
  s.upload(m.id, data);
}

asio::awaitable<void> serve(tcp::socket sock, const ServerConfig& config, ServerStats& stats,
                            double hello_timeout_s) {
  ++stats.sessions_total;
  // Counted before the check so that two racing connections cannot both pass it.
  if (++stats.sessions > config.max_sessions) {
    --stats.sessions;
    ++stats.refused;
    Reply r{
        frame(MsgType::Error, error_payload(ErrorKind::Device,
                                            "[remote] the server is at its limit of " +
                                                std::to_string(config.max_sessions) + " sessions")),
        std::nullopt, std::nullopt, true};
    try {
      co_await write_reply(sock, r);
    } catch (const std::exception&) {
    }
    co_return;
  }
  // A connection that does not say hello in time is closed.
  // On the session's strand, like the coroutine: the timer's handler never runs beside a read.
  asio::steady_timer hello_timer(co_await asio::this_coro::executor);
  hello_timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(hello_timeout_s)));
  bool said_hello = false;
  hello_timer.async_wait([&sock, &said_hello](std::error_code ec) {
    if (!ec && !said_hello) sock.close();
  });

  std::optional<Reply> last;  // an error to send before closing
  {
    Session session(config, stats);
    try {
      for (;;) {
        std::array<std::byte, kHeaderSize> hb;
        co_await asio::async_read(sock, asio::buffer(hb), asio::use_awaitable);
        FrameHeader h = decode_header(hb, config.limits.max_message);
        if (h.length > max_payload(h.type, config.limits))
          throw ProtocolError("[remote] a " + std::string(name(h.type)) + " message of " +
                              std::to_string(h.length) + " bytes (at most " +
                              std::to_string(max_payload(h.type, config.limits)) + ")");
        if (!session.authenticated() && h.type != MsgType::Hello)
          throw ProtocolError("[remote] the session starts with hello, not " +
                              std::string(name(h.type)));
        if (h.type == MsgType::Upload && session.authenticated()) {
          co_await read_upload(sock, h.length, session, config.limits);
          continue;
        }
        std::vector<std::byte> payload(h.length);
        co_await asio::async_read(sock, asio::buffer(payload), kWhole, asio::use_awaitable);
        Message m = decode_message(h.type, payload, config.limits.max_tensor_bytes);
        Reply r = session.handle(m);
        if (session.authenticated() && !said_hello) {
          said_hello = true;
          hello_timer.cancel();
        }
        if (!r.bytes.empty()) co_await write_reply(sock, r);
        if (r.close) break;
      }
    } catch (const ProtocolError& e) {
      ++stats.protocol_errors;
      last = Reply{frame(MsgType::Error, error_payload(ErrorKind::Protocol, e.what())),
                   std::nullopt, std::nullopt, true};
    } catch (const std::system_error&) {
      // the client went away (or the hello timer closed the socket)
    } catch (const std::exception& e) {
      last = Reply{frame(MsgType::Error, error_payload(error_kind_of(e), e.what())), std::nullopt,
                   std::nullopt, true};
    }
  }  // the session's tensors are freed here, before the client hears of the error
  hello_timer.cancel();
  if (last && sock.is_open()) {
    try {
      co_await write_reply(sock, *last);
    } catch (const std::exception&) {
    }
  }
  std::error_code ignored;
  sock.shutdown(tcp::socket::shutdown_both, ignored);
  sock.close(ignored);
  --stats.sessions;
}

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, const ServerConfig& config,
                                  ServerStats& stats, const double& hello_timeout_s) {
  for (;;) {
    std::error_code ec;
    tcp::socket sock =
        co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {  // e.g. out of file descriptors: keep serving the others, try again shortly
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::use_awaitable);
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    // One strand per session: its coroutine and its timer never run at the same time.
    asio::co_spawn(asio::make_strand(acceptor.get_executor()),
                   serve(std::move(sock), config, stats, hello_timeout_s), asio::detached);
  }
}

}  // namespace

Server::Server(ServerConfig config, const std::string& host, uint16_t port)
    : config_(std::move(config)), impl_(std::make_unique<Impl>()) {
  try {
    tcp::resolver resolver(impl_->io);
    auto results = resolver.resolve(host, std::to_string(port));
    tcp::endpoint ep = *results.begin();
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
  } catch (const std::system_error& e) {
    throw DeviceError("[remote] cannot listen on " + host + ":" + std::to_string(port) + ": " +
                      e.what());
  }
  asio::co_spawn(impl_->io, accept_loop(impl_->acceptor, config_, stats_, hello_timeout_s_),
                 asio::detached);
}

Server::~Server() { stop(); }

uint16_t Server::port() const { return impl_->acceptor.local_endpoint().port(); }

void Server::start(int threads) { start_threads(std::max(1, threads)); }

void Server::start_threads(int n) {
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { impl_->io.run(); });
}

void Server::run(int threads) {
  asio::signal_set signals(impl_->io, SIGINT, SIGTERM);
  signals.async_wait([this](std::error_code ec, int) {
    if (!ec) impl_->io.stop();
  });
  start_threads(threads - 1);
  impl_->io.run();
}

void Server::stop() {
  if (!impl_) return;
  impl_->io.stop();
  for (auto& t : threads_)
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
  threads_.clear();
  // Destroying the io_context destroys the suspended sessions, which frees their tensors.
  impl_.reset();
}

}  // namespace ember::remote
