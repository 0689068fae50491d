#include "ember/backends/remote/session.h"

#include "ember/backend/apply.h"
#include "ember/core/shape.h"

namespace ember::remote {

namespace {
// Compares in time independent of where the strings differ, so the token cannot be guessed
// byte by byte from reply times.
bool same_token(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() != b.size();
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

// Downloads above this size are streamed in parts of kStreamPart bytes.
constexpr int64_t kStreamBytes = 8 << 20;
constexpr int64_t kStreamPart = 2 << 20;

Reply frame_reply(MsgType t, std::span<const std::byte> payload, bool close = false) {
  return {frame(t, payload), std::nullopt, std::nullopt, close};
}
}  // namespace

TensorData Stream::read(int64_t start, int64_t end) const {
  Op slice{OpCode::Slice, {}};
  slice.attrs.dims = {start};
  slice.attrs.ends = {end};
  slice.attrs.steps = {1};
  DispatchHandle in[1] = {flat};
  return Dispatch::to_data(apply<Dispatch>(slice, std::span<DispatchHandle>(in), device));
}

Session::~Session() {
  stats_.live_tensors -= static_cast<int64_t>(tensors_.size());
  stats_.live_bytes -= bytes_;
}

void Session::check_room(const TensorMeta& m) {
  int64_t n = byte_size(m.shape, size_of(m.dtype), "remote");
  const Limits& l = config_.limits;
  if (static_cast<uint64_t>(n) > l.max_tensor_bytes)
    throw MemoryError("[remote] a tensor of " + std::to_string(n) +
                          " bytes is over the server's limit of " +
                          std::to_string(l.max_tensor_bytes),
                      n);
  if (tensors_.size() + 1 > l.max_tensors)
    throw MemoryError("[remote] the session holds " + std::to_string(tensors_.size()) +
                          " tensors, the server's limit",
                      n);
  if (static_cast<uint64_t>(bytes_ + n) > l.max_session_bytes)
    throw MemoryError("[remote] the session's tensors would take " + std::to_string(bytes_ + n) +
                          " bytes, over the server's limit of " +
                          std::to_string(l.max_session_bytes),
                      n);
}

void Session::insert(uint64_t id, DispatchHandle h) {
  int64_t n = byte_size(h.h->meta().shape, size_of(h.h->meta().dtype), "remote");
  tensors_.emplace(id, Entry{std::move(h), n});
  bytes_ += n;
  ++stats_.live_tensors;
  stats_.live_bytes += n;
}

void Session::erase(uint64_t id) {
  auto it = tensors_.find(id);
  if (it == tensors_.end()) return;  // freed twice, or its op failed: nothing to free
  bytes_ -= it->second.bytes;
  --stats_.live_tensors;
  stats_.live_bytes -= it->second.bytes;
  tensors_.erase(it);
}

TensorData& Session::upload_buffer(const TensorMeta& m) {
  if (upload_buffer_.shape() != m.shape || upload_buffer_.dtype() != m.dtype)
    upload_buffer_ = TensorData::uninitialized(m.shape, m.dtype);
  return upload_buffer_;
}

bool Session::upload_fits(const TensorMeta& m) {
  if (failed_) return false;
  try {
    check_room(m);
    return true;
  } catch (const MemoryError& e) {
    failed_.emplace(ErrorKind::Memory, std::string("[upload] ") + e.what());
    return false;
  }
}

void Session::upload(uint64_t id, const TensorData& data) {
  if (tensors_.count(id))
    throw ProtocolError("[remote] upload to tensor id " + std::to_string(id) + ", which is live");
  if (failed_) return;
  try {
    check_room({data.shape(), data.dtype()});
    insert(id, Dispatch::from_data(data, config_.device));
  } catch (const ProtocolError&) {
    throw;
  } catch (const std::exception& e) {
    failed_.emplace(error_kind_of(e), std::string("[upload] ") + e.what());
  }
}

void Session::run(const ir::Node& n) {
  if (tensors_.count(n.output))
    throw ProtocolError("[remote] op output id " + std::to_string(n.output) + " is live");
  if (failed_) return;
  std::string op_name(ember::name(n.op.code));
  try {
    std::vector<DispatchHandle> in;
    SmallVec<const TensorMeta*, 4> metas;
    in.reserve(n.inputs.size());
    for (uint64_t id : n.inputs) {
      auto it = tensors_.find(id);
      if (it == tensors_.end())
        throw ValueError("[" + op_name + "] unknown tensor id " + std::to_string(id) +
                         " (freed, made by a failed op, or not of this session)");
      in.push_back(it->second.h);
    }
    for (auto& h : in) metas.push_back(&h.h->meta());
    Op op = n.op;
    TensorMeta out = infer(op, std::span<const TensorMeta* const>(metas.data(), metas.size()));
    if (!(out == n.out))
      throw ProtocolError("[remote] " + op_name + ": the client says its output is " +
                          n.out.shape.to_string() + " " + std::string(ember::name(n.out.dtype)) +
                          ", the server infers " + out.shape.to_string() + " " +
                          std::string(ember::name(out.dtype)));
    check_room(out);
    DispatchHandle h = run_named<Dispatch>(op, std::span<DispatchHandle>(in), out, config_.device);
    ++stats_.ops;
    insert(n.output, std::move(h));
  } catch (const ProtocolError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    // Name the op when the error does not already start with it.
    if (what.rfind("[", 0) != 0) what = "[" + op_name + "] " + what;
    failed_.emplace(error_kind_of(e),
                    what + " (on the server's " + config_.device.to_string() + ")");
  }
}

Reply Session::error_reply() {
  auto [kind, what] = *failed_;
  failed_.reset();
  return frame_reply(MsgType::Error, error_payload(kind, what));
}

Reply Session::handle(const Message& m) {
  if (!authenticated_) {
    if (m.type != MsgType::Hello)
      throw ProtocolError("[remote] the session starts with hello, not " +
                          std::string(name(m.type)));
    if (config_.token.empty() || !same_token(m.text, config_.token)) {
      ++stats_.refused;
      return frame_reply(MsgType::Error,
                         error_payload(ErrorKind::Device,
                                       "[remote] the server refused the session: wrong token "
                                       "(set EMBER_REMOTE_TOKEN to the server's token)"),
                         true);
    }
    authenticated_ = true;
    return frame_reply(MsgType::Welcome,
                       welcome_payload(config_.device.to_string(), config_.limits));
  }
  switch (m.type) {
    case MsgType::Upload:
      upload(m.id, TensorData(m.raw, m.meta.shape, m.meta.dtype));
      return {};
    case MsgType::Run:
      run(m.node);
      return {};
    case MsgType::Free:
      erase(m.id);
      return {};
    case MsgType::Sync:
      if (failed_) return error_reply();
      return frame_reply(MsgType::Synced,
                         synced_payload(m.id, tensors_.size(), static_cast<uint64_t>(bytes_)));
    case MsgType::Download: {
      if (failed_) return error_reply();
      auto it = tensors_.find(m.id);
      if (it == tensors_.end())
        return frame_reply(
            MsgType::Error,
            error_payload(ErrorKind::Value, "[download] unknown tensor id " + std::to_string(m.id) +
                                                " (freed, made by a failed op, or not of this "
                                                "session)"));
      try {
        const TensorMeta& meta = it->second.h.h->meta();
        int64_t esize = size_of(meta.dtype);
        if (it->second.bytes > kStreamBytes) {
          Op flatten{OpCode::Reshape, {}};
          flatten.attrs.shape = {meta.shape.numel()};
          DispatchHandle in[1] = {it->second.h};
          auto head = tensor_head(m.id, meta);
          auto h = encode_header(MsgType::Data, head.size() + it->second.bytes);
          Reply r;
          r.bytes.assign(h.begin(), h.end());
          r.bytes.insert(r.bytes.end(), head.begin(), head.end());
          r.stream = Stream{apply<Dispatch>(flatten, std::span<DispatchHandle>(in), config_.device),
                            meta.shape.numel(), kStreamPart / esize, config_.device};
          return r;
        }
        TensorData d = Dispatch::to_data(it->second.h);
        auto head = tensor_head(m.id, {d.shape(), d.dtype()});
        auto h = encode_header(MsgType::Data, head.size() + d.bytes().size());
        Reply r;
        r.bytes.assign(h.begin(), h.end());
        r.bytes.insert(r.bytes.end(), head.begin(), head.end());
        r.data = std::move(d);
        return r;
      } catch (const std::exception& e) {
        return frame_reply(MsgType::Error,
                           error_payload(error_kind_of(e), std::string("[download] ") + e.what()));
      }
    }
    default:
      throw ProtocolError("[remote] a client does not send " + std::string(name(m.type)) +
                          " messages");
  }
}

}  // namespace ember::remote
