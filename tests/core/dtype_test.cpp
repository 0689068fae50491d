#include <gtest/gtest.h>

#include <cmath>
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

TEST(Cast, DefinedForEveryInput) {
  EXPECT_EQ(cast_value<int32_t>(NAN), 0);
  EXPECT_EQ(cast_value<int32_t>(1e20), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(cast_value<int8_t>(-1e9f), -128);
  EXPECT_EQ(cast_value<int64_t>(-2.7), -2);
  EXPECT_EQ(cast_value<bool>(0.5f), true);
  EXPECT_EQ(cast_value<uint8_t>(f16(3.0f)), 3);
  EXPECT_FLOAT_EQ(static_cast<float>(cast_value<bf16>(int64_t{7})), 7.0f);
}
