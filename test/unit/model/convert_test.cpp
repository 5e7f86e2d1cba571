#include "model/convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace llmserve {
namespace {

using ::testing::HasSubstr;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The compiler's own conversion is the reference for f16.
uint16_t reference_f16(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

// bf16 by exhaustive choice between the two neighbours: nearest, ties to even.
uint16_t reference_bf16(float f) {
  const uint16_t down = static_cast<uint16_t>(bits(f) >> 16);
  if (std::isinf(f) || bf16_to_f32(down) == f)
    return down;
  const uint16_t up = down + 1; // same sign, larger magnitude
  // Past the largest finite bf16, `up` is infinity; IEEE rounding treats it
  // as the next power of two, 2^128.
  auto value = [](uint16_t b) {
    return (b & 0x7f80) == 0x7f80 ? std::copysign(std::ldexp(1.0, 128), bf16_to_f32(b))
                                  : static_cast<double>(bf16_to_f32(b));
  };
  const double d_down = std::fabs(static_cast<double>(f) - value(down));
  const double d_up = std::fabs(static_cast<double>(f) - value(up));
  if (d_down != d_up)
    return d_down < d_up ? down : up;
  return (down & 1) ? up : down;
}

std::vector<float> interesting_floats() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 1e10f,
                          -1e10f, 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f,
                          2.9802326e-08f, 1e-30f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min()};
  std::mt19937 rng(1);
  for (int i = 0; i < 1'000'000; ++i) {
    float f = from_bits(static_cast<uint32_t>(rng()));
    if (!std::isnan(f))
      v.push_back(f);
  }
  // Values near the f16 range, where rounding and subnormals matter.
  std::uniform_real_distribution<float> exponent(-26.0f, 17.0f);
  for (int i = 0; i < 1'000'000; ++i)
    v.push_back((i % 2 ? -1.0f : 1.0f) * std::exp2(exponent(rng)));
  return v;
}

TEST(Convert, F16ToF32IsExactForEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    _Float16 expected;
    uint16_t u = static_cast<uint16_t>(h);
    std::memcpy(&expected, &u, 2);
    if (std::isnan(static_cast<float>(expected))) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << h;
    } else {
      ASSERT_EQ(bits(f), bits(static_cast<float>(expected))) << h;
      ASSERT_EQ(f32_to_f16(f), h) << h; // round trip
    }
  }
}

TEST(Convert, F32ToF16RoundsToNearestEven) {
  for (float f : interesting_floats())
    ASSERT_EQ(f32_to_f16(f), reference_f16(f)) << f;
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3c00);       // tie to even (down)
  EXPECT_EQ(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);   // tie to even (up)
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::nanf("")))));
}

TEST(Convert, Bf16RoundTripsAndRoundsToNearestEven) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = bf16_to_f32(static_cast<uint16_t>(b));
    if (std::isnan(f))
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f))));
    else
      ASSERT_EQ(f32_to_bf16(f), b);
  }
  for (float f : interesting_floats())
    ASSERT_EQ(f32_to_bf16(f), reference_bf16(f)) << f;
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(from_bits(0x7f800001)))));
}

// e4m3 from its definition: (-1)^s * 2^(e - 7) * (1 + m / 8), or
// 2^-6 * m / 8 when e = 0; NaN where e and m are all ones.
double e4m3_value(uint8_t c) {
  const int e = (c >> 3) & 0xf, m = c & 7;
  const double sign = (c & 0x80) ? -1.0 : 1.0;
  if (e == 15 && m == 7)
    return std::nan("");
  return sign * (e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7));
}

// The nearest finite e4m3 value to f by exhaustive search (ties to the even
// code), magnitudes past 448 saturating to it.
uint8_t reference_e4m3(float f) {
  uint8_t best = 0;
  double best_distance = INFINITY;
  const double target = std::clamp<double>(std::fabs(f), 0, 448);
  for (int c = 0; c < 0x7f; ++c) {
    const double distance = std::fabs(e4m3_value(static_cast<uint8_t>(c)) - target);
    if (distance < best_distance || (distance == best_distance && c % 2 == 0)) {
      best = static_cast<uint8_t>(c);
      best_distance = distance;
    }
  }
  return static_cast<uint8_t>(best | (std::signbit(f) ? 0x80 : 0));
}

