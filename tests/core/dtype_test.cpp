#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ember/core/cast.h"
#include "ember/core/dtype.h"
#include "ember/core/error.h"

using namespace ember;

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    EXPECT_EQ(dtype_from_name(name(t)), t);
  }
  EXPECT_THROW(dtype_from_name("f128"), DTypeError);
  EXPECT_EQ(size_of(DType::BF16), 2);
  EXPECT_EQ(size_of(DType::I64), 8);
  EXPECT_TRUE(is_float(DType::F16));
  EXPECT_TRUE(is_int(DType::U8));
  EXPECT_FALSE(is_int(DType::Bool));
}

// Reference values of IEEE half and bfloat16 encodings (from the IEEE 754 tables).
TEST(Half, KnownEncodings) {
  EXPECT_EQ(f16(1.0f).bits, 0x3c00);
  EXPECT_EQ(f16(-2.0f).bits, 0xc000);
  EXPECT_EQ(f16(65504.0f).bits, 0x7bff);                // largest finite half
  EXPECT_EQ(f16(65520.0f).bits, 0x7c00);                // rounds to inf
  EXPECT_EQ(f16(5.960464477539063e-08f).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(f16(0.1f).bits, 0x2e66);
  EXPECT_TRUE(std::isnan(static_cast<float>(f16(NAN))));
  EXPECT_EQ(static_cast<float>(f16::from_bits(0x3555)), 0.333251953125f);
  EXPECT_EQ(bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bf16(3.140625f).bits, 0x4049);
  EXPECT_EQ(static_cast<float>(bf16::from_bits(0x4049)), 3.140625f);
  // round to nearest even at the halfway point
  EXPECT_EQ(bf16(std::bit_cast<float>(0x3f808000u)).bits, 0x3f80);
  EXPECT_EQ(bf16(std::bit_cast<float>(0x3f818000u)).bits, 0x3f82);
}

TEST(Half, RoundTripsEveryHalf) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    f16 h = f16::from_bits(static_cast<uint16_t>(b));
    float f = h;
    if (std::isnan(f)) continue;
    EXPECT_EQ(f16(f).bits, b) << "bits " << b;
  }
}

// The conversions in use (F16C's instructions where the build targets them) against the
// portable code, which the test above and KnownEncodings check against IEEE's tables: every half
// to float, and floats near every half, halfway between neighbours, past the largest finite
// half, in the subnormal range and below it, both signs, to half.
TEST(Half, ConversionsMatchThePortableCode) {
  if (!EMBER_HALF_F16C) GTEST_SKIP() << "built without F16C: the conversions are the portable code";
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = static_cast<uint16_t>(b);
    const float want = detail::half_bits_to_float_portable(h), got = detail::half_bits_to_float(h);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "bits " << b;
      continue;
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << "bits " << b;
  }
  int64_t checked = 0;
  auto check = [&](float f) {
    const uint16_t want = detail::float_to_half_bits_portable(f);
    const uint16_t got = detail::float_to_half_bits(f);
    ++checked;
    if (std::isnan(f)) {
      EXPECT_TRUE((got & 0x7c00u) == 0x7c00u && (got & 0x3ffu) != 0) << f;
      EXPECT_EQ(got & 0x8000u, want & 0x8000u);
      return;
    }
    EXPECT_EQ(got, want) << "float bits " << std::bit_cast<uint32_t>(f);
  };
  // Around every finite half: the float itself, its neighbours, the halfway points.
  for (uint32_t b = 0; b < 0x7c00; ++b) {
    const uint32_t x = std::bit_cast<uint32_t>(detail::half_bits_to_float_portable(uint16_t(b)));
    for (uint32_t sign : {0u, 0x80000000u})
      for (int d = -2; d <= 2; ++d) check(std::bit_cast<float>((x + uint32_t(d)) | sign));
    const float next = detail::half_bits_to_float_portable(uint16_t(b + 1));
    const float mid = (detail::half_bits_to_float_portable(uint16_t(b)) + next) / 2;
    check(mid);
    check(-mid);
  }
  // A stride over all float bit patterns (every exponent, NaNs and infinities included).
  for (uint64_t x = 0; x <= 0xffffffffu; x += 4093) check(std::bit_cast<float>(uint32_t(x)));
  EXPECT_GT(checked, 1000000);
}

TEST(Cast, DefinedForEveryInput) {
  EXPECT_EQ(cast_value<int32_t>(NAN), 0);
  EXPECT_EQ(cast_value<int32_t>(1e20), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(cast_value<int8_t>(-1e9f), -128);
  EXPECT_EQ(cast_value<int64_t>(-2.7), -2);
  EXPECT_EQ(cast_value<bool>(0.5f), true);
  EXPECT_EQ(cast_value<uint8_t>(f16(3.0f)), 3);
  EXPECT_FLOAT_EQ(static_cast<float>(cast_value<bf16>(int64_t{7})), 7.0f);
}
