#include "core/util/half.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "gtest/gtest.h"

namespace quantd {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

TEST(HalfTest, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(h & 0x7c00u, 0x7c00u) << h;
      EXPECT_NE(h & 0x3ffu, 0u) << h;
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f)))) << h;
      continue;
    }
    EXPECT_EQ(FloatToHalf(f), h) << h;
  }
}

// Hand-derived: half = (-1)^s * 2^(e-15) * 1.m, subnormals 2^-14 * 0.m.
TEST(HalfTest, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(HalfToFloat(0x0000), 0.0f);
  EXPECT_EQ(Bits(HalfToFloat(0x8000)), 0x80000000u);  // -0
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);               // largest finite
  EXPECT_EQ(HalfToFloat(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(HalfToFloat(0x7c00), inf);
  EXPECT_EQ(HalfToFloat(0xfc00), -inf);
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));

  EXPECT_EQ(FloatToHalf(inf), 0x7c00);
  EXPECT_EQ(FloatToHalf(-inf), 0xfc00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::quiet_NaN()) & 0x7e00,
            0x7e00);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);                   // overflow -> inf
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -26)), 0x0000);  // underflow -> 0
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);
}

TEST(HalfTest, FloatToHalfRoundsToNearestEven) {
  // Between 1 (0x3c00) and 1 + 2^-10 (0x3c01): ties go to the even one.
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(FloatToHalf(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)),
            0x3c01);
  // 65504 + 16 is the tie between the largest finite and 65536: to inf.
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(FloatToHalf(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  // Subnormals: 1.5 * 2^-24 ties to 2 * 2^-24, 2.5 * 2^-24 to 2 * 2^-24.
  EXPECT_EQ(FloatToHalf(1.5f * std::ldexp(1.0f, -24)), 0x0002);
  EXPECT_EQ(FloatToHalf(2.5f * std::ldexp(1.0f, -24)), 0x0002);
  EXPECT_EQ(FloatToHalf(0.5f * std::ldexp(1.0f, -24)), 0x0000);
  EXPECT_EQ(FloatToHalf(std::nextafter(0.5f * std::ldexp(1.0f, -24), 1.0f)),
            0x0001);
  // Largest subnormal + half a step rounds up into the smallest normal.
  EXPECT_EQ(FloatToHalf(1023.5f * std::ldexp(1.0f, -24)), 0x0400);
}

TEST(Bfloat16Test, ConversionsRoundToNearestEvenAndKeepNan) {
  EXPECT_EQ(Bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(FloatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBfloat16(FromBits(0x3f808000u)), 0x3f80);  // tie, even
  EXPECT_EQ(FloatToBfloat16(FromBits(0x3f818000u)), 0x3f82);  // tie, even
  EXPECT_EQ(FloatToBfloat16(FromBits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(FloatToBfloat16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(Bfloat16ToFloat(
      FloatToBfloat16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const float f = Bfloat16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(FloatToBfloat16(f), h) << h;
  }
}

}  // namespace
}  // namespace quantd