TEST(Convert, E4m3DecodesEveryCodeByItsDefinitionAndRoundTrips) {
  for (int c = 0; c < 0x100; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const float f = e4m3_to_f32(code);
    if ((code & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(f)) << c;
      EXPECT_EQ(f32_to_e4m3(f) & 0x7f, 0x7f) << c;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), e4m3_value(code)) << c;
    ASSERT_EQ(std::signbit(f), (code & 0x80) != 0) << c;
    ASSERT_EQ(f32_to_e4m3(f), code) << c;
  }
}

TEST(Convert, F32ToE4m3RoundsToNearestEvenAndSaturates) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> exponent(-12.0f, 10.0f);
  std::vector<float> values;
  for (int i = 0; i < 200'000; ++i)
    values.push_back((i % 2 ? -1.0f : 1.0f) * std::exp2(exponent(rng)));
  // Every midpoint between neighbouring codes: a tie, which goes to the even
  // code, and the floats either side of it.
  for (int c = 0; c < 0x7e; ++c) {
    const float mid = static_cast<float>((e4m3_value(c) + e4m3_value(c + 1)) / 2);
    for (float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e3f)})
      values.insert(values.end(), {v, -v});
  }
  for (float f : values)
    ASSERT_EQ(f32_to_e4m3(f), reference_e4m3(f)) << f;
  EXPECT_EQ(f32_to_e4m3(1.0f + 0x1p-4f), 0x38);      // tie to even (down to 1)
  EXPECT_EQ(f32_to_e4m3(1.0f + 3 * 0x1p-4f), 0x3a);  // tie to even (up)
  EXPECT_EQ(f32_to_e4m3(0x1p-10f), 0x00);             // half the smallest step: to 0
  EXPECT_EQ(f32_to_e4m3(3 * 0x1p-10f), 0x02);         // 1.5 steps: to 2 steps
  EXPECT_EQ(f32_to_e4m3(464.0f), 0x7e);               // saturates, never NaN
  EXPECT_EQ(f32_to_e4m3(-1e30f), 0xfe);
  EXPECT_EQ(f32_to_e4m3(std::numeric_limits<float>::infinity()), 0x7e);
  EXPECT_EQ(f32_to_e4m3(-0.0f), 0x80);
}

// A tensor of `dtype` holding the values 0.5 * (i % 128) - 3, exact in every float type.
struct Owned {
  std::vector<uint8_t> bytes;
  TensorView view;
};

Owned make_tensor(DType dtype, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  Owned t;
  // One spare byte in front: checkpoint data is not aligned, so neither is ours.
  t.bytes.resize(1 + n * dtype_size(dtype));
  uint8_t *data = t.bytes.data() + 1;
  for (int64_t i = 0; i < n; ++i) {
    float f = 0.5f * static_cast<float>(i % 128) - 3.0f;
    if (dtype == DType::F32)
      std::memcpy(data + 4 * i, &f, 4);
    else if (dtype == DType::I32) {
      int32_t v = static_cast<int32_t>(i);
      std::memcpy(data + 4 * i, &v, 4);
    } else {
      uint16_t h = dtype == DType::F16 ? f32_to_f16(f) : f32_to_bf16(f);
      std::memcpy(data + 2 * i, &h, 2);
    }
  }
  t.view = TensorView{"w", dtype, std::move(shape), data, static_cast<size_t>(n) * dtype_size(dtype)};
  return t;
}

