// Internal: pieces the op kernels share (index types, grid-stride loops, strided offsets,
// conversions with the CPU backend's rules, 64-bit integers as u32 pairs).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"
#include "ember/ops/op.h"

namespace ember::kernel::detail {

inline ScalarType index_type(bool wide) { return wide ? ScalarType::I64 : ScalarType::I32; }

inline std::string kname(std::string_view op, DType t, bool wide, const std::string& extra = "") {
  return std::string(op) + "_" + std::string(name(t)) + extra + (wide ? "_i64" : "");
}

/// The type arithmetic on `t` is done in: f32 for f16/bf16, `t` otherwise.
inline ScalarType compute_type(ScalarType t) { return is_half(t) ? ScalarType::F32 : t; }

/// for (i = global id; i < n; i += all threads) body(i), in index type ix.
void grid_loop(KernelBuilder& kb, const Val& n, const std::function<void(Val)>& body);

/// Scalar parameters `prefix0 .. prefix{rank-1}` of type ix.
std::vector<Val> scalars(KernelBuilder& kb, const std::string& prefix, int rank, ScalarType ix);

/// Row-major coordinates of linear index i in `shape` (coord[0] absorbs what is left).
std::vector<Val> coords(const Val& i, const std::vector<Val>& shape);
/// sum coord[d] * strides[d].
Val offset(const std::vector<Val>& coord, const std::vector<Val>& strides);

/// `v` converted to `to` exactly as ember::cast_value does on the CPU: float to int truncates,
/// saturates and maps NaN to 0; anything to bool is `!= 0`; half types go through f32.
Val convert(KernelBuilder& kb, const Val& v, ScalarType to);

/// A 64-bit unsigned integer as two u32 halves (targets without 64-bit ints run it too).
struct U64 {
  Val lo, hi;
};
U64 u64_const(KernelBuilder& kb, uint64_t v);
/// i (i32 or i64, >= 0) as a U64.
U64 u64_from_index(KernelBuilder& kb, const Val& i);
U64 u64_add(KernelBuilder& kb, const U64& a, const U64& b);
U64 u64_mul(KernelBuilder& kb, const U64& a, const U64& b);
U64 u64_xor(const U64& a, const U64& b);
U64 u64_shr(KernelBuilder& kb, const U64& a, int k);  // 0 < k < 32
U64 u64_shl(KernelBuilder& kb, const U64& a, int k);  // 0 < k < 32

/// ember::rng's stream (rng.h): splitmix64 mix, bits(seed, i), uniform01 in f64.
U64 rng_mix64(KernelBuilder& kb, U64 x);
U64 rng_bits(KernelBuilder& kb, const U64& seed, const U64& counter);
Val rng_uniform01(KernelBuilder& kb, const U64& seed, const U64& counter);

/// The parameters of a batched matmul kernel, declared in the order matmul.h gives: a, b, c
/// (element type t, each buffer's alignment in elements), m, n, k, batch, then a's strides
/// (batch, row, column) and b's, of index type ix.
struct MatmulParams {
  Mem a, b, c;
  Val m, n, k, batch, sab, sar, sac, sbb, sbr, sbc;
};
inline MatmulParams matmul_params(KernelBuilder& kb, ScalarType t, ScalarType ix, int align_a,
                                  int align_b, int align_c) {
  MatmulParams p;
  p.a = kb.buffer("a", t, Access::Read, align_a);
  p.b = kb.buffer("b", t, Access::Read, align_b);
  p.c = kb.buffer("c", t, Access::Write, align_c);
  p.m = kb.scalar("m", ix), p.n = kb.scalar("n", ix), p.k = kb.scalar("k", ix);
  p.batch = kb.scalar("batch", ix);
  p.sab = kb.scalar("a_batch_stride", ix), p.sar = kb.scalar("a_row_stride", ix);
  p.sac = kb.scalar("a_col_stride", ix);
  p.sbb = kb.scalar("b_batch_stride", ix), p.sbr = kb.scalar("b_row_stride", ix);
  p.sbc = kb.scalar("b_col_stride", ix);
  return p;
}

/// The K loop of a tiled matmul with two shared buffers: load(k0) reads step k0's tiles from
/// global memory (into registers: a list of staged values), store(staged, buffer) writes them
/// to shared buffer 0 or 1, multiply(buffer) multiplies a buffer's tiles into the sums. Step
/// 0 is staged first; then each step reads the next one's tiles before multiplying its own and
/// writes them to the other buffer after, one barrier a step. Declares the variable "flip".
template <class Load, class Store, class Multiply>
void double_buffered_steps(KernelBuilder& kb, const Val& k, int depth, Load&& load, Store&& store,
                           Multiply&& multiply) {
  ScalarType ix = k.type().scalar;
  Val zero = kb.lit(ix, 0);
  Var flip = kb.var("flip", ix);  // which buffer holds this step's tiles: 0 or 1
  store(load(zero), zero);
  flip.set(zero);
  kb.barrier();
  kb.for_(zero, k, kb.lit(ix, depth), [&](Val k0) {
    Val cur = flip.get();
    auto next = load(k0 + double(depth));  // zeros past the end
    multiply(cur);
    Val other = kb.lit(ix, 1) - cur;
    store(next, other);
    flip.set(other);
    kb.barrier();
  });
}

[[noreturn]] inline void unsupported(std::string_view op, const std::string& what) {
  throw ValueError("[" + std::string(op) + "] " + what);
}

}  // namespace ember::kernel::detail
