// Ops as data. An `Op` is an op code from the op table plus its attributes; every backend
// runs ops through one entry point, `B::run(op, inputs, out_meta, device)`, so decorators
// (Autodiff, Fusion, Remote, Dispatch) handle every op generically.
//
//   Op op{OpCode::Sum};  op.attrs.dims = {1};  op.attrs.flag = true;   // sum over dim 1, keepdim
//   const TensorMeta* in[] = {&x_meta};
//   TensorMeta out = infer(op, in);                                   // validates, or throws
//   name(OpCode::LogSoftmax) == "log_softmax";
#pragma once
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ember/core/dtype.h"
#include "ember/core/export.h"
#include "ember/core/shape.h"

namespace ember {

enum class OpCode : uint16_t {
#define EMBER_OP(code, ...) code,
#include "ember/ops/op_table.def"
#undef EMBER_OP
};
inline constexpr int kNumOps = 0
#define EMBER_OP(...) +1
#include "ember/ops/op_table.def"
#undef EMBER_OP
    ;

enum class OpFamily : uint8_t {
  Create,
  Unary,
  Binary,
  Compare,
  Where,
  Cast,
  Reduce,
  Scan,
  Sort,
  Movement,
  Index,
  Matmul,
  Spatial,
  Composite
};
/// Element types an op accepts for its first input.
enum class Accepts : uint8_t { Float, Numeric, Integer, Bool, Any };
/// How the output element type is chosen.
enum class ResultType : uint8_t { Same, ToBool, ToI64, ToI32, Attr };

/// What a gradient rule needs kept from the forward pass.
enum class Save : uint8_t { None, X, Y, XY };

struct OpInfo {
  std::string_view name;
  OpFamily family;
  int arity;  // -1: variadic
  Accepts accepts;
  ResultType result;
  Save save;
  bool differentiable;
  /// Differentiated through its decomposition (grad column DECOMPOSE): with gradients
  /// tracked, Autodiff runs the decomposition itself, so the graph holds its primitive ops.
  bool grad_by_decomposition;
};

EMBER_API const OpInfo& info(OpCode c);
inline std::string_view name(OpCode c) { return info(c).name; }
/// The op with this name; throws ValueError if there is none.
EMBER_API OpCode op_from_name(std::string_view s);
/// Elementwise ops (unary, binary, compare, where, cast): what Fusion fuses into one kernel.
EMBER_API bool is_elementwise(OpCode c);

/// A number that keeps integers exact (an int64 fill value survives a round trip).
struct Scalar {
  double f = 0;
  int64_t i = 0;
  bool is_int = false;

