// The Remote backend against a server on loopback: results equal the CPU backend's, and the
// security and fault promises of docs/remote.md hold (token, isolation, limits, hostile
// messages close one session only, disconnects free tensors, dead or stalled servers are
// errors within the timeout).
#include <gtest/gtest.h>

#include <cstdlib>

#include "ember/ember.h"
#include "remote_fixture.h"

namespace ember::remote::test {
namespace {

using T2 = Tensor<Dispatch, 2>;
using Clock = std::chrono::steady_clock;

Device device_of(const LocalServer& s) {
  setenv("EMBER_REMOTE_TOKEN", kToken.c_str(), 1);
  return Device::parse("remote:" + s.endpoint());
}

TensorData upload_download(Connection& c, const TensorData& d) { return c.download(c.upload(d)); }

TEST(Remote, OpsEqualTheCpuBackend) {
  LocalServer s;
  Device r = device_of(s);
  auto a = T2::random({8, 16}, Distribution::normal(0, 1));
  auto b = T2::random({16, 4}, Distribution::normal(0, 1));
  auto f = [](const T2& x, const T2& y) { return (x.matmul(y) + 1.0f).exp().sum_dim(1).to_data(); };
  TensorData want = f(a, b);
  TensorData got = f(T2::from_data(a.to_data(), r), T2::from_data(b.to_data(), r));
  std::string why;
  EXPECT_TRUE(got.all_close(want, 1e-6, 1e-6, &why)) << why;
  EXPECT_GT(s.stats().ops, 3);
}

TEST(Remote, LargeTensorsTravelIntact) {
  LocalServer s;
  Connection c(s.endpoint(), kToken);
  std::vector<int32_t> v(3'000'000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i * 2654435761u);
  TensorData d = TensorData::from(v, Shape{1000, 3000});
  EXPECT_EQ(upload_download(c, d), d);
}

TEST(Remote, AWrongTokenIsRefused) {
  LocalServer s;
  try {
    Connection c(s.endpoint(), "not-the-token");
    ADD_FAILURE() << "connected with a wrong token";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("wrong token"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.stats().refused, 1);
  EXPECT_TRUE(s.drained());
}

TEST(Remote, AnotherProtocolVersionIsAClearError) {
  LocalServer s;
  RawClient raw(s.server->port());
  auto f = frame(MsgType::Hello, hello_payload(kToken));
  f[4] = std::byte{7};  // version 7
  raw.send(f);
  Message m = raw.read();
  ASSERT_EQ(m.type, MsgType::Error);
  EXPECT_EQ(m.kind, ErrorKind::Protocol);
  EXPECT_NE(m.text.find("protocol version 7, this side speaks version 1"), std::string::npos)
      << m.text;
  EXPECT_TRUE(raw.closed());
}

// Each hostile message gets an error and its session closed, while a well-behaved session
// opened before keeps working and the server keeps accepting new ones.
TEST(Remote, HostileMessagesCloseOnlyTheirSession) {
  LocalServer s;
  Connection good(s.endpoint(), kToken);
  TensorData d = TensorData::from<float>({1, 2, 3}, Shape{3});
  uint64_t kept = good.upload(d);
  good.sync();

  std::vector<std::pair<std::string, std::vector<std::byte>>> hostile;
  hostile.push_back({"garbage", std::vector<std::byte>(16, std::byte{0x41})});
  hostile.push_back({"oversize", [] {
                       auto h = encode_header(MsgType::Hello, uint64_t{1} << 40);
                       return std::vector<std::byte>(h.begin(), h.end());
                     }()});
  hostile.push_back({"run before hello", frame(MsgType::Run, run_payload({}))});
  auto after_hello = [](std::vector<std::byte> tail) {
    auto f = frame(MsgType::Hello, hello_payload(kToken));
    f.insert(f.end(), tail.begin(), tail.end());
    return f;
  };
  auto run = run_payload({Op{OpCode::Add, {}}, {1, 1}, 2, {Shape{3}, DType::F32}});
  hostile.push_back({"truncated run", after_hello(frame(MsgType::Run, std::span(run).first(9)))});
  auto head = tensor_head(1, {Shape{4}, DType::F32});
  head.resize(head.size() + 12);  // 16 bytes needed
  hostile.push_back({"short upload", after_hello(frame(MsgType::Upload, head))});
  hostile.push_back(
      {"server message", after_hello(frame(MsgType::Welcome, welcome_payload("cpu", {})))});
  hostile.push_back({"second hello", after_hello(frame(MsgType::Hello, hello_payload(kToken)))});
  for (auto& [what, bytes] : hostile) {
    SCOPED_TRACE(what);
    RawClient raw(s.server->port());
    raw.send(bytes);
    Message m = raw.read();
    if (m.type == MsgType::Welcome) m = raw.read();
    ASSERT_EQ(m.type, MsgType::Error);
    EXPECT_EQ(m.kind, ErrorKind::Protocol) << m.text;
    EXPECT_TRUE(raw.closed());
  }
  EXPECT_EQ(s.stats().protocol_errors, static_cast<int64_t>(hostile.size()));
  EXPECT_EQ(good.download(kept), d);
  Connection later(s.endpoint(), kToken);
  EXPECT_EQ(upload_download(later, d), d);
}

// A connection that has not shown the token cannot make the server allocate: a hello that
// announces 512 MiB is refused from its header.
TEST(Remote, AHugeHelloIsRefusedFromItsHeader) {
  LocalServer s;
  RawClient raw(s.server->port());
  auto h = encode_header(MsgType::Hello, uint64_t{512} << 20);
  raw.send(h);
  Message m = raw.read();
  ASSERT_EQ(m.type, MsgType::Error);
  EXPECT_NE(m.text.find("(at most 8192)"), std::string::npos) << m.text;
  EXPECT_TRUE(raw.closed());
  EXPECT_TRUE(s.drained());
}

TEST(Remote, ASessionCannotNameAnotherSessionsTensors) {
  LocalServer s;
  Connection a(s.endpoint(), kToken), b(s.endpoint(), kToken);
  TensorData d = TensorData::from<float>({4, 5, 6}, Shape{3});
  uint64_t id = a.upload(d);
  a.sync();
  uint64_t ids[] = {id, id};
  b.run(Op{OpCode::Add, {}}, ids, {Shape{3}, DType::F32});
  try {
    b.sync();
    ADD_FAILURE() << "an op on another session's tensor ran";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown tensor id " + std::to_string(id)),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(b.download(id), ValueError);
  b.release(id);  // freeing it from b does nothing to a's
  b.sync();
  EXPECT_EQ(a.download(id), d);
}

TEST(Remote, AnOutputMetaThatDisagreesWithTheServerClosesTheSession) {
  LocalServer s;
  Connection c(s.endpoint(), kToken);
  uint64_t x = c.upload(TensorData(Shape{2, 3}, DType::F32));
  uint64_t ids[] = {x, x};
  c.run(Op{OpCode::Add, {}}, ids, {Shape{3, 3}, DType::F32});
  try {
    c.sync();
    ADD_FAILURE() << "a wrong output meta was accepted";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("the server infers [2, 3]"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(c.broken());
  EXPECT_TRUE(s.drained());
}

TEST(Remote, AnOpErrorNamesTheOpAndTheSessionGoesOn) {
  LocalServer s;
  Connection c(s.endpoint(), kToken);
  uint64_t x = c.upload(TensorData(Shape{2, 3}, DType::F32));
  uint64_t ids[] = {x, x};
  uint64_t y = c.run(Op{OpCode::Matmul, {}}, ids, {Shape{2, 3}, DType::F32});
  uint64_t y_ids[] = {y, y};
  c.run(Op{OpCode::Add, {}}, y_ids, {Shape{2, 3}, DType::F32});  // skipped: y was not made
  try {
    c.sync();
    ADD_FAILURE() << "matmul of [2, 3] by [2, 3] ran";
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[matmul]", 0), 0u) << e.what();
  }
  EXPECT_EQ(c.sync().live_tensors, 1u);  // x only
  TensorData d = TensorData::from<int64_t>({7, 8}, Shape{2});
  EXPECT_EQ(upload_download(c, d), d);
}

TEST(Remote, LimitsAreErrorsAndFreeingMakesRoom) {
  Limits l;
  l.max_message = 4096;
  l.max_tensor_bytes = 1024;
  l.max_tensors = 3;
  l.max_session_bytes = 2048;
  LocalServer s(l);
  Connection c(s.endpoint(), kToken);
  TensorData small(Shape{4}, DType::F32);
  uint64_t a = c.upload(small), b = c.upload(small);
  c.upload(small);
  c.upload(small);  // the fourth
  EXPECT_THROW(c.sync(), MemoryError);
  EXPECT_EQ(c.sync().live_tensors, 3u);
  c.release(a);
  c.upload(small);
  EXPECT_EQ(c.sync().live_tensors, 3u);
  // Refused by the client before sending: over the server's tensor limit.
  EXPECT_THROW(c.upload(TensorData(Shape{300}, DType::F32)), MemoryError);
  // An op whose output is over the tensor limit.
  Op full{OpCode::Full, {}};
  full.attrs.shape = {1000};
  c.release(b);
  c.run(full, {}, {Shape{1000}, DType::F32});
  try {
    c.sync();
    ADD_FAILURE() << "a 4000-byte output passed a 1024-byte limit";
  } catch (const MemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("limit of 1024"), std::string::npos) << e.what();
  }
  // Over the session's bytes (2048), in a session of its own: 1024 + 1024, then 1024 more.
  Connection c2(s.endpoint(), kToken);
  c2.upload(TensorData(Shape{256}, DType::F32));
  c2.upload(TensorData(Shape{256}, DType::F32));
  EXPECT_EQ(c2.sync().live_bytes, 2048u);
  c2.upload(TensorData(Shape{256}, DType::F32));
  try {
    c2.sync();
    ADD_FAILURE() << "3072 bytes passed a session limit of 2048";
  } catch (const MemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("over the server's limit of 2048"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(c.broken());
}

TEST(Remote, ADisconnectedClientsTensorsAreFreed) {
  LocalServer s;
  {
    Connection c(s.endpoint(), kToken);
    uint64_t x = c.upload(TensorData(Shape{64, 64}, DType::F32));
    for (int i = 0; i < 50; ++i) {
      uint64_t ids[] = {x, x};
      x = c.run(Op{OpCode::Add, {}}, ids, {Shape{64, 64}, DType::F32});
    }
    SyncInfo info = c.sync();
    EXPECT_EQ(info.live_tensors, 51u);
    EXPECT_EQ(info.live_bytes, 51u * 64 * 64 * 4);
    EXPECT_EQ(s.stats().live_tensors, 51);
    // Mid-stream: ops queued and sent, no sync, then the connection is dropped.
    for (int i = 0; i < 20; ++i) c.upload(TensorData(Shape{16}, DType::F32));
    c.flush();
    c.close();
  }
  EXPECT_TRUE(s.drained()) << s.stats().live_tensors << " tensors left";
}

TEST(Remote, AStoppedServerIsAnErrorNotAHang) {
  auto s = std::make_unique<LocalServer>();
  Connection c(s->endpoint(), kToken, std::chrono::milliseconds(2000));
  uint64_t x = c.upload(TensorData(Shape{8}, DType::F32));
  c.sync();
  s.reset();
  auto t0 = Clock::now();
  try {
    c.download(x);
    ADD_FAILURE() << "a download from a stopped server returned";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("connection lost"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  EXPECT_TRUE(c.broken());
}

TEST(Remote, AStalledServerTimesOut) {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket held(io);
  std::thread t([&] { acceptor.accept(held); });  // accepts, then never answers
  auto t0 = Clock::now();
  std::string endpoint = "127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  try {
    Connection c(endpoint, kToken, std::chrono::milliseconds(300));
    ADD_FAILURE() << "connected to a server that never answers";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("no reply for 300 ms"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  t.join();
}

TEST(Remote, ASilentConnectionIsClosedAfterTheHelloTimeout) {
  LocalServer s({}, 64, 0.3);
  RawClient raw(s.server->port());
  auto t0 = Clock::now();
  EXPECT_TRUE(raw.closed());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  EXPECT_TRUE(s.drained());
}

TEST(Remote, SessionsOverTheLimitAreRefused) {
  LocalServer s({}, 2);
  Connection a(s.endpoint(), kToken), b(s.endpoint(), kToken);
  try {
    Connection c(s.endpoint(), kToken);
    ADD_FAILURE() << "a third session was accepted";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("limit of 2 sessions"), std::string::npos) << e.what();
  }
  a.close();
  ASSERT_TRUE([&] {
    for (int i = 0; i < 500 && s.stats().sessions != 1; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return s.stats().sessions == 1;
  }());
  Connection d(s.endpoint(), kToken);
  EXPECT_EQ(d.sync().live_tensors, 0u);
}

}  // namespace
}  // namespace ember::remote::test
