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

TEST(QuantizeInt4Group128, StartsFromTheLargestMagnitudeOverMinus8) {
  // One row of two groups, each already best at its first scale (the
  // least-squares scale of its values is the same). Group 0: the largest
  // magnitude is -4 (at k = 1), so the scale is 0.5 and -4 is exactly -8.
  // Group 1: the largest is +4, the scale -0.5, so 4 is -8 and -3.5 is 7.
  std::vector<float> w(256, 0.0f);
  w[0] = 1.0f, w[1] = -4.0f, w[2] = 3.5f, w[3] = 0.25f;
  w[128] = 4.0f, w[129] = -3.5f, w[130] = 0.25f;
  std::vector<int8_t> values(256);
  std::vector<float> scales(2);
  quantize_int4_group128(w.data(), 1, 256, values.data(), scales.data());
  EXPECT_THAT(scales, ElementsAre(0.5f, -0.5f));
  // 0.25 / 0.5 = 0.5 and 0.25 / -0.5 = -0.5 are ties: to even.
  EXPECT_THAT(std::vector<int8_t>(values.begin(), values.begin() + 4), ElementsAre(2, -8, 7, 0));
  EXPECT_THAT(std::vector<int8_t>(values.begin() + 128, values.begin() + 131),
              ElementsAre(-8, 7, 0));
}

TEST(QuantizeInt4Group128, RefinesTheScaleByLeastSquares) {
  // An outlier of 8 among 127 values of 1.1: at -1 (8 over -8) each 1.1
  // rounds to -1, 0.1 off. The least-squares scale of those values,
  // sum(w q) / sum(q q) = (8 * -8 + 127 * 1.1 * -1) / (64 + 127), keeps
  // them and errs less; a second refinement gives it again, and stops.
  std::vector<float> w(128, 1.1f);
  w[5] = 8.0f;
  std::vector<int8_t> values(128);
  std::vector<float> scales(1);
  quantize_int4_group128(w.data(), 1, 128, values.data(), scales.data());
  double wq = 0;
  for (int k = 0; k < 128; ++k)
    wq += double(w[k]) * (k == 5 ? -8 : -1);
  EXPECT_EQ(scales[0], static_cast<float>(wq / 191));
  for (int k = 0; k < 128; ++k)
    EXPECT_EQ(values[k], k == 5 ? -8 : -1) << k;
}

TEST(QuantizeInt4Group128, ZeroGroupsAndTheFirstOfEqualMagnitudes) {
  // Group 0 is all zero: scale 1. Group 1: -2 and 2 tie in magnitude; the
  // first (-2) sets the sign of the first scale, 0.25, at which 2 is
  // clamped to 7; the least-squares scale of -8 and 7, 30 / 113, keeps
  // those values and errs less.
  std::vector<float> w(256, 0.0f);
  w[128] = -2.0f, w[200] = 2.0f;
  std::vector<int8_t> values(256);
  std::vector<float> scales(2);
  quantize_int4_group128(w.data(), 1, 256, values.data(), scales.data());
  EXPECT_THAT(scales, ElementsAre(1.0f, static_cast<float>(30.0 / 113)));
  EXPECT_EQ(values[0], 0);
  EXPECT_EQ(values[128], -8);
  EXPECT_EQ(values[200], 7);
}

TEST(QuantizeInt4Group128, ErrsNoMoreThanTheLargestMagnitudeScale) {
  std::vector<float> w(16 * 384);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = std::sin(0.37f * static_cast<float>(i)) * static_cast<float>(1 + i % 7);
  std::vector<int8_t> values(w.size());
  std::vector<float> scales(16 * 3);
  quantize_int4_group128(w.data(), 16, 384, values.data(), scales.data());
  int refined = 0;
  for (int n = 0; n < 16; ++n)
    for (int g = 0; g < 3; ++g) {
      const float *group = w.data() + n * 384 + g * 128;
      float largest = 0;
      for (int k = 0; k < 128; ++k)
        if (std::fabs(group[k]) > std::fabs(largest))
          largest = group[k];
      double first = 0, ours = 0;
      for (int k = 0; k < 128; ++k) {
        const int8_t value = values[n * 384 + g * 128 + k];
        EXPECT_GE(value, -8);
        EXPECT_LE(value, 7);
        const float q = std::fmax(-8.0f, std::fmin(7.0f, std::rint(group[k] / (largest / -8))));
        first += std::pow(double(group[k]) - double(largest / -8) * q, 2);
        ours += std::pow(double(group[k]) - double(scales[n * 3 + g]) * value, 2);
      }
      EXPECT_LE(ours, first) << n << "," << g;
      refined += ours < first;
    }
  EXPECT_GT(refined, 0);
}

TEST(QuantizeInt4Group128, RefusesPartialGroupsAndNonFiniteWeights) {
  std::vector<float> w(192, 1.0f);
  std::vector<float> scales(2);
  try {
    quantize_int4_group128(w.data(), 1, 192, nullptr, scales.data());
    FAIL() << "quantized a partial group";
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(),
                HasSubstr("int4_group128 quantizes rows of a multiple of 128 columns, got 192"));
  }
  w.resize(128);
  w[5] = std::numeric_limits<float>::infinity();
  try {
    quantize_int4_group128(w.data(), 1, 128, nullptr, scales.data());
    FAIL() << "quantized an infinity";
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(), HasSubstr("row 0 holds inf, which int4_group128 cannot quantize"));
  }
}

TEST(QuantizeInt8Channel, NamesParse) {
  EXPECT_EQ(parse_quantization("int8_channel"), WeightQuantization::Int8Channel);
  EXPECT_EQ(parse_quantization("int4_group128"), WeightQuantization::Int4Group128);
  EXPECT_EQ(parse_quantization("awq"), std::nullopt);
  EXPECT_STREQ(quantization_name(WeightQuantization::Int4Group128), "int4_group128");
  EXPECT_EQ(parse_quantized_part("scales"), QuantizedPart::Scales);
  EXPECT_EQ(parse_quantized_part("zeros"), QuantizedPart::Zeros);
  EXPECT_EQ(parse_quantized_part("offsets"), std::nullopt);
  EXPECT_STREQ(quantization_name(WeightQuantization::Int8Channel), "int8_channel");
  EXPECT_STREQ(quantized_part_name(QuantizedPart::Values), "values");
}

} // namespace
} // namespace llmserve
