// The Backend concept. A backend names its tensor handle and runs every op through one
// entry point; composite ops fall back to their decompositions unless `supports` says the
// backend has a kernel for them. Decorators (Autodiff, Fusion, Remote, Dispatch) are
// backends that wrap another one.
//
//   struct MyBackend {
//     using Handle = std::shared_ptr<MyTensor>;  // ref-counted, cheap to copy
//     static std::string_view name();
//     static Device default_device();
//     static const TensorMeta& meta(const Handle&);
//     static Device device(const Handle&);
//     static Handle from_data(const TensorData&, Device);
//     static TensorData to_data(const Handle&);
//     static Handle run(const Op&, std::span<Handle> inputs, const TensorMeta& out, Device);
//     static bool supports(OpCode composite);
//   };
//   static_assert(ember::Backend<MyBackend>);
//
// `run` receives inputs validated and attributes normalized by `infer`, and the handles by
// value: a handle nobody else holds may be reused for the output (in-place).
#pragma once
#include <concepts>
#include <span>
#include <string_view>

#include "ember/core/device.h"
#include "ember/core/tensor_data.h"
#include "ember/ops/op.h"

namespace ember {

template <class B>
concept Backend = std::copyable<typename B::Handle> &&
    requires(const typename B::Handle& h, const Op& op, std::span<typename B::Handle> in,
             const TensorMeta& m, const TensorData& d, Device dev) {
  { B::name() } -> std::convertible_to<std::string_view>;
  { B::default_device() } -> std::same_as<Device>;
  { B::meta(h) } -> std::same_as<const TensorMeta&>;
  { B::device(h) } -> std::same_as<Device>;
  { B::from_data(d, dev) } -> std::same_as<typename B::Handle>;
  { B::to_data(h) } -> std::same_as<TensorData>;
  { B::run(op, in, m, dev) } -> std::same_as<typename B::Handle>;
  { B::supports(op.code) } -> std::same_as<bool>;
};

/// A backend that records a graph and can run `backward()` (see `Autodiff<B>`).
template <class B>
concept AutodiffBackend = Backend<B> && requires {
  typename B::Inner;
  B::kIsAutodiff;
};

}  // namespace ember
