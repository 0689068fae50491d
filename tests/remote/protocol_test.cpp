// The Remote wire protocol: every message round-trips, and every malformed header or payload
// (truncated at any byte, trailing bytes, bad tags, sizes that do not add up) is a
// ProtocolError, never a crash.
#include <gtest/gtest.h>

#include "ember/backends/remote/protocol.h"
#include "ember/core/tensor_data.h"

namespace ember::remote {
namespace {

TEST(RemoteProtocol, HeaderRoundTrips) {
  auto h = encode_header(MsgType::Run, 12345);
  FrameHeader d = decode_header(h, 1 << 20);
  EXPECT_EQ(d.type, MsgType::Run);
  EXPECT_EQ(d.length, 12345u);
}

TEST(RemoteProtocol, BadHeadersAreRejected) {
  auto good = encode_header(MsgType::Sync, 8);
  auto expect_reject = [](std::array<std::byte, kHeaderSize> h, const std::string& says) {
    try {
      decode_header(h, 1 << 20);
      ADD_FAILURE() << "accepted a header that should say: " << says;
    } catch (const ProtocolError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  auto h = good;
  h[0] = std::byte{'X'};
  expect_reject(h, "bad magic");
  h = good;
  h[4] = std::byte{2};
  expect_reject(h, "protocol version 2, this side speaks version 1");
  h = good;
  h[6] = std::byte{0};
  expect_reject(h, "unknown message type 0");
  h = good;
  h[6] = std::byte{kMaxMsgType + 1};
  expect_reject(h, "unknown message type");
  h = good;
  h[7] = std::byte{1};
  expect_reject(h, "reserved header byte");
  expect_reject(encode_header(MsgType::Run, (1 << 20) + 1), "over the limit of 1048576");
  expect_reject(encode_header(MsgType::Run, UINT64_MAX), "over the limit");
  EXPECT_THROW(decode_header(std::span(good).first(15), 1 << 20), ProtocolError);
}

// Every payload a client or server sends, with its expected decoding.
struct Case {
  MsgType type;
  std::vector<std::byte> payload;
};

Op sample_op() {
  Op op{OpCode::Matmul, {}};
  op.attrs.dims = {0, 1};
  op.attrs.scalar.f = 0.5;
  return op;
}

std::vector<Case> every_message(TensorData& t) {
  ir::Node n{sample_op(), {3, 4}, 5, {Shape{2, 2}, DType::F32}};
  std::vector<Case> out = {
      {MsgType::Hello, hello_payload("s3cret")},
      {MsgType::Welcome, welcome_payload("cuda:0", Limits{1, 2, 3, 4})},
      {MsgType::Run, run_payload(n)},
      {MsgType::Download, id_payload(7)},
      {MsgType::Free, id_payload(8)},
      {MsgType::Sync, id_payload(9)},
      {MsgType::Synced, synced_payload(9, 10, 11)},
      {MsgType::Error, error_payload(ErrorKind::Shape, "[matmul] inner dims differ")},
  };
  for (MsgType tt : {MsgType::Upload, MsgType::Data}) {
    auto head = tensor_head(42, {t.shape(), t.dtype()});
    head.insert(head.end(), t.bytes().begin(), t.bytes().end());
    out.push_back({tt, head});
  }
  return out;
}

TEST(RemoteProtocol, EveryMessageRoundTrips) {
  TensorData t = TensorData::from<float>({1.5f, -2, 3, 4, 5, 6}, Shape{2, 3});
  auto cases = every_message(t);
  Message hello = decode_message(MsgType::Hello, cases[0].payload);
  EXPECT_EQ(hello.text, "s3cret");
  Message w = decode_message(MsgType::Welcome, cases[1].payload);
  EXPECT_EQ(w.text, "cuda:0");
  EXPECT_EQ(w.limits.max_message, 1u);
  EXPECT_EQ(w.limits.max_session_bytes, 4u);
  Message run = decode_message(MsgType::Run, cases[2].payload);
  EXPECT_EQ(run.node.op, sample_op());
  EXPECT_EQ(run.node.inputs, (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(run.node.output, 5u);
  EXPECT_EQ(run.node.out, (TensorMeta{Shape{2, 2}, DType::F32}));
  EXPECT_EQ(decode_message(MsgType::Download, cases[3].payload).id, 7u);
  EXPECT_EQ(decode_message(MsgType::Free, cases[4].payload).id, 8u);
  EXPECT_EQ(decode_message(MsgType::Sync, cases[5].payload).id, 9u);
  Message s = decode_message(MsgType::Synced, cases[6].payload);
  EXPECT_EQ(s.live_tensors, 10u);
  EXPECT_EQ(s.live_bytes, 11u);
  Message e = decode_message(MsgType::Error, cases[7].payload);
  EXPECT_EQ(e.kind, ErrorKind::Shape);
  EXPECT_EQ(e.text, "[matmul] inner dims differ");
  for (size_t i : {8, 9}) {
    Message d = decode_message(cases[i].type, cases[i].payload);
    EXPECT_EQ(d.id, 42u);
    EXPECT_EQ(d.meta, (TensorMeta{t.shape(), t.dtype()}));
    TensorData back(std::vector<std::byte>(d.raw.begin(), d.raw.end()), d.meta.shape, d.meta.dtype);
    EXPECT_EQ(back, t);
  }
}

TEST(RemoteProtocol, EveryTruncationAndExtensionIsRejected) {
  TensorData t = TensorData::from<int64_t>({1, 2, 3}, Shape{3});
  int rejected = 0;
  for (const Case& c : every_message(t)) {
    for (size_t n = 0; n < c.payload.size(); ++n) {
      EXPECT_THROW(decode_message(c.type, std::span(c.payload).first(n)), ProtocolError)
          << name(c.type) << " cut to " << n << " of " << c.payload.size() << " bytes";
      ++rejected;
    }
    auto longer = c.payload;
    longer.push_back(std::byte{0});
    EXPECT_THROW(decode_message(c.type, longer), ProtocolError) << name(c.type) << " + 1 byte";
  }
  EXPECT_GT(rejected, 200);
}

TEST(RemoteProtocol, HostileFieldsAreRejected) {
  // A tensor head whose shape overflows, or is negative, or whose bytes do not match.
  auto head_with = [](Dims dims, DType t, size_t raw) {
    ir::Writer w;
    w.u16(0);
    w.u64(1);
    w.dims(dims);
    w.u8(static_cast<uint8_t>(t));
    auto b = w.bytes();
    size_t n = b.size() - 2;
    b[0] = std::byte{static_cast<uint8_t>(n)};
    b.resize(b.size() + raw);
    return b;
  };
  EXPECT_THROW(decode_message(MsgType::Upload, head_with({1LL << 40, 1LL << 40}, DType::F32, 0)),
               ProtocolError);
  EXPECT_THROW(decode_message(MsgType::Upload, head_with({-4}, DType::F32, 0)), ProtocolError);
  EXPECT_THROW(decode_message(MsgType::Upload, head_with({4}, DType::F32, 15)), ProtocolError);
  EXPECT_NO_THROW(decode_message(MsgType::Upload, head_with({4}, DType::F32, 16)));
  EXPECT_THROW(decode_message(MsgType::Upload, head_with({4}, DType::F32, 16), 8),
               ProtocolError);  // over the tensor limit
  EXPECT_THROW(decode_message(MsgType::Upload, head_with({4}, static_cast<DType>(200), 16)),
               ProtocolError);
  // An op code past the table, an error kind past the enum, a token that is too long.
  auto run = run_payload({sample_op(), {1}, 2, {}});
  run[0] = std::byte{0xff};
  run[1] = std::byte{0xff};
  EXPECT_THROW(decode_message(MsgType::Run, run), ProtocolError);
  auto err = error_payload(ErrorKind::Value, "x");
  err[0] = std::byte{99};
  EXPECT_THROW(decode_message(MsgType::Error, err), ProtocolError);
  EXPECT_THROW(decode_message(MsgType::Hello, hello_payload(std::string(5000, 't'))),
               ProtocolError);
}

TEST(RemoteProtocol, ErrorKindsRoundTripAsTheirExceptions) {
  try {
    throw_error(error_kind_of(ShapeError("[add] a")), "[add] a");
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "[add] a");
  }
  EXPECT_THROW(throw_error(error_kind_of(IndexError("i")), "i"), IndexError);
  EXPECT_THROW(throw_error(error_kind_of(DTypeError("d")), "d"), DTypeError);
  EXPECT_THROW(throw_error(error_kind_of(DeviceError("d")), "d"), DeviceError);
  EXPECT_THROW(throw_error(error_kind_of(MemoryError("m", 1)), "m"), MemoryError);
  EXPECT_THROW(throw_error(error_kind_of(ProtocolError("p")), "p"), ProtocolError);
  EXPECT_THROW(throw_error(error_kind_of(std::runtime_error("r")), "r"), Error);
}

}  // namespace
}  // namespace ember::remote
