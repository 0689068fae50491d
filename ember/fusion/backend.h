// The interface Fusion<B> (ember/fusion/fusion.h) asks of the backend it decorates, and which
// ops it records. A backend that satisfies `FusedBackend` runs each recorded program as one
// kernel; one that also satisfies `EpilogueBackend` runs a matmul with the program after it.
//
//   static_assert(ember::fusion::FusedBackend<ember::Cpu>);       // its programs, in blocks
//   static_assert(!ember::fusion::EpilogueBackend<ember::Cpu>);   // matmuls run when called
//   ember::TensorMeta x{ember::Shape{4}, ember::DType::F32};
//   bool r = ember::fusion::records({ember::OpCode::Exp, {}}, &x, x);  // true: recorded
#pragma once
#include <concepts>
#include <optional>
#include <span>
#include <vector>

#include "ember/backend/backend.h"
#include "ember/core/export.h"
#include "ember/fusion/program.h"

namespace ember::fusion {

/// A backend that runs fused programs as kernels. `can_fuse` says whether an op (already
/// validated) may join a program; `run_fused` runs one and returns its outputs in order (it
/// may write an output into an input it received as the sole owner).
template <class B>
concept FusedBackend = requires(const Program& p, std::span<typename B::Handle> in, Device dev,
                                const Op& op, std::span<const TensorMeta* const> metas,
                                const TensorMeta& m) {
  { B::can_fuse(op, metas, m) } -> std::same_as<bool>;
  { B::run_fused(p, in, dev) } -> std::same_as<std::vector<typename B::Handle>>;
};

/// A FusedBackend that runs a matmul with steps of the program that reads its product as the
/// GEMM's epilogue (a bias, a residual, a relu: CUDA). `run_epilogue(mm, ab, p, product, in,
/// dev)`: `mm` of `ab` makes input `product` of `p` (in[product] is an empty handle); returns
/// p's outputs as run_fused does, or nullopt, having run nothing, when it has no such GEMM.
/// Fusion defers a matmul on such a backend until the op after it shows whether it can.
template <class B>
concept EpilogueBackend = FusedBackend<B> && requires(const Op& mm, std::span<typename B::Handle> h,
                                                      const Program& p, int product, Device dev) {
  {
    B::run_epilogue(mm, h, p, product, h, dev)
    } -> std::same_as<std::optional<std::vector<typename B::Handle>>>;
};

/// Composites with one elementwise expression (gelu, silu): Fusion runs them as one step.
EMBER_API bool elementwise_composite(OpCode c);
/// Whether Fusion records `op` (validated; `in0` its first input's meta, null for none):
/// unary, binary, compare, where and cast ops, gelu and silu, and one-element fulls (a
/// constant the program takes as an argument). Larger fulls, and ops that check their operands'
/// values when they run (integer division and remainder reject a zero divisor), run at once,
/// so that an allocation or value error comes from the call that made it; so do the dense
/// copies of contiguous().
EMBER_API bool records(const Op& op, const TensorMeta* in0, const TensorMeta& out);

}  // namespace ember::fusion
