#include "ember/backends/remote/client.h"

#include <asio.hpp>
#include <cstdlib>
#include <limits>
#include <map>

namespace ember::remote {

using asio::ip::tcp;

namespace {
// Whole buffers per system call where the kernel takes them (asio's default is 64 KiB).
constexpr auto kWhole = [](const std::error_code& ec, std::size_t) -> std::size_t {
  return ec ? 0 : std::numeric_limits<std::size_t>::max();
};
// Queued ops are sent once this much is waiting, so a long loop without reads stays bounded.
constexpr size_t kBatchBytes = 256 << 10;
// Uploads from this size are written from the caller's buffer instead of being queued.
constexpr size_t kDirectUpload = 64 << 10;
}  // namespace

struct Connection::Impl {
  asio::io_context io;
  tcp::socket sock{io};

  // Runs one asynchronous operation to its end or the timeout; `start` gets the handler.
  template <class Start>
  std::error_code timed(Start start, std::chrono::milliseconds timeout, bool& timed_out) {
    std::error_code result = asio::error::would_block;
    start([&result](std::error_code ec, auto&&...) { result = ec; });
    io.restart();
    io.run_for(timeout);
    timed_out = result == asio::error::would_block;
    if (timed_out) {
      std::error_code ignored;
      sock.close(ignored);
      io.restart();
      io.run();  // lets the cancelled operation finish before `result` goes away
    }
    return result;
  }
};

std::chrono::milliseconds Connection::default_timeout() {
  const char* env = std::getenv("EMBER_REMOTE_TIMEOUT");
  double s = env && *env ? std::strtod(env, nullptr) : 60.0;
  if (!(s > 0)) s = 60.0;
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

Connection::Connection(const std::string& endpoint, const std::string& token,
                       std::chrono::milliseconds timeout)
    : endpoint_(endpoint), timeout_(timeout), impl_(std::make_unique<Impl>()) {
  auto colon = endpoint.rfind(':');
  std::string host = endpoint.substr(0, colon), port = endpoint.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  std::error_code ec;
  auto results = tcp::resolver(impl_->io).resolve(host, port, ec);
  if (ec) throw DeviceError("[remote] cannot resolve " + endpoint + ": " + ec.message());
  bool timed_out = false;
  ec = impl_->timed([&](auto handler) { asio::async_connect(impl_->sock, results, handler); },
                    timeout_, timed_out);
  if (timed_out) throw DeviceError("[remote] no answer from " + endpoint + " (timed out)");
  if (ec) throw DeviceError("[remote] cannot connect to " + endpoint + ": " + ec.message());
  impl_->sock.set_option(tcp::no_delay(true), ec);
  std::lock_guard lk(mu_);
  queue(MsgType::Hello, hello_payload(token));
  try {
    send_locked();
    Message w = receive_locked(MsgType::Welcome);
    server_device_ = w.text;
    limits_ = w.limits;
  } catch (const Error& e) {
    throw DeviceError(e.what());
  }
}

Connection::~Connection() {
  std::error_code ignored;
  impl_->sock.close(ignored);
}

bool Connection::broken() const {
  std::lock_guard lk(mu_);
  return broken_;
}

void Connection::close() {
  std::lock_guard lk(mu_);
  std::error_code ignored;
  impl_->sock.close(ignored);
  broken_ = true;
  broken_why_ = "the connection was closed";
}

void Connection::fail_locked(const std::string& what) {
  std::error_code ignored;
  if (!broken_) {
    // The server may have said why it closed the session: read its error frame if one came.
    std::array<std::byte, kHeaderSize> hb;
    bool timed_out = false;
    std::string reason;
    auto ec = impl_->timed([&](auto h) { asio::async_read(impl_->sock, asio::buffer(hb), h); },
                           std::chrono::milliseconds(200), timed_out);
    if (!ec && !timed_out) {
      try {
        FrameHeader h = decode_header(hb, 1 << 20);
        std::vector<std::byte> payload(h.length);
        ec =
            impl_->timed([&](auto hd) { asio::async_read(impl_->sock, asio::buffer(payload), hd); },
                         std::chrono::milliseconds(200), timed_out);
        if (!ec && !timed_out && h.type == MsgType::Error)
          reason = ": " + decode_message(h.type, payload).text;
      } catch (const Error&) {
      }
    }
    broken_ = true;
    broken_why_ = what + reason;
    impl_->sock.close(ignored);
  }
  throw DeviceError("[remote] " + endpoint_ + ": " + broken_why_);
}

void Connection::queue(MsgType t, std::span<const std::byte> payload) {
  auto h = encode_header(t, payload.size());
  queue_.insert(queue_.end(), h.begin(), h.end());
  queue_.insert(queue_.end(), payload.begin(), payload.end());
}

void Connection::send_locked(std::span<const std::byte> head, std::span<const std::byte> raw) {
  if (broken_) throw DeviceError("[remote] " + endpoint_ + ": " + broken_why_);
  std::array<asio::const_buffer, 3> bufs = {asio::buffer(queue_),
                                            asio::buffer(head.data(), head.size()),
                                            asio::buffer(raw.data(), raw.size())};
  bool timed_out = false;
  auto ec = impl_->timed([&](auto h) { asio::async_write(impl_->sock, bufs, kWhole, h); }, timeout_,
                         timed_out);
  queue_.clear();
  if (timed_out)
    fail_locked("the server took no data for " + std::to_string(timeout_.count()) +
                " ms (stalled or unreachable)");
  if (ec) fail_locked("connection lost while sending (" + ec.message() + ")");
}

Message Connection::receive_locked(MsgType want, TensorData* into) {
  std::array<std::byte, kHeaderSize> hb;
  bool timed_out = false;
  auto read = [&](asio::mutable_buffer b, const char* what) {
    auto ec = impl_->timed([&](auto h) { asio::async_read(impl_->sock, b, kWhole, h); }, timeout_,
                           timed_out);
    if (timed_out)
      fail_locked("no reply for " + std::to_string(timeout_.count()) + " ms while waiting for " +
                  what + " (the server is down or stalled; EMBER_REMOTE_TIMEOUT sets the wait)");
    if (ec)
      fail_locked(std::string("connection lost while waiting for ") + what + " (" + ec.message() +
                  ")");
  };
  read(asio::buffer(hb), name(want).data());
  FrameHeader h;
  try {
    h = decode_header(
        hb, std::max({limits_.max_message, limits_.max_tensor_bytes, uint64_t{1} << 20}) + 4096);
  } catch (const ProtocolError& e) {
    fail_locked(e.what());
  }
  if (h.type == MsgType::Data && into && want == MsgType::Data) {
    // Straight into the tensor's buffer.
    if (h.length < 2) fail_locked("truncated data message");
    std::array<std::byte, 2> nb;
    read(asio::buffer(nb), "data");
    size_t n = static_cast<uint8_t>(nb[0]) | (static_cast<uint8_t>(nb[1]) << 8);
    if (h.length < 2 + n) fail_locked("truncated tensor head");
    std::vector<std::byte> head(n);
    read(asio::buffer(head), "data");
    Message m;
    m.type = MsgType::Data;
    try {
      decode_tensor_head(head, h.length - 2 - n, UINT64_MAX, m);
    } catch (const ProtocolError& e) {
      fail_locked(e.what());
    }
    if (into->shape() != m.meta.shape || into->dtype() != m.meta.dtype)
      *into = TensorData::uninitialized(m.meta.shape, m.meta.dtype);
    read(asio::buffer(into->bytes().data(), into->bytes().size()), "data");
    return m;
  }
  std::vector<std::byte> payload(h.length);
  read(asio::buffer(payload), name(want).data());
  Message m;
  try {
    m = decode_message(h.type, payload, UINT64_MAX);
  } catch (const ProtocolError& e) {
    fail_locked(e.what());
  }
  if (m.type == MsgType::Error && m.kind == ErrorKind::Protocol) {
    // The server closes a session that broke the protocol: this connection is over.
    broken_ = true;
    broken_why_ = "the server closed the session: " + m.text;
    std::error_code ignored;
    impl_->sock.close(ignored);
    throw DeviceError("[remote] " + endpoint_ + ": " + broken_why_);
  }
  if (m.type == MsgType::Error) throw_error(m.kind, m.text);
  if (m.type != want)
    fail_locked("the server sent " + std::string(name(m.type)) + " instead of " +
                std::string(name(want)));
  return m;
}

uint64_t Connection::upload(const TensorData& d) {
  std::lock_guard lk(mu_);
  uint64_t id = next_id_++;
  auto head = tensor_head(id, {d.shape(), d.dtype()});
  auto raw = d.bytes();
  auto h = encode_header(MsgType::Upload, head.size() + raw.size());
  if (head.size() + raw.size() > limits_.max_message || raw.size() > limits_.max_tensor_bytes)
    throw MemoryError("[remote] an upload of " + std::to_string(raw.size()) +
                          " bytes is over the limits of " + endpoint_ + " (messages of " +
                          std::to_string(limits_.max_message) + " bytes, tensors of " +
                          std::to_string(limits_.max_tensor_bytes) + ")",
                      static_cast<int64_t>(raw.size()));
  if (raw.size() >= kDirectUpload) {
    queue_.insert(queue_.end(), h.begin(), h.end());
    send_locked(head, raw);
    return id;
  }
  queue_.insert(queue_.end(), h.begin(), h.end());
  queue_.insert(queue_.end(), head.begin(), head.end());
  queue_.insert(queue_.end(), raw.begin(), raw.end());
  if (queue_.size() >= kBatchBytes) send_locked();
  return id;
}

uint64_t Connection::run(const Op& op, std::span<const uint64_t> inputs, const TensorMeta& out) {
  std::lock_guard lk(mu_);
  ir::Node n{op, std::vector<uint64_t>(inputs.begin(), inputs.end()), next_id_++, out};
  queue(MsgType::Run, run_payload(n));
  if (queue_.size() >= kBatchBytes) send_locked();
  return n.output;
}

TensorData Connection::download(uint64_t id, const TensorMeta* expect) {
  std::lock_guard lk(mu_);
  queue(MsgType::Download, id_payload(id));
  send_locked();
  TensorData d;
  if (expect)
    d = TensorData::uninitialized(expect->shape, expect->dtype);  // while the server copies
  Message m = receive_locked(MsgType::Data, &d);
  if (m.id != id || (expect && !(m.meta == *expect)))
    fail_locked("asked for tensor " + std::to_string(id) + ", the server sent tensor " +
                std::to_string(m.id) + " " + m.meta.shape.to_string());
  return d;
}

void Connection::release(uint64_t id) noexcept {
  try {
    std::lock_guard lk(mu_);
    if (broken_) return;
    queue(MsgType::Free, id_payload(id));
    if (queue_.size() >= kBatchBytes) send_locked();
  } catch (const std::exception&) {
    // the connection broke: the server frees the session's tensors itself
  }
}

void Connection::flush() {
  std::lock_guard lk(mu_);
  if (!queue_.empty()) send_locked();
}

SyncInfo Connection::sync() {
  std::lock_guard lk(mu_);
  uint64_t seq = next_seq_++;
  queue(MsgType::Sync, id_payload(seq));
  send_locked();
  Message m = receive_locked(MsgType::Synced);
  if (m.id != seq)
    fail_locked("sync " + std::to_string(seq) + " answered as " + std::to_string(m.id));
  return {m.live_tensors, m.live_bytes};
}

}  // namespace ember::remote
