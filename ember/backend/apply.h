// `apply<B>(op, inputs)`: the one path every tensor op takes. It checks that the inputs share
// a device, validates and normalizes the op (`infer`), and runs it on the backend, or runs its
// decomposition when the op is a composite the backend has no kernel for.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "ember/backend/backend.h"
#include "ember/core/error.h"

namespace ember {

template <Backend B>
typename B::Handle decompose(const Op& op, std::span<typename B::Handle> in, const TensorMeta& out);

namespace detail {
/// Handles of an op's inputs: inline up to 4 (every op but cat), on the heap beyond.
template <class H>
class HandleBuffer {
 public:
  explicit HandleBuffer(size_t n) : n_(n) {
    if (n > few_.size()) many_.resize(n);
  }
  H& operator[](size_t i) { return data()[i]; }
  std::span<H> span() { return {data(), n_}; }

 private:
  H* data() { return many_.empty() ? few_.data() : many_.data(); }
  std::array<H, 4> few_{};
  std::vector<H> many_;
  size_t n_;
};
}  // namespace detail

/// Runs a validated op on B: B's kernel, or the decomposition of a composite B has none for.
/// Decorators call this for the backend they wrap.
template <Backend B>
typename B::Handle run_validated(const Op& op, std::span<typename B::Handle> in,
                                 const TensorMeta& out, Device dev) {
  if (info(op.code).family == OpFamily::Composite && !B::supports(op.code))
    return decompose<B>(op, in, out);
  return B::run(op, in, out, dev);
}

/// run_validated, with an allocation failure named after the op and its output (once: an inner
/// op of a decomposition that named itself is left as it is). apply runs ops this way, and so
/// does Fusion when it runs recorded ops later than their calls.
template <Backend B>
typename B::Handle run_named(const Op& op, std::span<typename B::Handle> in, const TensorMeta& out,
                             Device dev) {
  try {
    return run_validated<B>(op, in, out, dev);
  } catch (const MemoryError& e) {
    if (e.names_site()) throw;
    throw detail::memory_error(op, out, e.what(), e.bytes());
  } catch (const std::bad_alloc&) {
    throw detail::memory_error(op, out, "out of memory", -1);
  }
}

template <Backend B>
typename B::Handle apply(Op op, std::span<typename B::Handle> in, Device dev) {
  SmallVec<const TensorMeta*, 4> metas;
  for (auto& h : in) {
    metas.push_back(&B::meta(h));
    if (B::device(h) != dev)
      throw DeviceError("[" + std::string(name(op.code)) + "] inputs on " + dev.to_string() +
                        " and " + B::device(h).to_string());
  }
  TensorMeta out = infer(op, std::span<const TensorMeta* const>(metas.data(), metas.size()));
  return run_named<B>(op, in, out, dev);
}

/// apply for ops with inputs: the device is the first input's.
template <Backend B>
typename B::Handle apply(Op op, std::span<typename B::Handle> in) {
  if (in.empty()) throw ValueError("[" + std::string(name(op.code)) + "] needs at least one input");
  Device dev = B::device(in[0]);
  return apply<B>(std::move(op), in, dev);
}

}  // namespace ember
