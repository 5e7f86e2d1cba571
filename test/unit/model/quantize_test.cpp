#include "model/quantize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace llmserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(QuantizeInt8Channel, ScalesEachRowByItsLargestMagnitude) {
  // Row 0: absmax 2.54, so the scale is 0.02 and values are w / 0.02.
  // Row 1: all zero, scale 1. Row 2: the largest magnitude is negative.
  const std::vector<float> w = {2.54f, -1.27f, 0.01f, 0.03f, //
                                0.0f,  0.0f,   0.0f,  0.0f,  //
                                1.0f,  -4.0f,  3.0f,  0.0f};
  std::vector<int8_t> values(12);
  std::vector<float> scales(3);
  quantize_int8_channel(w.data(), 3, 4, values.data(), scales.data());
  EXPECT_THAT(scales, ElementsAre(2.54f / 127, 1.0f, 4.0f / 127));
  // 0.01 / 0.02 and 0.03 / 0.02 are ties in exact arithmetic; what f32
  // division gives decides, rounded half to even.
  EXPECT_EQ(values[0], 127);
  EXPECT_EQ(values[1], static_cast<int8_t>(std::nearbyint(-1.27f / (2.54f / 127))));
  EXPECT_EQ(values[2], static_cast<int8_t>(std::nearbyint(0.01f / (2.54f / 127))));
  EXPECT_THAT(std::vector<int8_t>(values.begin() + 4, values.begin() + 8),
              ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(std::vector<int8_t>(values.begin() + 8, values.end()),
              ElementsAre(32, -127, 95, 0));
}

TEST(QuantizeInt8Channel, RoundsHalfToEven) {
  // Scale 1 (absmax 127): 0.5 -> 0, 1.5 -> 2, -2.5 -> -2.
  const std::vector<float> w = {127.0f, 0.5f, 1.5f, -2.5f};
  std::vector<int8_t> values(4);
  quantize_int8_channel(w.data(), 1, 4, values.data(), nullptr);
  EXPECT_THAT(values, ElementsAre(127, 0, 2, -2));
}

TEST(QuantizeInt8Channel, RoundTripIsWithinHalfAStep) {
  std::vector<float> w(64 * 96);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = std::sin(0.37f * static_cast<float>(i)) * static_cast<float>(1 + i % 7);
  std::vector<int8_t> values(w.size());
  std::vector<float> scales(64);
  quantize_int8_channel(w.data(), 64, 96, values.data(), scales.data());
  for (int n = 0; n < 64; ++n)
    for (int k = 0; k < 96; ++k) {
      const float x = w[n * 96 + k];
      EXPECT_LE(std::fabs(values[n * 96 + k] * scales[n] - x), 0.5f * scales[n] * 1.0001f)
          << n << "," << k;
    }
}

TEST(QuantizeInt8Channel, RefusesNonFiniteWeights) {
  const std::vector<float> w = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> scales(1);
  try {
    quantize_int8_channel(w.data(), 1, 2, nullptr, scales.data());
    FAIL() << "quantized a NaN";
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(), HasSubstr("row 0 holds nan, which int8_channel cannot quantize"));
  }
}

TEST(QuantizeInt8Channel, NamesParse) {
  EXPECT_EQ(parse_quantization("int8_channel"), WeightQuantization::Int8Channel);
  EXPECT_EQ(parse_quantization("awq"), std::nullopt);
  EXPECT_EQ(parse_quantized_part("scales"), QuantizedPart::Scales);
  EXPECT_EQ(parse_quantized_part("zeros"), std::nullopt);
  EXPECT_STREQ(quantization_name(WeightQuantization::Int8Channel), "int8_channel");
  EXPECT_STREQ(quantized_part_name(QuantizedPart::Values), "values");
}

} // namespace
} // namespace llmserve
