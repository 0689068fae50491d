// Internal to Fusion<B> (ember/fusion/fusion.h): what it keeps per device. A lazy tensor is a
// value or a step of the device's stream; the stream holds the program being recorded and the
// segments closed before it (programs, views, deferred matmuls), which run in order at a flush.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/fusion/program.h"
#include "ember/ops/op.h"

namespace ember::fusion::detail {

/// A tensor of Fusion<B>: its value, or its step in the device's stream.
template <class H>
struct LazyTensor {
  LazyTensor(TensorMeta m, Device d) : meta(std::move(m)), device(d) {}
  TensorMeta meta;
  Device device;
  std::optional<H> value;
  int32_t step = -1;
  uint64_t generation = 0;
  std::shared_ptr<const std::string> error;  // the program that should have made it failed
};

/// The ops recorded on one device since its last flush: the program being recorded, and the
/// programs closed before it (by an op of another shape, a bound, or an op after a reduction),
/// which run in order at the flush.
template <class H>
struct Stream {
  // An op as recorded: the ops Fusion records have no attributes but a full's value and a
  // cast's dtype (the meta's), so the op itself is not kept.
  struct Entry {
    OpCode code = OpCode::Add;
    Scalar value;  // Full
    std::array<Ref, 3> args{};
    int arity = 0;
    TensorMeta meta;
    std::weak_ptr<LazyTensor<H>> owner;
  };
  std::mutex mu;
  uint64_t generation = 1;
  bool has_shape = false;  // constants alone do not fix the shape
  Shape shape;
  // A reduction of one of the entries (`value`), run at the end of the program.
  struct PendingReduction {
    Op op;
    int32_t value = 0;
    TensorMeta meta;
    std::weak_ptr<LazyTensor<H>> owner;
  };
  // A reshape of a value a program makes, run after it.
  struct View {
    Op op;
    std::shared_ptr<LazyTensor<H>> source;
    std::weak_ptr<LazyTensor<H>> owner;
  };
  // A matmul whose product the program after it may take as its GEMM's epilogue.
  struct Product {
    Op op;
    std::array<std::shared_ptr<LazyTensor<H>>, 2> operands;
    std::weak_ptr<LazyTensor<H>> owner;
  };
  // A program's record: its entries (steps and constants), its inputs (values, or values
  // that earlier closed programs make), its reduction. Or a view or a product (no entries).
  struct Segment {
    uint64_t generation = 0;
    bool has_shape = false;
    Shape shape;
    std::vector<Entry> entries;
    std::vector<std::shared_ptr<LazyTensor<H>>> inputs;
    std::optional<PendingReduction> reduction;
    std::optional<View> view;
    std::optional<Product> product;
  };
  std::vector<Entry> entries;
  std::vector<std::shared_ptr<LazyTensor<H>>> inputs;
  std::optional<PendingReduction> reduction;
  std::vector<Segment> closed;
};

[[noreturn]] EMBER_API void throw_failed(const std::string& why);

}  // namespace ember::fusion::detail
