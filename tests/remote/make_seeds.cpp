// Writes the seed corpus of the Remote fuzz target (tests/remote/corpus/): client byte
// streams that a server must accept (valid-*), answer with an op error (op-error-*) or close
// with a protocol error (reject-*). corpus_test.cpp checks each against its name.
//
//   build/tests/remote/remote_make_seeds tests/remote/corpus
#include <cstdio>
#include <fstream>
#include <string>

#include "ember/backends/remote/protocol.h"
#include "ember/core/tensor_data.h"

using namespace ember;
using namespace ember::remote;

namespace {

struct Stream {
  std::vector<std::byte> bytes;
  Stream& add(MsgType t, std::span<const std::byte> payload) {
    auto f = frame(t, payload);
    bytes.insert(bytes.end(), f.begin(), f.end());
    return *this;
  }
  Stream& hello(const std::string& token = "fuzz") {
    return add(MsgType::Hello, hello_payload(token));
  }
  Stream& upload(uint64_t id, const TensorData& d) {
    auto p = tensor_head(id, {d.shape(), d.dtype()});
    p.insert(p.end(), d.bytes().begin(), d.bytes().end());
    return add(MsgType::Upload, p);
  }
  Stream& run(Op op, std::vector<uint64_t> in, uint64_t out, TensorMeta meta) {
    return add(MsgType::Run, run_payload({op, std::move(in), out, std::move(meta)}));
  }
  Stream& id(MsgType t, uint64_t id) { return add(t, id_payload(id)); }
};

Op op_with(OpCode c, auto&& set) {
  Op op{c, {}};
  set(op.attrs);
  return op;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: remote_make_seeds DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  auto f23 = TensorData::from<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  auto f32 = TensorData::from<float>({1, 0, 0, 1, 2, 2}, Shape{3, 2});
  auto i4 = TensorData::from<int64_t>({3, 1, 2, 0}, Shape{4});
  TensorMeta m23{Shape{2, 3}, DType::F32}, m22{Shape{2, 2}, DType::F32};
  std::vector<std::pair<std::string, Stream>> seeds;

  Stream s;
  s.hello()
      .upload(1, f23)
      .run({OpCode::Add, {}}, {1, 1}, 2, m23)
      .id(MsgType::Download, 2)
      .id(MsgType::Free, 1)
      .id(MsgType::Sync, 1);
  seeds.push_back({"valid-add", s});
  s = {};
  s.hello()
      .upload(1, f23)
      .upload(2, f32)
      .run({OpCode::Matmul, {}}, {1, 2}, 3, m22)
      .run({OpCode::Exp, {}}, {3}, 4, m22)
      .run(op_with(OpCode::Sum,
                   [](OpAttrs& a) {
                     a.dims = {1};
                     a.flag = true;
                   }),
           {4}, 5, {Shape{2, 1}, DType::F32})
      .run(op_with(OpCode::Reshape,
                   [](OpAttrs& a) {
                     a.shape = {3, 2};
                   }),
           {1}, 6, {Shape{3, 2}, DType::F32})
      .run(op_with(OpCode::Cat, [](OpAttrs& a) { a.dim = 0; }), {6, 2}, 7,
           {Shape{6, 2}, DType::F32})
      .upload(8, i4)
      .run(op_with(OpCode::Full,
                   [](OpAttrs& a) {
                     a.shape = {4};
                     a.scalar.f = 2.5;
                   }),
           {}, 9, {Shape{4}, DType::F32})
      .id(MsgType::Download, 5)
      .id(MsgType::Download, 7)
      .id(MsgType::Download, 8)
      .id(MsgType::Free, 3)
      .id(MsgType::Sync, 2);
  seeds.push_back({"valid-graph", s});
  s = {};
  s.hello()
      .upload(1, f23)
      .run({OpCode::Add, {}}, {1, 99}, 2, m23)
      .id(MsgType::Sync, 1)
      .id(MsgType::Download, 1);
  seeds.push_back({"op-error-unknown-id", s});
  s = {};
  s.hello().upload(1, f23).run({OpCode::Matmul, {}}, {1, 1}, 2, m23).id(MsgType::Sync, 1);
  seeds.push_back({"op-error-shapes", s});
  s = {};
  s.hello()
      .run(op_with(OpCode::Full, [](OpAttrs& a) { a.shape = {100000}; }), {}, 1,
           {Shape{100000}, DType::F32})
      .id(MsgType::Sync, 1);
  seeds.push_back({"op-error-over-limit", s});
  s = {};
  s.hello("wrong").id(MsgType::Sync, 1);
  seeds.push_back({"reject-token", s});
  s = {};
  s.id(MsgType::Sync, 1);
  seeds.push_back({"reject-sync-before-hello", s});
  s = {};
  s.hello().upload(1, f23).run({OpCode::Add, {}}, {1, 1}, 2, m22);
  seeds.push_back({"reject-meta-mismatch", s});
  s = {};
  s.hello().upload(1, f23).upload(1, f23);
  seeds.push_back({"reject-duplicate-id", s});
  s = {};
  s.hello().add(MsgType::Synced, synced_payload(1, 2, 3));
  seeds.push_back({"reject-server-message", s});
  s = {};
  s.hello();
  s.bytes[4] = std::byte{9};
  seeds.push_back({"reject-version", s});
  s = {};
  s.hello().upload(1, f23);
  s.bytes[s.bytes.size() - 30] = std::byte{0x7f};  // the meta's dim count
  seeds.push_back({"reject-bad-meta", s});
  for (auto& [name, stream] : seeds) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(stream.bytes.data()),
              static_cast<std::streamsize>(stream.bytes.size()));
  }
  std::printf("remote_make_seeds: %zu seeds in %s\n", seeds.size(), dir.c_str());
  return 0;
}
