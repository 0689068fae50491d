// A fused program: the elementwise ops Fusion<B> recorded between two flushes, as one unit a
// backend runs as one kernel. Every output has the program's shape; inputs broadcast to it
// (numpy rules); constants (Full ops) are arguments of the kernel, not part of its code, so a
// changed learning rate or a new step's bias correction reuses the compiled kernel. A program
// may end in one reduction (sum, max or min over some dims) of one of its values: the
// elementwise steps are its prologue, computed as the reduction reads them, and the value
// itself is written only when it is also an output.
//
//   fusion::Program p;
//   p.shape = Shape{1024};
//   p.inputs = {{Shape{1024}, DType::F32}, {Shape{1024}, DType::F32}};
//   int c = p.constant(0.5, DType::F32);                       // step 0: a kernel argument
//   int m = p.step(OpCode::Mul, DType::F32, {p.input(0), p.input(1)});
//   int y = p.step(OpCode::Mul, DType::F32, {m, c});
//   p.outputs = {y};
//   p.signature();   // what a compiled kernel is cached under (shapes and values left out)
//   p.dump();        // "fused [1024] (3 steps, 1 outputs)", then one line a step
//   Op sum{OpCode::Sum, {}};                                   // and the sum of y as well:
//   p.reduction = fusion::Reduction{sum, y, {Shape{}, DType::F32}};
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/core/shape.h"
#include "ember/ops/op.h"

namespace ember::fusion {

/// An operand: an input of the program (negative: input -(ref + 1)) or an earlier step (>= 0).
using Ref = int32_t;

struct Step {
  OpCode code = OpCode::Add;  // an elementwise op, Gelu, Silu, Cast, Where or Full
  DType dtype = DType::F32;   // of the step's value
  int8_t arity = 0;
  std::array<Ref, 3> args{0, 0, 0};
  int32_t constant = -1;  // Full: its index in Program::constants
};

/// A reduction that ends a program: `op` (sum, max or min, with its dims and keepdim) of the
/// value of step `value`, whose result is `out`. A backend returns it after the outputs.
struct Reduction {
  Op op;
  int32_t value = 0;
  TensorMeta out;
};

struct EMBER_API Program {
  Shape shape;
  std::vector<TensorMeta> inputs;
  std::vector<Step> steps;
  std::vector<int32_t> outputs;  // steps whose values are written, in order
  std::vector<Scalar> constants;
  std::optional<Reduction> reduction;

  static Ref input(int i) { return -(i + 1); }
  static bool is_input(Ref r) { return r < 0; }
  static int input_index(Ref r) { return -r - 1; }
  /// Appends a step; returns its ref.
  Ref step(OpCode code, DType dtype, std::initializer_list<Ref> args);
  /// Appends a Full step whose value is a kernel argument; returns its ref.
  Ref constant(Scalar value, DType dtype);
  /// The structure: steps, operands, dtypes, input dtypes, outputs and the reduction's op and
  /// value; not the shape, the reduced dims and not the constants' values. Two programs with one
  /// signature compile to one kernel (the backend adds its layout: dense or strided, the rank).
  std::string signature() const;
  /// One line per step, for EMBER_FUSION_DUMP and errors.
  std::string dump() const;
  /// The ops' names, "mul, add, gelu, exp" (and the reduction's last: "mul, sum").
  std::string op_names() const;
  /// What errors of the program say: "(in a fused program of mul, add on [64, 256])".
  std::string where() const;
};

/// Whether Fusion may end a program with `op` (validated) on an input of its shape: sum, max
/// or min of a float tensor (the backend's can_fuse decides too).
EMBER_API bool reduction_fusible(const Op& op, const TensorMeta& in);
/// The dtype a step computes its operands in (its first operand's).
EMBER_API DType operand_dtype(const Program& p, Ref r);
/// A full op of `meta`'s shape and dtype with value `v`.
EMBER_API Op full_op(Scalar v, const TensorMeta& meta);
/// Step `i` as an op for a backend's run: the ops Fusion records carry no attributes but a
/// cast's dtype and a full's value; a full is one element of rank `constant_rank`.
EMBER_API Op step_op(const Program& p, size_t i, size_t constant_rank);

}  // namespace ember::fusion