float read_float(const std::vector<uint8_t> &out, DType dtype, int64_t i) {
  if (dtype == DType::F32) {
    float f;
    std::memcpy(&f, out.data() + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, out.data() + 2 * i, 2);
  return dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

TEST(Convert, EveryFloatPairWithAndWithoutTranspose) {
  const DType floats[] = {DType::F32, DType::F16, DType::BF16};
  const int64_t rows = 37, cols = 70; // not multiples of the tile
  for (DType from : floats)
    for (DType to : floats) {
      Owned src = make_tensor(from, {rows, cols});
      std::vector<uint8_t> out(rows * cols * dtype_size(to));
      convert_tensor(src.view, to, /*transpose=*/false, out.data());
      for (int64_t i = 0; i < rows * cols; ++i)
        ASSERT_EQ(read_float(out, to, i), 0.5f * (i % 128) - 3.0f)
            << dtype_name(from) << "->" << dtype_name(to) << " at " << i;
      std::fill(out.begin(), out.end(), 0);
      convert_tensor(src.view, to, /*transpose=*/true, out.data());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          ASSERT_EQ(read_float(out, to, c * rows + r), 0.5f * ((r * cols + c) % 128) - 3.0f)
              << dtype_name(from) << "->" << dtype_name(to) << " transposed at " << r << "," << c;
    }
}

// Integers: element i holds i + 2^33 (i64, so the high half is not zero) or i.
template <typename T> void check_integers(DType dtype, T base) {
  std::vector<T> values(15);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = base + static_cast<T>(i);
  const TensorView src{"ids", dtype, {3, 5}, reinterpret_cast<const uint8_t *>(values.data()),
                       values.size() * sizeof(T)};
  std::vector<T> out(15);
  convert_tensor(src, dtype, false, out.data());
  EXPECT_EQ(out, values);
  convert_tensor(src, dtype, true, out.data());
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c)
      EXPECT_EQ(out[c * 3 + r], base + r * 5 + c) << dtype_name(dtype);
}

TEST(Convert, IntegersCopyAndTranspose) {
  check_integers<int32_t>(DType::I32, 0);
  check_integers<int64_t>(DType::I64, int64_t{1} << 33);
}

TEST(ConvertErrors, RejectsIntegerFloatMixesAndNon2DTranspose) {
  auto error = [](const TensorView &src, DType to, bool transpose) -> std::string {
    std::vector<uint8_t> out(src.numel() * 8);
    try {
      convert_tensor(src, to, transpose, out.data());
    } catch (const std::runtime_error &e) {
      return e.what();
    }
    ADD_FAILURE() << "converted";
    return "";
  };
  Owned ints = make_tensor(DType::I32, {4});
  Owned floats = make_tensor(DType::F32, {2, 3, 4});
  EXPECT_EQ(error(ints.view, DType::F32, false), "tensor 'w': cannot convert i32 to f32");
  EXPECT_EQ(error(floats.view, DType::I64, false), "tensor 'w': cannot convert f32 to i64");
  EXPECT_EQ(error(floats.view, DType::F16, true), "tensor 'w': cannot transpose a 3-D tensor");
  EXPECT_THAT(error(ints.view, DType::I32, true), HasSubstr("1-D"));
}

TEST(Convert, F32TensorToE4m3AndBack) {
  const std::vector<float> values = {0.0f, 1.0f, -2.5f, 0.3f, 500.0f, 0x1p-8f};
  const TensorView src{"kv", DType::F32, {2, 3}, reinterpret_cast<const uint8_t *>(values.data()),
                       values.size() * 4};
  std::vector<uint8_t> codes(6);
  convert_tensor(src, DType::F8E4M3, /*transpose=*/false, codes.data());
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(codes[i], f32_to_e4m3(values[i])) << i;
  const TensorView fp8{"kv", DType::F8E4M3, {2, 3}, codes.data(), codes.size()};
  std::vector<float> back(6);
  convert_tensor(fp8, DType::F32, /*transpose=*/true, back.data());
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(back[c * 2 + r], e4m3_to_f32(codes[r * 3 + c]));
  EXPECT_EQ(back[0 * 2 + 1], 0.3125f); // 0.3, to the nearest e4m3
  EXPECT_EQ(back[1 * 2 + 1], 448.0f);  // 500, saturated
}

TEST(DType, NamesSizesAndParsing) {
  const DType all[] = {DType::F32, DType::F16, DType::BF16, DType::I32,
                       DType::I64, DType::I8,  DType::F8E4M3};
  const size_t sizes[] = {4, 2, 2, 4, 8, 1, 1};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(dtype_size(all[i]), sizes[i]);
    EXPECT_EQ(parse_dtype(dtype_name(all[i])), all[i]);
    EXPECT_EQ(parse_dtype(safetensors_dtype_name(all[i])), all[i]);
  }
  EXPECT_STREQ(dtype_name(DType::BF16), "bf16");
  EXPECT_STREQ(safetensors_dtype_name(DType::BF16), "BF16");
  EXPECT_STREQ(dtype_name(DType::F8E4M3), "f8_e4m3");
  EXPECT_STREQ(safetensors_dtype_name(DType::F8E4M3), "F8_E4M3");
  EXPECT_EQ(parse_dtype("F64"), std::nullopt);
  EXPECT_EQ(parse_dtype("Bf16"), std::nullopt);
  EXPECT_EQ(parse_dtype(""), std::nullopt);
}

} // namespace
} // namespace llmserve
