// Internal: adapts a statically typed backend to Dispatch's DeviceBackend interface. A
// backend library registers itself with
//
//   register_device_backend(DeviceKind::Cuda, std::make_unique<DeviceBackendFor<Cuda>>(n));
#pragma once
#include <array>
#include <vector>

#include "ember/backend/apply.h"
#include "ember/backend/dispatch.h"
#include "ember/ops/decompose.h"

namespace ember {

namespace detail {
template <Backend B>
struct HandleOf final : AnyHandle {
  explicit HandleOf(typename B::Handle h) : h(std::move(h)) {}
  const TensorMeta& meta() const override { return B::meta(h); }
  typename B::Handle h;
};
}  // namespace detail

template <Backend B>
class DeviceBackendFor final : public DeviceBackend {
 public:
  explicit DeviceBackendFor(int count = 1) : count_(count) {}
  std::string_view name() const override { return B::name(); }
  int device_count() const override { return count_; }

  static DispatchHandle wrap(typename B::Handle h, Device dev) {
    return {std::make_shared<detail::HandleOf<B>>(std::move(h)), dev};
  }
  // Moves the inner handle out when this is its only owner, so the backend may reuse it.
  static typename B::Handle unwrap(DispatchHandle& d) {
    auto* p = static_cast<detail::HandleOf<B>*>(d.h.get());
    if (d.h.use_count() == 1) return std::move(p->h);
    return p->h;
  }

  DispatchHandle from_data(const TensorData& d, Device dev) override {
    return wrap(B::from_data(d, dev), dev);
  }
  TensorData to_data(const DispatchHandle& h) override {
    return B::to_data(static_cast<const detail::HandleOf<B>*>(h.h.get())->h);
  }
  DispatchHandle run(const Op& op, std::span<DispatchHandle> in, const TensorMeta& out,
                     Device dev) override {
    detail::HandleBuffer<typename B::Handle> inner(in.size());
    for (size_t i = 0; i < in.size(); ++i) inner[i] = unwrap(in[i]);
    return wrap(run_validated<B>(op, inner.span(), out, dev), dev);
  }
  void flush(Device dev) override {
    if constexpr (requires { B::flush(dev); }) B::flush(dev);
  }
  void with_device_memory(const DispatchHandle& h, const DeviceMemoryFn& f) override {
    if constexpr (HasDeviceMemory<B>)
      B::with_device_memory(static_cast<const detail::HandleOf<B>*>(h.h.get())->h, f);
    else
      DeviceBackend::with_device_memory(h, f);
  }

 private:
  int count_;
};

}  // namespace ember
