// The DeviceBackend of remote:HOST:PORT devices: handles are tensor ids of a connection, and a
// handle's destructor queues its tensor's release.
#include <cstdlib>
#include <map>

#include "ember/backends/remote/client.h"

namespace ember::remote {

namespace {

struct RemoteHandle final : detail::AnyHandle {
  RemoteHandle(std::shared_ptr<Connection> c, uint64_t id, TensorMeta m)
      : conn(std::move(c)), id(id), m(std::move(m)) {}
  ~RemoteHandle() override { conn->release(id); }
  const TensorMeta& meta() const override { return m; }
  std::shared_ptr<Connection> conn;
  uint64_t id;
  TensorMeta m;
};

const RemoteHandle& remote_handle(const DispatchHandle& h) {
  return static_cast<const RemoteHandle&>(*h.h);
}

std::string token() {
  const char* t = std::getenv("EMBER_REMOTE_TOKEN");
  return t ? t : "";
}

class RemoteBackend final : public DeviceBackend {
 public:
  std::string_view name() const override { return "remote"; }
  int device_count() const override { return remote_endpoint_count(); }

  std::shared_ptr<Connection> connection(Device dev) {
    std::lock_guard lk(mu_);
    auto& c = connections_[dev.index];
    if (!c || c->broken()) c = std::make_shared<Connection>(remote_endpoint(dev.index), token());
    return c;
  }

  DispatchHandle from_data(const TensorData& d, Device dev) override {
    auto c = connection(dev);
    uint64_t id = c->upload(d);
    return {std::make_shared<RemoteHandle>(c, id, TensorMeta{d.shape(), d.dtype()}), dev};
  }
  TensorData to_data(const DispatchHandle& h) override {
    const RemoteHandle& r = remote_handle(h);
    return r.conn->download(r.id, &r.m);
  }
  DispatchHandle run(const Op& op, std::span<DispatchHandle> in, const TensorMeta& out,
                     Device dev) override {
    std::shared_ptr<Connection> c = in.empty() ? connection(dev) : remote_handle(in[0]).conn;
    SmallVec<uint64_t, 4> ids;
    for (auto& h : in) {
      const RemoteHandle& r = remote_handle(h);
      if (r.conn != c || c->broken())
        throw DeviceError("[" + std::string(ember::name(op.code)) + "] a tensor of a closed " +
                          "session with " + c->endpoint() + " (the connection broke since it " +
                          "was made)");
      ids.push_back(r.id);
    }
    uint64_t id = c->run(op, std::span<const uint64_t>(ids.data(), ids.size()), out);
    return {std::make_shared<RemoteHandle>(c, id, out), dev};
  }
  void flush(Device dev) override { connection(dev)->flush(); }

 private:
  std::mutex mu_;
  std::map<int, std::shared_ptr<Connection>> connections_;
};

}  // namespace

std::unique_ptr<DeviceBackend> make_device_backend() { return std::make_unique<RemoteBackend>(); }

std::shared_ptr<Connection> connection_of(Device dev) {
  if (dev.kind != DeviceKind::Remote)
    throw DeviceError("[remote] " + dev.to_string() + " is not a remote device");
  auto* b = dynamic_cast<RemoteBackend*>(&device_backend(dev));
  if (!b) throw DeviceError("[remote] the remote backend is not the one registered");
  return b->connection(dev);
}

}  // namespace ember::remote
