// Half-precision storage types: IEEE binary16 (`f16`) and bfloat16 (`bf16`).
// They convert to and from float; arithmetic happens in float.
//
//   ember::f16 h = 1.5f;   float x = h;   // 1.5
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>

// Where the compiler targets F16C (x86-64-v3, ember's default baseline, and above) and knows
// _Float16, the f16 conversions are the hardware's VCVTPS2PH and VCVTPH2PS (round to nearest
// even in the default rounding mode, as below); elsewhere (lower x86 levels, ARM, WebAssembly)
// the portable code below. The two agree on every value; a NaN stays a NaN, its payload is not
// kept the same way (F16C quiets a signalling NaN and keeps the top of a float NaN's payload;
// the portable code makes every float NaN 0x7e00). tests/core/dtype_test.cpp compares them on
// every half and a sweep of floats. A program built for a level without F16C and linked with a
// library built with it has both definitions of these inline functions; they differ only in
// those NaN payloads.
#if defined(__F16C__) && defined(__FLT16_MAX__)
#define EMBER_HALF_F16C 1
#else
#define EMBER_HALF_F16C 0
#endif

namespace ember {

namespace detail {
inline uint16_t float_to_half_bits_portable(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u);  // nan / inf
  if (mag >= 0x477ff000u) return sign | 0x7c00u;  // overflow after rounding
  if (mag < 0x38800000u) {  // subnormal half (or zero): round via float addition
    float a = std::bit_cast<float>(mag) + 0.5f;
    return sign | static_cast<uint16_t>(std::bit_cast<uint32_t>(a) - 0x3f000000u);
  }
  uint32_t odd = (mag >> 13) & 1u;  // round to nearest even
  mag += 0xc8000fffu + odd;         // rebias exponent (-112 << 23) and add rounding bias
  return static_cast<uint16_t>(sign | (mag >> 13));
}
inline float half_bits_to_float_portable(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {  // zero or subnormal: value = man * 2^-24
    float v = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}
inline uint16_t float_to_half_bits(float f) {
#if EMBER_HALF_F16C
  return std::bit_cast<uint16_t>(static_cast<_Float16>(f));
#else
  return float_to_half_bits_portable(f);
#endif
}
inline float half_bits_to_float(uint16_t h) {
#if EMBER_HALF_F16C
  return static_cast<float>(std::bit_cast<_Float16>(h));
#else
  return half_bits_to_float_portable(h);
#endif
}
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);                    // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}
inline float bf16_bits_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }
}  // namespace detail

/// IEEE 754 binary16.
struct f16 {
  uint16_t bits = 0;
  f16() = default;
  f16(float f) : bits(detail::float_to_half_bits(f)) {}  // NOLINT(google-explicit-constructor)
  f16(double f) : f16(static_cast<float>(f)) {}          // NOLINT(google-explicit-constructor)
  template <class I>
  requires std::is_integral_v<I> f16(I i)
      : f16(static_cast<float>(i)) {}  // NOLINT(google-explicit-constructor)
  operator float() const { return detail::half_bits_to_float(bits); }  // NOLINT
  static f16 from_bits(uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
};

/// bfloat16: the upper half of an IEEE float.
struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  bf16(float f) : bits(detail::float_to_bf16_bits(f)) {}  // NOLINT(google-explicit-constructor)
  bf16(double f) : bf16(static_cast<float>(f)) {}         // NOLINT(google-explicit-constructor)
  template <class I>
  requires std::is_integral_v<I> bf16(I i)
      : bf16(static_cast<float>(i)) {}  // NOLINT(google-explicit-constructor)
  operator float() const { return detail::bf16_bits_to_float(bits); }  // NOLINT
  static bf16 from_bits(uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
};

}  // namespace ember
