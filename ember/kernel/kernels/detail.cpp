#include "ember/kernel/kernels/detail.h"

#include <limits>

namespace ember::kernel::detail {

void grid_loop(KernelBuilder& kb, const Val& n, const std::function<void(Val)>& body) {
  ScalarType ix = n.type().scalar;
  Val first = kb.cast(kb.global_id(0), ix);
  Val stride = kb.cast(kb.num_groups(0), ix) * kb.cast(kb.local_size(0), ix);
  kb.for_(first, n, stride, body);
}

std::vector<Val> scalars(KernelBuilder& kb, const std::string& prefix, int rank, ScalarType ix) {
  std::vector<Val> v;
  for (int d = 0; d < rank; ++d) v.push_back(kb.scalar(prefix + std::to_string(d), ix));
  return v;
}

std::vector<Val> coords(const Val& i, const std::vector<Val>& shape) {
  std::vector<Val> c(shape.size());
  Val rest = i;
  for (size_t d = shape.size(); d-- > 0;) {
    if (d == 0) {
      c[d] = rest;
    } else {
      c[d] = rest % shape[d];
      rest = rest / shape[d];
    }
  }
  return c;
}

Val offset(const std::vector<Val>& coord, const std::vector<Val>& strides) {
  Val off;
  for (size_t d = 0; d < coord.size(); ++d) {
    Val t = coord[d] * strides[d];
    off = off.valid() ? off + t : t;
  }
  return off;
}

namespace {
// The range of an integer type, as doubles.
std::pair<double, double> int_range(ScalarType t) {
  switch (t) {
    case ScalarType::I8:
      return {-128.0, 127.0};
    case ScalarType::U8:
      return {0.0, 255.0};
    case ScalarType::I16:
      return {-32768.0, 32767.0};
    case ScalarType::I32:
      return {-2147483648.0, 2147483647.0};
    case ScalarType::U32:
      return {0.0, 4294967295.0};
    default:
      return {-9223372036854775808.0, 9223372036854775807.0};
  }
}
}  // namespace

Val convert(KernelBuilder& kb, const Val& v0, ScalarType to) {
  Val v = v0;
  ScalarType from = v.type().scalar;
  if (from == to) return v;
  if (is_half(from)) {
    v = kb.cast(v, ScalarType::F32);
    from = ScalarType::F32;
    if (to == ScalarType::F32) return v;
  }
  if (!is_float(from) || !is_int(to)) return kb.cast(v, to);
  // float -> int: the bounds as the source type rounds them (2^31 for i32 in f32), compared
  // before the conversion so that it never sees a value out of range.
  auto [lo_d, hi_d] = int_range(to);
  Type ft = v.type();
  Val lo = kb.lit(ft, lo_d), hi = kb.lit(ft, hi_d);
  Val below = v <= lo, above = v >= hi, nan = kb.is_nan(v);
  Val zero_f = kb.lit(ft, 0);
  Val safe = kb.select(below || above || nan, zero_f, v);
  Val c = kb.cast(safe, to);
  Type it = c.type();
  Val min_v = to == ScalarType::I64 ? kb.lit_int(it, std::numeric_limits<int64_t>::min())
                                    : kb.lit(it, lo_d);
  Val max_v = to == ScalarType::I64 ? kb.lit_int(it, std::numeric_limits<int64_t>::max())
                                    : kb.lit(it, hi_d);
  return kb.select(below, min_v, kb.select(above, max_v, kb.select(nan, kb.lit(it, 0), c)));
}

U64 u64_const(KernelBuilder& kb, uint64_t v) {
  return {kb.lit_int(ScalarType::U32, static_cast<int64_t>(v & 0xffffffffu)),
          kb.lit_int(ScalarType::U32, static_cast<int64_t>(v >> 32))};
}

U64 u64_from_index(KernelBuilder& kb, const Val& i) {
  if (i.type().scalar != ScalarType::I64)
    return {kb.cast(i, ScalarType::U32), kb.lit(ScalarType::U32, 0)};
  return {kb.cast(i, ScalarType::U32), kb.cast(i >> 32.0, ScalarType::U32)};
}

U64 u64_add(KernelBuilder& kb, const U64& a, const U64& b) {
  Val lo = a.lo + b.lo;
  Val carry = kb.select(lo < a.lo, kb.lit(ScalarType::U32, 1), kb.lit(ScalarType::U32, 0));
  return {lo, a.hi + b.hi + carry};
}

U64 u64_mul(KernelBuilder& kb, const U64& a, const U64& b) {
  return {a.lo * b.lo, kb.mul_hi(a.lo, b.lo) + a.lo * b.hi + a.hi * b.lo};
}

U64 u64_xor(const U64& a, const U64& b) { return {a.lo ^ b.lo, a.hi ^ b.hi}; }

U64 u64_shr(KernelBuilder&, const U64& a, int k) {
  return {(a.lo >> double(k)) | (a.hi << double(32 - k)), a.hi >> double(k)};
}

U64 u64_shl(KernelBuilder&, const U64& a, int k) {
  return {a.lo << double(k), (a.hi << double(k)) | (a.lo >> double(32 - k))};
}

U64 rng_mix64(KernelBuilder& kb, U64 x) {
  x = u64_add(kb, x, u64_const(kb, 0x9e3779b97f4a7c15ull));
  x = u64_mul(kb, u64_xor(x, u64_shr(kb, x, 30)), u64_const(kb, 0xbf58476d1ce4e5b9ull));
  x = u64_mul(kb, u64_xor(x, u64_shr(kb, x, 27)), u64_const(kb, 0x94d049bb133111ebull));
  return u64_xor(x, u64_shr(kb, x, 31));
}

U64 rng_bits(KernelBuilder& kb, const U64& seed, const U64& counter) {
  return rng_mix64(kb, u64_xor(seed, rng_mix64(kb, counter)));
}

Val rng_uniform01(KernelBuilder& kb, const U64& seed, const U64& counter) {
  U64 b = rng_bits(kb, seed, counter);
  Val high21 = kb.cast(b.hi >> 11.0, ScalarType::F64);
  Val low32 = kb.cast((b.hi << 21.0) | (b.lo >> 11.0), ScalarType::F64);
  return (high21 * 4294967296.0 + low32) * 0x1.0p-53;
}

}  // namespace ember::kernel::detail
