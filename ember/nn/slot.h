// Slots: a module's parameters and buffers as a flat list of type-erased views, so that
// what works on every parameter (optimizer steps, gradients, records) is compiled once in the
// library instead of once per model in every user program. Walking the module to make the
// list is the only code that depends on the model's type.
//
//   std::vector<nn::Slot> s = nn::slots(model);   // parameters in order, then buffers
//   for (const nn::Slot& x : s)
//     std::cout << x.path() << " " << x.shape().to_string() << "\n";   // fc1.weight [784, 256]
//   s[0].set_data(TensorData(s[0].shape(), DType::F32));   // zeros, converted to its dtype
//
// A slot points into its module: it is valid while the module lives and is not moved.
// Shape and dtype checks stay typed: set_data converts to the slot's dtype and the tensor's
// constructor checks the rank, and `handle<B>()` checks that B is the module's backend.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "ember/core/export.h"
#include "ember/nn/module.h"

namespace ember::nn {

namespace detail {
/// An address unique to each backend type (what a slot's backend is compared by).
template <Backend B>
inline constexpr char kBackendTag = 0;

/// What a slot can do, filled in once per parameter or buffer type.
struct SlotOps {
  const char* backend;  // &kBackendTag<B>
  bool is_param;
  int rank;
  bool float_kind;     // a Float tensor (trained), not Int or Bool
  DType kind_default;  // the dtype of a parameter initialized later
  ParamId (*id)(const void*);
  bool (*empty)(const void*);
  bool (*trainable)(const void*);
  bool (*is_initialized)(const void*);
  Shape (*shape)(const void*);
  Device (*device)(const void*);
  DType (*dtype)(const void*);         // only when initialized
  const void* (*handle)(const void*);  // the value's B::Handle (initializes)
  void (*set_handle)(void*, const void*);
  TensorData (*to_data)(const void*);  // initializes
  void (*from_data)(void*, const TensorData&, Device);
};

template <class P>
struct SlotOpsFor {
  using V = typename P::Value;
  using B = typename V::backend_type;
  static constexpr bool kParam = ParamLike<P>;
  static const P& c(const void* p) { return *static_cast<const P*>(p); }
  static P& m(void* p) { return *static_cast<P*>(p); }
  static constexpr SlotOps ops = {
      &kBackendTag<B>,
      kParam,
      V::kRank,
      std::is_same_v<typename V::kind_type, Float>,
      V::kind_type::kDefault,
      [](const void* p) -> ParamId {
        if constexpr (kParam)
          return c(p).id();
        else
          return 0;
      },
      [](const void* p) { return c(p).empty(); },
      [](const void* p) {
        if constexpr (kParam)
          return c(p).trainable();
        else
          return false;
      },
      [](const void* p) {
        if constexpr (kParam)
          return c(p).is_initialized();
        else
          return !c(p).empty();
      },
      [](const void* p) { return c(p).shape(); },
      [](const void* p) {
        if constexpr (kParam)
          return c(p).device();
        else
          return c(p).val().device();
      },
      [](const void* p) { return c(p).val().dtype(); },
      [](const void* p) -> const void* { return &c(p).val().handle(); },
      [](void* p, const void* h) { m(p).set(V(*static_cast<const typename B::Handle*>(h))); },
      [](const void* p) { return c(p).val().to_data(); },
      [](void* p, const TensorData& d, Device dev) { m(p).set(V::from_data(d, dev)); },
  };
};
}  // namespace detail

/// The highest parameter rank that code working on slots handles (visit_rank).
inline constexpr int kMaxSlotRank = 8;

/// Calls `f.template operator()<D>()` with D = r, for ranks 0 to kMaxSlotRank: where
/// rank-erased slots meet code written for Tensor<B, D>.
template <class F>
decltype(auto) visit_rank(int r, F&& f) {
  auto go = [&]<int... D>(std::integer_sequence<int, D...>) {
    using R = decltype(f.template operator()<0>());
    if constexpr (std::is_void_v<R>) {
      ((r == D ? (f.template operator()<D>(), true) : false) || ...);
    } else {
      R out{};
      ((r == D ? (out = f.template operator()<D>(), true) : false) || ...);
      return out;
    }
  };
  if (r < 0 || r > kMaxSlotRank)
    throw ValueError("[slot] parameters of rank " + std::to_string(r) +
                     " are not supported (at most " + std::to_string(kMaxSlotRank) + ")");
  return go(std::make_integer_sequence<int, kMaxSlotRank + 1>());
}

/// One parameter or buffer of a module, by path.
class EMBER_API Slot {
 public:
  Slot(std::string path, const void* obj, bool writable, const detail::SlotOps* ops)
      : path_(std::move(path)), obj_(obj), writable_(writable), ops_(ops) {}