  Scalar() = default;
  Scalar(double v) : f(v), i(saturate(v)) {}           // NOLINT(google-explicit-constructor)
  Scalar(float v) : Scalar(static_cast<double>(v)) {}  // NOLINT(google-explicit-constructor)
  template <class I>
  requires std::is_integral_v<I> Scalar(I v)
      : f(static_cast<double>(v)), i(static_cast<int64_t>(v)), is_int(true) {}  // NOLINT
  /// v truncated to int64, saturating (NaN gives 0): a double out of range is no UB.
  static int64_t saturate(double v) {
    if (!(v == v)) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return static_cast<int64_t>(v);
  }
  template <class T>
  T as() const {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(is_int ? i : saturate(f));
    else
      return T(f);
  }
  /// Bitwise on the float: attributes are equal when they encode alike (NaN equals NaN).
  friend bool operator==(const Scalar& a, const Scalar& b) {
    return std::bit_cast<uint64_t>(a.f) == std::bit_cast<uint64_t>(b.f) && a.i == b.i &&
           a.is_int == b.is_int;
  }
};

/// The sliding window of a spatial op (conv, pooling, unfold/fold) on [N, C, *spatial]
/// tensors: one entry per spatial dim. `infer` fills what the caller left empty (stride 1,
/// or the kernel for pools; padding 0; dilation 1) and repeats a single entry for every dim.
struct Window {
  Dims kernel;             // pools, unfold, fold, conv_weight_grad; conv: filled from the weight
  Dims stride;             // > 0
  Dims padding;            // >= 0, added on both sides of each dim
  Dims dilation;           // > 0, the spacing of the kernel's taps
  Dims output_padding;     // conv_transpose: extra size at the end of each output dim
  int64_t groups = 1;      // conv*: channels split into this many independent groups
  bool ceil_mode = false;  // pools: output size rounds up instead of down
  bool count_include_pad = true;  // avg_pool: padding counts in the divisor
  friend bool operator==(const Window&, const Window&) = default;
};

/// How interpolate maps output positions to input positions (torch.nn.functional.interpolate).
/// Nearest: floor(o * in / out); NearestExact: floor((o + 0.5) * in / out), as PyTorch's
/// "nearest-exact"; Linear and Cubic as "(bi/tri)linear" and "bicubic". Area (PyTorch's
/// "area") is adaptive average pooling: ember::interpolate runs that op for it.
enum class InterpMode : uint8_t { Nearest, Linear, Cubic, NearestExact, Area };
/// The modes the interpolate op itself runs (all but Area).
inline constexpr int kNumInterpModes = 4;

/// Attributes; each op uses the fields its table row names and leaves the rest at default.
struct OpAttrs {
  Dims shape;      // Full, Random*, Reshape, Expand: a target shape; Arange: {count};
                   // spatial ops: the output's spatial size where the inputs do not fix it
  Dims dims;       // Permute: order; Sum..Min, Flip: dims; Slice/SliceAssign: starts
  Dims ends;       // Slice/SliceAssign: ends (exclusive, already clamped)
  Dims steps;      // Slice/SliceAssign: steps (> 0)
  Scalar scalar;   // Full: value; Arange: start; Random*: low / mean / p
  Scalar scalar2;  // Arange: step; Random*: high / std
  int64_t dim = 0;
  DType dtype = DType::F32;
  bool flag = false;  // keepdim, descending, scatter-add, align_corners
  uint64_t seed = 0;
  Window window;                            // spatial ops: conv, pooling, unfold, fold
  InterpMode interp = InterpMode::Nearest;  // interpolate
  friend bool operator==(const OpAttrs&, const OpAttrs&) = default;

  // Out of line (op.cpp): every op call copies or moves attributes, and inline these would be
  // compiled into every program.
  EMBER_API OpAttrs();
  EMBER_API OpAttrs(const OpAttrs&);
  EMBER_API OpAttrs(OpAttrs&&) noexcept;
  EMBER_API OpAttrs& operator=(const OpAttrs&);
  EMBER_API OpAttrs& operator=(OpAttrs&&) noexcept;
  EMBER_API ~OpAttrs();
};

/// How the pad op fills what it adds (attrs.dim of OpCode::Pad), as torch.nn.functional.pad.
enum class PadMode : int64_t {
  Constant = 0,   // attrs.scalar
  Reflect = 1,    // mirrored about the edge, the edge itself not repeated: needs pad < size
  Replicate = 2,  // the edge value repeated
  Circular = 3,   // wrapped around from the other end: needs pad <= size
};
EMBER_API std::string_view name(PadMode m);

struct Op {
  OpCode code;
  OpAttrs attrs;
  friend bool operator==(const Op&, const Op&) = default;
};

struct TensorMeta {
  Shape shape;
  DType dtype = DType::F32;
  friend bool operator==(const TensorMeta&, const TensorMeta&) = default;
};

/// Validates `op` on inputs with these metas, normalizes its attributes (negative dims wrapped,
/// slice bounds clamped, -1 in shapes resolved) and returns the output meta. This is the one
/// place shapes, dtypes, dims and indices are checked: every error names the op and shows
/// the shapes. Backends assume valid input.
EMBER_API TensorMeta infer(Op& op, std::span<const TensorMeta* const> inputs);

class MemoryError;
namespace detail {
/// "[op] <what> for output <shape> <dtype> (<n> bytes)": an allocation failure, with the op and
/// the output it was making.
EMBER_API MemoryError memory_error(const Op& op, const TensorMeta& out, std::string_view what,
                                   int64_t bytes);
}  // namespace detail

}  // namespace ember