  const std::string& path() const { return path_; }
  bool is_param() const { return ops_->is_param; }
  /// The parameter's id (0 for a buffer).
  ParamId id() const { return ops_->id(obj_); }
  /// An empty parameter slot, or a buffer with no value.
  bool empty() const { return ops_->empty(obj_); }
  bool trainable() const { return ops_->trainable(obj_); }
  bool is_initialized() const { return ops_->is_initialized(obj_); }
  Shape shape() const { return ops_->shape(obj_); }
  Device device() const { return ops_->device(obj_); }
  int rank() const { return ops_->rank; }
  /// A floating-point tensor (what optimizers train).
  bool float_kind() const { return ops_->float_kind; }
  /// The value's dtype; for a parameter not initialized yet, its kind's default.
  DType dtype() const { return is_initialized() ? ops_->dtype(obj_) : ops_->kind_default; }
  /// The value's data (a lazy parameter is initialized first).
  TensorData to_data() const { return ops_->to_data(obj_); }
  /// Replaces the value with `d` converted to dtype(), on device(); a parameter keeps its id.
  void set_data(const TensorData& d) const;

  /// Whether the module's backend is B.
  template <Backend B>
  bool on() const {
    return ops_->backend == &detail::kBackendTag<B>;
  }
  /// The value's handle; B must be the module's backend.
  template <Backend B>
  const typename B::Handle& handle() const {
    check_backend(on<B>());
    return *static_cast<const typename B::Handle*>(ops_->handle(obj_));
  }
  /// Replaces the value (a parameter keeps its id and, on Autodiff, becomes a fresh leaf).
  template <Backend B>
  void set_handle(const typename B::Handle& h) const {
    check_backend(on<B>());
    check_writable();
    ops_->set_handle(const_cast<void*>(obj_), &h);
  }

 private:
  void check_backend(bool ok) const;
  void check_writable() const;

  std::string path_;
  const void* obj_;
  bool writable_;
  const detail::SlotOps* ops_;
};

namespace detail {
/// The module's backend when its type names one (backend_t), else void.
template <class M>
struct module_backend {
  using type = void;
};
template <class M>
requires requires { typename backend_t<M>; }
struct module_backend<M> {
  using type = backend_t<M>;
};

template <class B, class M>
std::vector<Slot> collect_slots(const M& m, bool writable) {
  std::vector<Slot> params, buffers;
  auto add = [writable](std::vector<Slot>& out) {
    return [&out, writable](const std::string& path, const auto& x) {
      using P = std::remove_cvref_t<decltype(x)>;
      if constexpr (!std::is_void_v<B> && ParamLike<P>)
        static_assert(std::is_same_v<typename P::Value::backend_type, B>,
                      "a parameter of the module is not on the module's backend");
      out.emplace_back(path, static_cast<const void*>(&x), writable, &detail::SlotOpsFor<P>::ops);
    };
  };
  auto on_param = add(params);
  auto on_buffer = add(buffers);
  walk(std::string(), m, on_param, on_buffer);
  params.insert(params.end(), std::make_move_iterator(buffers.begin()),
                std::make_move_iterator(buffers.end()));
  return params;
}
}  // namespace detail

/// The module's parameters (in declaration order), then its buffers. Slots of a const
/// module cannot be written. With B given, the module must be on backend B (a compile error
/// otherwise: what optimizers ask for). One walk is compiled per module type.
template <class B = void, Module M>
std::vector<Slot> slots(M& m) {
  using U = std::remove_const_t<M>;
  using MB = typename detail::module_backend<U>::type;
  static_assert(std::is_void_v<B> || std::is_void_v<MB> || std::is_same_v<B, MB>,
                "the module's backend is not the optimizer's backend");
  using Check = std::conditional_t<std::is_void_v<MB>, B, MB>;
  return detail::collect_slots<Check>(static_cast<const U&>(m), !std::is_const_v<M>);
}

}  // namespace ember::nn
