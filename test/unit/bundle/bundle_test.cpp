#include "bundle/bundle.h"
#include "model/convert.h"
#include "model/quantize.h"

#include "support/test_bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using test::fs::path;
using test::json;

std::string load_error(const path &dir, const std::string &checkpoint = {}) {
  try {
    Bundle bundle(dir.string(), checkpoint);
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "(loaded)";
}

// A weight buffer of `tensor` as a quantized checkpoint (`from`) stores it.
json checkpoint_weight(const char *tensor, const char *from, const char *name,
                       const char *dtype, json shape) {
  return json{{"kind", "weight"}, {"name", name},     {"dtype", dtype},
              {"shape", shape},   {"tensor", tensor}, {"transform", "none"},
              {"from", from}};
}

std::vector<float> floats(const void *p, size_t n) {
  std::vector<float> v(n);
  std::memcpy(v.data(), p, n * sizeof(float));
  return v;
}

TEST(Bundle, LoadsEmbeddedWeights) {
  const path dir = test::ops_bundle(test::fresh_dir());
  const Bundle bundle(dir.string());
  EXPECT_EQ(bundle.manifest().entry_points.size(), 5u);
  EXPECT_EQ(bundle.weights_source(), (dir / "weights.safetensors").string());

  // gain: f32 in the file, used where it lies.
  EXPECT_EQ(floats(bundle.weight(5), 4), test::kGain);
  // half_gain: f16 in the file, converted to f32.
  EXPECT_EQ(floats(bundle.weight(7), 4), test::kHalfGain);
  // proj: [3, 4] in the file, [4, 3] for the kernels.
  const std::vector<float> proj = floats(bundle.weight(8), 12);
  for (int k = 0; k < 4; ++k)
    for (int n3 = 0; n3 < 3; ++n3)
      EXPECT_EQ(proj[k * 3 + n3], test::kProj[n3 * 4 + k]);
  EXPECT_EQ(bundle.weight(0), nullptr); // an argument
  EXPECT_EQ(bundle.mapped_weight_bytes(), 16u);
  EXPECT_EQ(bundle.converted_weight_bytes(), 16u + 48u);
}

TEST(Bundle, CutsRowsOfATensorOrOfItsTranspose) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  m["buffers"].push_back({{"kind", "weight"}, {"name", "proj_rows"}, {"dtype", "f32"},
                          {"shape", {2, 4}}, {"tensor", "proj"}, {"transform", "none"},
                          {"rows", {1, 3}}}); // 10
  m["buffers"].push_back({{"kind", "weight"}, {"name", "proj_t_rows"}, {"dtype", "f32"},
                          {"shape", {2, 3}}, {"tensor", "proj"}, {"transform", "transpose"},
                          {"rows", {1, 3}}}); // 11
  test::write_bundle(dir, m);
  test::write_weights(dir / "weights.safetensors", test::ops_weights());
  const Bundle bundle(dir.string());
  // Rows 1 and 2 of proj [3, 4], read in place.
  EXPECT_EQ(floats(bundle.weight(10), 8),
            std::vector<float>(test::kProj.begin() + 4, test::kProj.end()));
  EXPECT_EQ(bundle.mapped_weight_bytes(), 16u + 32u);
  // Rows 1 and 2 of proj^T [4, 3]: columns 1 and 2 of proj.
  const std::vector<float> t_rows = floats(bundle.weight(11), 6);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(t_rows[r * 3 + c], test::kProj[c * 4 + (r + 1)]) << r << "," << c;

  m["buffers"][10]["rows"] = {2, 4};
  test::write_file(dir / "manifest.json", m.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10] (weight 'proj_rows'): tensor 'proj' in " +
                                         (dir / "weights.safetensors").string() +
                                         " has shape [3, 4], expected [>=4, 4] for rows [2, 4)"));
}

TEST(Bundle, StacksTheTensorsOfExperts) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  m["buffers"].push_back({{"kind", "weight"}, {"name", "experts"}, {"dtype", "f32"},
                          {"shape", {2, 3, 4}}, {"tensor", "experts.{}.w"}, {"stacked", 2},
                          {"transform", "none"}}); // 10
  m["buffers"].push_back({{"kind", "weight"}, {"name", "experts_t"}, {"dtype", "f32"},
                          {"shape", {2, 2, 3}}, {"tensor", "experts.{}.w"}, {"stacked", 2},
                          {"transform", "transpose"}, {"rows", {1, 3}}}); // 11
  test::write_bundle(dir, m);
  std::vector<float> second(12);
  for (int i = 0; i < 12; ++i)
    second[i] = 100.0f + static_cast<float>(i);
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.push_back(test::f32_tensor("experts.0.w", {3, 4}, test::kProj));
  weights.push_back(test::f16_tensor("experts.1.w", {3, 4}, second));
  test::write_weights(dir / "weights.safetensors", weights);
  const Bundle bundle(dir.string());
  // Expert 0 then expert 1 (f16 in the file), each [3, 4].
  std::vector<float> want(test::kProj.begin(), test::kProj.end());
  want.insert(want.end(), second.begin(), second.end());
  EXPECT_EQ(floats(bundle.weight(10), 24), want);
  // Rows 1 and 2 of each expert's transpose [4, 3].
  const std::vector<float> rows = floats(bundle.weight(11), 12);
  for (int e = 0; e < 2; ++e)
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(rows[(e * 2 + r) * 3 + c], want[e * 12 + c * 4 + (r + 1)]) << e << r << c;

  weights.pop_back();
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10] (weight 'experts'): tensor 'experts.1.w' "
                                         "is missing from " +
                                         (dir / "weights.safetensors").string()));
  weights.push_back(test::f32_tensor("experts.1.w", {4, 3}, second));
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10] (weight 'experts'): tensor 'experts.1.w' in " +
                                         (dir / "weights.safetensors").string() +
                                         " has shape [4, 3], expected [3, 4]"));
}

TEST(Bundle, QuantizesEachStackedExpertAtLoad) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  auto part = [](const char *dtype, json shape, const char *which) {
    return json{{"kind", "weight"},  {"name", std::string("experts#") + which},
                {"dtype", dtype},    {"shape", shape},
                {"tensor", "e.{}.w"}, {"stacked", 2},
                {"transform", "none"}, {"quantization", "int8_channel"},
                {"part", which}};
  };
  m["buffers"].push_back(part("i8", {2, 3, 4}, "values")); // 10
  m["buffers"].push_back(part("f32", {2, 3}, "scales"));   // 11
  test::write_bundle(dir, m);
  std::vector<float> second(12);
  for (int i = 0; i < 12; ++i)
    second[i] = static_cast<float>(i % 5) - 2.5f;
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.push_back(test::f32_tensor("e.0.w", {3, 4}, test::kProj));
  weights.push_back(test::f32_tensor("e.1.w", {3, 4}, second));
  test::write_weights(dir / "weights.safetensors", weights);
  const Bundle bundle(dir.string());
  // Each expert as quantize_int8_channel quantizes it alone.
  std::vector<int8_t> values(24);
  std::vector<float> scales(6);
  quantize_int8_channel(test::kProj.data(), 3, 4, values.data(), scales.data());
  quantize_int8_channel(second.data(), 3, 4, values.data() + 12, scales.data() + 3);
  EXPECT_EQ(std::memcmp(bundle.weight(10), values.data(), values.size()), 0);
  EXPECT_EQ(floats(bundle.weight(11), 6), scales);
}

TEST(Bundle, UnpacksAGptqLinearIntoItsThreeArrays) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  // Module "m": 8 outputs of 128 inputs, rows [0, 8) of it.
  auto part = [](const char *dtype, json shape, const char *which) {
    return json{{"kind", "weight"}, {"name", std::string("m#") + which},
                {"dtype", dtype},   {"shape", shape},
                {"tensor", "m"},    {"transform", "none"},
                {"quantization", "int4_group128"}, {"part", which},
                {"from", "gptq"}};
  };
  m["buffers"].push_back(part("i8", {8, 64}, "values"));
  m["buffers"].back()["layout"] = "rows8x64";                 // 10
  m["buffers"].push_back(part("f32", {8, 1}, "scales"));      // 11
  m["buffers"].push_back(part("i8", {8, 1}, "zeros"));        // 12
  test::write_bundle(dir, m);
  // Every value 9 (word 0x99999999), zero points 7 + 1, scales n + 1.
  test::TestTensor qweight{"m.qweight", DType::I32, {16, 8}, std::vector<uint8_t>(16 * 8 * 4, 0x99)};
  test::TestTensor qzeros{"m.qzeros", DType::I32, {1, 1}, std::vector<uint8_t>(4, 0x77)};
  std::vector<float> scale_values(8);
  for (int n = 0; n < 8; ++n)
    scale_values[n] = static_cast<float>(n + 1);
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.push_back(qweight);
  weights.push_back(qzeros);
  weights.push_back(test::f16_tensor("m.scales", {1, 8}, scale_values));
  test::write_weights(dir / "weights.safetensors", weights);
  const Bundle bundle(dir.string());
  // Values 9 - 8 = 1, stored as 1 + 8 in both nibbles of each byte.
  const auto *values = static_cast<const uint8_t *>(bundle.weight(10));
  for (int i = 0; i < 8 * 64; ++i)
    ASSERT_EQ(values[i], 0x99) << i;
  EXPECT_EQ(floats(bundle.weight(11), 8), scale_values);
  const auto *zeros = static_cast<const int8_t *>(bundle.weight(12));
  EXPECT_EQ(std::vector<int8_t>(zeros, zeros + 8), std::vector<int8_t>(8, 8));

  weights.erase(weights.end() - 2); // m.qzeros
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10] (weight 'm#values'): gptq linear 'm' in " +
                                         (dir / "weights.safetensors").string() +
                                         ": tensor 'm.qzeros' is missing"));
}

TEST(Bundle, ReadsACompressedTensorsInt4LinearAsStored) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  // Module "m": 8 outputs of 128 inputs, pack-quantized.
  auto part = [](const char *dtype, json shape, const char *which) {
    json b = checkpoint_weight("m", "compressed_tensors_int4", (std::string("m#") + which).c_str(),
                               dtype, shape);
    b.update({{"quantization", "int4_group128"}, {"part", which}});
    return b;
  };
  m["buffers"].push_back(part("i8", {8, 64}, "values"));
  m["buffers"].back()["layout"] = "rows8x64";                 // 10
  m["buffers"].push_back(part("f32", {8, 1}, "scales"));      // 11
  m["buffers"].push_back(part("i8", {8, 1}, "zeros"));        // 12
  test::write_bundle(dir, m);
  // Every value 3 - 8 (word 0x33333333), scales n + 1, shape [8, 128].
  std::vector<float> scale_values(8);
  for (int n = 0; n < 8; ++n)
    scale_values[n] = static_cast<float>(n + 1);
  std::vector<uint8_t> shape(16, 0);
  shape[0] = 8;
  shape[8] = 128;
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.push_back({"m.weight_packed", DType::I32, {8, 16}, std::vector<uint8_t>(8 * 16 * 4, 0x33)});
  weights.push_back(test::f16_tensor("m.weight_scale", {8, 1}, scale_values));
  weights.push_back({"m.weight_shape", DType::I64, {2}, shape});
  test::write_weights(dir / "weights.safetensors", weights);
  const Bundle bundle(dir.string());
  // Values -5, stored as -5 + 8 in both nibbles of each byte; zero points 8.
  const auto *values = static_cast<const uint8_t *>(bundle.weight(10));
  for (int i = 0; i < 8 * 64; ++i)
    ASSERT_EQ(values[i], 0x33) << i;
  EXPECT_EQ(floats(bundle.weight(11), 8), scale_values);
  const auto *zeros = static_cast<const int8_t *>(bundle.weight(12));
  EXPECT_EQ(std::vector<int8_t>(zeros, zeros + 8), std::vector<int8_t>(8, 8));

  weights.pop_back(); // m.weight_shape
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir),
              HasSubstr("buffers[10] (weight 'm#values'): compressed_tensors_int4 linear 'm' in " +
                        (dir / "weights.safetensors").string() +
                        ": tensor 'm.weight_shape' is missing"));
}

TEST(Bundle, DequantizesCompressedTensorsInt8Weights) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  // "c.weight": int8 [4, 3] with a scale per row, read as f32.
  m["buffers"].push_back(checkpoint_weight("c.weight", "compressed_tensors", "c", "f32", {4, 3}));
  test::write_bundle(dir, m);
  std::vector<uint8_t> values(12);
  for (int i = 0; i < 12; ++i)
    values[i] = static_cast<uint8_t>(static_cast<int8_t>(i - 6));
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.push_back({"c.weight", DType::I8, {4, 3}, values});
  const std::vector<float> row_scales = {0.5f, 1.0f, 2.0f, 4.0f};
  weights.push_back(test::f32_tensor("c.weight_scale", {4, 1}, row_scales));
  test::write_weights(dir / "weights.safetensors", weights);
  {
    const Bundle bundle(dir.string());
    const std::vector<float> w = floats(bundle.weight(10), 12);
    for (int i = 0; i < 12; ++i)
      EXPECT_EQ(w[i], float(i - 6) * row_scales[i / 3]) << i;
  }
  weights.back() = test::f32_tensor("c.weight_scale", {2, 1}, {0.5f, 1.0f});
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir),
              HasSubstr("buffers[10] (weight 'c'): compressed-tensors weight 'c.weight' in " +
                        (dir / "weights.safetensors").string() +
                        ": tensor 'c.weight_scale': [2, 1], but c.weight [4, 3] takes one scale"));
}

TEST(Bundle, DequantizesAnActOrderGptqLinearOrQuantizesItAgain) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  // Module "m": 8 outputs of 256 inputs whose two groups alternate every
  // two columns (act-order), read as f32 and as int4_group128.
  auto buffer = [](const char *name, const char *dtype, json shape) {
    return checkpoint_weight("m", "gptq", name, dtype, shape);
  };
  m["buffers"].push_back(buffer("m", "f32", {8, 256}));                         // 10
  for (auto [part, dtype, cols] : {std::tuple{"values", "i8", 128}, {"scales", "f32", 2},
                                   {"zeros", "i8", 2}}) {                     // 11, 12, 13
    m["buffers"].push_back(buffer(part, dtype, {8, cols}));
    m["buffers"].back().update({{"quantization", "int4_group128"}, {"part", part}});
  }
  m["buffers"][11]["layout"] = "rows8x64";
  test::write_bundle(dir, m);
  // Every value 9; zero points 3 + 1 (group 0) and 5 + 1 (group 1); scales
  // n + 1 and 0.5.
  test::TestTensor qweight{"m.qweight", DType::I32, {32, 8}, std::vector<uint8_t>(32 * 8 * 4, 0x99)};
  test::TestTensor qzeros{"m.qzeros", DType::I32, {2, 1}, {0x33, 0x33, 0x33, 0x33, 0x55, 0x55, 0x55, 0x55}};
  test::TestTensor g_idx{"m.g_idx", DType::I32, {256}, std::vector<uint8_t>(256 * 4)};
  for (int k = 0; k < 256; ++k)
    g_idx.bytes[4 * k] = static_cast<uint8_t>((k / 2) % 2);
  std::vector<float> scale_values(16);
  for (int n = 0; n < 8; ++n) {
    scale_values[n] = static_cast<float>(n + 1);
    scale_values[8 + n] = 0.5f;
  }
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.insert(weights.end(), {qweight, qzeros, g_idx,
                                 test::f16_tensor("m.scales", {2, 8}, scale_values)});
  test::write_weights(dir / "weights.safetensors", weights);
  const Bundle bundle(dir.string());
  std::vector<float> w(8 * 256);
  for (int n = 0; n < 8; ++n)
    for (int k = 0; k < 256; ++k)
      w[n * 256 + k] = (k / 2) % 2 ? (9 - 6) * 0.5f : (9 - 4) * float(n + 1);
  EXPECT_EQ(floats(bundle.weight(10), 8 * 256), w);
  // int4_group128 of that matrix, with zero points of 8.
  std::vector<int8_t> values(8 * 256);
  std::vector<float> scales(8 * 2);
  quantize_int4_group128(w.data(), 8, 256, values.data(), scales.data());
  EXPECT_EQ(floats(bundle.weight(12), 16), scales);
  const auto *zeros = static_cast<const int8_t *>(bundle.weight(13));
  EXPECT_EQ(std::vector<int8_t>(zeros, zeros + 16), std::vector<int8_t>(16, 8));
  // Row 0's first block: columns j in the low nibbles, j + 32 in the high.
  const auto *packed = static_cast<const uint8_t *>(bundle.weight(11));
  for (int j = 0; j < 32; ++j)
    ASSERT_EQ(packed[j], (values[j] + 8) | (values[j + 32] + 8) << 4) << j;
}

TEST(Bundle, DequantizesFp8WeightsByBlockAndQuantizesThemAgain) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  // "f": an FP8 weight of 130 x 3 (blocks of rows [0, 128) and [128, 130)),
  // read as f32, transposed as f16, and as int8_channel values and scales.
  auto buffer = [](const char *name, const char *dtype, json shape) {
    return checkpoint_weight("f", "fp8_block128", name, dtype, shape);
  };
  m["buffers"].push_back(buffer("f", "f32", {130, 3}));            // 10
  m["buffers"].push_back(buffer("f^T", "f16", {3, 130}));          // 11
  m["buffers"].back()["transform"] = "transpose";
  m["buffers"].push_back(buffer("f#values", "i8", {130, 3}));      // 12
  m["buffers"].back().update({{"quantization", "int8_channel"}, {"part", "values"}});
  m["buffers"].push_back(buffer("f#scales", "f32", {130}));        // 13
  m["buffers"].back().update({{"quantization", "int8_channel"}, {"part", "scales"}});
  test::write_bundle(dir, m);
  // Codes 0x38 (1.0) and 0xc0 (-2.0) in turn; block scales 0.5 and 4.
  test::TestTensor codes{"f", DType::F8E4M3, {130, 3}, std::vector<uint8_t>(130 * 3)};
  for (size_t i = 0; i < codes.bytes.size(); ++i)
    codes.bytes[i] = i % 2 ? 0xc0 : 0x38;
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.push_back(codes);
  weights.push_back(test::f32_tensor("f_scale_inv", {2, 1}, {0.5f, 4.0f}));
  test::write_weights(dir / "weights.safetensors", weights);
  const Bundle bundle(dir.string());
  auto want = [](int n, int k) { return ((n * 3 + k) % 2 ? -2.0f : 1.0f) * (n < 128 ? 0.5f : 4.0f); };
  const std::vector<float> f = floats(bundle.weight(10), 130 * 3);
  const auto *transposed = static_cast<const uint16_t *>(bundle.weight(11));
  const auto *values = static_cast<const int8_t *>(bundle.weight(12));
  const std::vector<float> scales = floats(bundle.weight(13), 130);
  for (int n = 0; n < 130; ++n) {
    // Each row holds w and -2w (or -2w and w): its int8 scale is 2|w| / 127.
    EXPECT_EQ(scales[n], 2 * std::fabs(want(n, 0) + want(n, 1)) / 127) << n;
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(f[n * 3 + k], want(n, k)) << n << "," << k;
      EXPECT_EQ(f16_to_f32(transposed[k * 130 + n]), want(n, k)) << n << "," << k;
      EXPECT_EQ(values[n * 3 + k], want(n, k) < 0 ? -127 : 64) << n << "," << k;
    }
  }

  // Scales of the wrong shape, and the codes read without them.
  weights.back() = test::f32_tensor("f_scale_inv", {1, 1}, {0.5f});
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir),
              HasSubstr("buffers[10] (weight 'f'): FP8 weight 'f' in " +
                        (dir / "weights.safetensors").string() +
                        ": tensor 'f_scale_inv': [1, 1], but f [130, 3] in blocks of 128 x 128 "
                        "has [2, 1] scales"));
  weights.pop_back();
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("tensor 'f_scale_inv' is missing"));
  for (int i = 10; i < 14; ++i)
    m["buffers"][i].erase("from");
  m["buffers"].erase(m["buffers"].begin() + 11, m["buffers"].end());
  test::write_bundle(dir, m);
  EXPECT_THAT(load_error(dir),
              HasSubstr("buffers[10] (weight 'f'): tensor 'f' in " +
                        (dir / "weights.safetensors").string() +
                        " is f8_e4m3, and the bundle reads it without block scales"));
}

TEST(Bundle, ReadsFp8CodesAndBlockScalesAsStored) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  // "f": FP8 codes [300, 3] and scales [3, 1]; rows [128, 300) as stored:
  // codes [172, 3] in place, the scales of blocks 1 and 2.
  auto part = [](const char *which, const char *dtype, json shape) {
    json b =
        checkpoint_weight("f", "fp8_block128", (std::string("f#") + which).c_str(), dtype, shape);
    b.update({{"quantization", "fp8_block128"}, {"part", which}, {"rows", {128, 300}}});
    return b;
  };
  m["buffers"].push_back(part("values", "f8_e4m3", {172, 3})); // 10
  m["buffers"].push_back(part("scales", "f32", {2, 1}));       // 11
  test::write_bundle(dir, m);
  test::TestTensor codes{"f", DType::F8E4M3, {300, 3}, std::vector<uint8_t>(300 * 3)};
  for (size_t i = 0; i < codes.bytes.size(); ++i)
    codes.bytes[i] = static_cast<uint8_t>(i % 0x7f);
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.push_back(codes);
  weights.push_back(test::f32_tensor("f_scale_inv", {3, 1}, {0.5f, 4.0f, 0.25f}));
  test::write_weights(dir / "weights.safetensors", weights);
  {
    const Bundle bundle(dir.string());
    const auto *values = static_cast<const uint8_t *>(bundle.weight(10));
    for (int i = 0; i < 172 * 3; ++i)
      ASSERT_EQ(values[i], codes.bytes[128 * 3 + i]) << i;
    EXPECT_EQ(floats(bundle.weight(11), 2), (std::vector<float>{4.0f, 0.25f}));
    // The codes are used in place, as the ops model's f32 gain (16 bytes).
    EXPECT_EQ(bundle.mapped_weight_bytes(), 16u + 172u * 3);
  }

  // A NaN code; a scale that is not finite; scales of another shape.
  const std::string source = "FP8 weight 'f' in " + (dir / "weights.safetensors").string() + ": ";
  weights[weights.size() - 2].bytes[5] = 0xff;
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10] (weight 'f#values'): " + source +
                                         "tensor 'f': element [1, 2] is NaN"));
  weights[weights.size() - 2] = codes;
  weights.back() = test::f32_tensor("f_scale_inv", {3, 1}, {0.5f, INFINITY, 0.25f});
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[11] (weight 'f#scales'): " + source +
                                         "tensor 'f_scale_inv': scale inf of block [1, 0] is "
                                         "not finite"));
  weights.back() = test::f32_tensor("f_scale_inv", {2, 1}, {0.5f, 4.0f});
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("tensor 'f_scale_inv': [2, 1], but f [300, 3] in "
                                         "blocks of 128 x 128 has [3, 1] scales"));
  weights.back() = test::f32_tensor("f_scale_inv", {3, 1}, {0.5f, 4.0f, 0.25f});
  test::write_weights(dir / "weights.safetensors", weights);
  json bad = m;
  bad["buffers"][11]["shape"] = {2, 2};
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr(source + "its scales buffer [2, 2] is not those of "
                                                  "rows [128, 300) of [300, 3]"));

  // The manifest's rules: rows from a block's first, the scales' rows the
  // blocks the range spans, codes in f8_e4m3, an FP8 checkpoint's arrays.
  bad = m;
  bad["buffers"][10]["rows"] = {100, 272};
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10].rows: fp8_block128 rows start at a block "
                                         "of 128, got [100,272]"));
  bad = m;
  bad["buffers"][11]["shape"] = {1, 1};
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[11].rows: rows [128,300] do not match shape "
                                         "[1,1]"));
  bad = m;
  bad["buffers"][10]["dtype"] = "i8";
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10]: fp8_block128 values are a 2-D f8_e4m3 "
                                         "array, got values i8 [172,3]"));
  bad = m;
  bad["buffers"][10].erase("from");
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10].quantization: fp8_block128 arrays are an "
                                         "FP8 checkpoint's"));
}

TEST(Bundle, PacksPanelsOfSixteenColumns) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  m["buffers"].push_back({{"kind", "weight"}, {"name", "proj_panels"}, {"dtype", "f32"},
                          {"shape", {4, 3}}, {"tensor", "proj"}, {"transform", "transpose"},
                          {"layout", "panels16"}}); // 10
  test::write_bundle(dir, m);
  test::write_weights(dir / "weights.safetensors", test::ops_weights());
  const Bundle bundle(dir.string());
  // proj^T [4, 3] as one panel [3][16]: element (n, k) at k * 16 + n, the
  // lanes past row 4 zero.
  const std::vector<float> packed = floats(bundle.weight(10), 3 * 16);
  for (int k = 0; k < 3; ++k)
    for (int n = 0; n < 16; ++n)
      EXPECT_EQ(packed[k * 16 + n], n < 4 ? test::kProj[k * 4 + n] : 0.0f) << n << "," << k;

  m["buffers"][10]["layout"] = "tiles8";
  test::write_file(dir / "manifest.json", m.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10].layout: unknown layout \"tiles8\" "
                                         "(expected \"panels16\" or \"rows8x64\")"));
}

TEST(Bundle, QuantizesWeightsAtLoad) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  auto part = [](const std::string &name, const char *dtype, json shape,
                 const char *transform, const char *which) {
    return json{{"kind", "weight"},   {"name", name},         {"dtype", dtype},
                {"shape", shape},     {"tensor", "proj"},     {"transform", transform},
                {"quantization", "int8_channel"}, {"part", which}};
  };
  m["buffers"].push_back(part("proj.values", "i8", {3, 4}, "none", "values"));    // 10
  m["buffers"].push_back(part("proj.scales", "f32", {3}, "none", "scales"));      // 11
  m["buffers"].push_back(part("projT.values", "i8", {4, 3}, "transpose", "values")); // 12
  m["buffers"].push_back(part("projT.scales", "f32", {4}, "transpose", "scales"));   // 13
  test::write_bundle(dir, m);
  test::write_weights(dir / "weights.safetensors", test::ops_weights());
  {
    const Bundle bundle(dir.string());
    // proj rows {1,0,0,0}, {0,1,1,0}, {2,0,0,-1}: scales 1/127, 1/127, 2/127.
    std::vector<int8_t> values(12);
    std::memcpy(values.data(), bundle.weight(10), 12);
    EXPECT_EQ(values, (std::vector<int8_t>{127, 0, 0, 0, 0, 127, 127, 0, 127, 0, 0, -64}));
    EXPECT_EQ(floats(bundle.weight(11), 3),
              (std::vector<float>{1.0f / 127, 1.0f / 127, 2.0f / 127}));
    // proj^T rows {1,0,2}, {0,1,0}, {0,1,0}, {0,0,-1}.
    std::memcpy(values.data(), bundle.weight(12), 12);
    EXPECT_EQ(values, (std::vector<int8_t>{64, 0, 127, 0, 127, 0, 0, 127, 0, 0, 0, -127}));
    EXPECT_EQ(floats(bundle.weight(13), 4),
              (std::vector<float>{2.0f / 127, 1.0f / 127, 1.0f / 127, 1.0f / 127}));
  }

  const std::string where = "buffers[10]";
  json bad = m;
  bad["buffers"][10]["quantization"] = "q4_k";
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir),
              HasSubstr(where + ".quantization: unknown quantization 'q4_k' "
                                "(expected int8_channel, int4_group128 or fp8_block128)"));
  bad = m;
  bad["buffers"][10].erase("part");
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr(where + ": missing field 'part'"));
  bad = m;
  bad["buffers"][10]["dtype"] = "f32";
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir),
              HasSubstr(where + ": int8_channel values are a 2-D i8 array, got f32 [3,4]"));
  bad = m;
  bad["buffers"][11]["shape"] = {3, 1};
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir),
              HasSubstr("buffers[11]: int8_channel scales are a 1-D f32 array, got f32 [3,1]"));
  bad = m;
  bad["buffers"][5]["part"] = "values";
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[5].part: a part of a weight that is not quantized"));
  bad = m;
  bad["buffers"][11]["shape"] = {5};
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[11] (weight 'proj.scales'): tensor 'proj' in " +
                                         (dir / "weights.safetensors").string() +
                                         " has shape [3, 4], expected [5, 4]"));
  bad = m;
  bad["buffers"][11]["tensor"] = "gain";
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("tensor 'gain' in " +
                                         (dir / "weights.safetensors").string() +
                                         " has shape [4], but int8_channel quantizes a 2-D matrix"));
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights[2] = test::f32_tensor("proj", {3, 4}, {1, 0, 0, 0, 0, NAN, 1, 0, 2, 0, 0, -1});
  test::write_bundle(dir, m);
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10] (weight 'proj.values'): tensor 'proj': row 1 "
                                         "holds nan, which int8_channel cannot quantize"));
}

TEST(Bundle, PacksQuantizedValuesInRowGroups) {
  // A [16, 128] matrix whose element (n, k) is (n * 128 + k) % 97 - 48: its
  // int8_channel values in rows8x64, element (n, k) at
  // [n / 8][k / 64][n % 8][k % 64].
  std::vector<float> matrix(16 * 128);
  for (int i = 0; i < 16 * 128; ++i)
    matrix[i] = static_cast<float>(i % 97 - 48);
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  m["buffers"].push_back({{"kind", "weight"}, {"name", "m.values"}, {"dtype", "i8"},
                          {"shape", {16, 128}}, {"tensor", "m"}, {"transform", "none"},
                          {"quantization", "int8_channel"}, {"part", "values"},
                          {"layout", "rows8x64"}}); // 10
  test::write_bundle(dir, m);
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.push_back(test::f32_tensor("m", {16, 128}, matrix));
  test::write_weights(dir / "weights.safetensors", weights);
  {
    const Bundle bundle(dir.string());
    std::vector<int8_t> row(128), packed(16 * 128);
    std::memcpy(packed.data(), bundle.weight(10), packed.size());
    for (int n = 0; n < 16; ++n) {
      quantize_int8_channel(matrix.data() + n * 128, 1, 128, row.data(), nullptr);
      for (int k = 0; k < 128; ++k)
        ASSERT_EQ(packed[((n / 8 * 2 + k / 64) * 8 + n % 8) * 64 + k % 64], row[k])
            << n << "," << k;
    }
  }
  json bad = m;
  bad["buffers"][10]["shape"] = {12, 128};
  bad["buffers"][10]["rows"] = {0, 12};
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[10].layout: rows8x64 needs rows a multiple of 8 "
                                         "and columns of 64, got [12,128]"));
  bad = m;
  bad["buffers"][5]["layout"] = "rows8x64";
  bad["buffers"][5]["shape"] = {4, 1};
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[5].layout: rows8x64 holds quantized values only"));
}

TEST(Bundle, PacksInt4ValuesTwoAByte) {
  // A [8, 256] matrix: its int4_group128 values two a byte in rows8x64, row
  // n's block b at [n / 8][b][n % 8] as 32 bytes, byte j holding column j + 8
  // in its low nibble and column j + 32 + 8 in its high one; its scales [8,
  // 2] row-major.
  std::vector<float> matrix(8 * 256);
  for (int i = 0; i < 8 * 256; ++i)
    matrix[i] = static_cast<float>(i % 13 - 6) * (1 + i % 256 / 128);
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  const json values = {{"kind", "weight"}, {"name", "m.values"}, {"dtype", "i8"},
                       {"shape", {8, 128}}, {"tensor", "m"}, {"transform", "none"},
                       {"quantization", "int4_group128"}, {"part", "values"},
                       {"layout", "rows8x64"}}; // 10
  const json scales = {{"kind", "weight"}, {"name", "m.scales"}, {"dtype", "f32"},
                       {"shape", {8, 2}}, {"tensor", "m"}, {"transform", "none"},
                       {"quantization", "int4_group128"}, {"part", "scales"}}; // 11
  m["buffers"].push_back(values);
  m["buffers"].push_back(scales);
  test::write_bundle(dir, m);
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.push_back(test::f32_tensor("m", {8, 256}, matrix));
  test::write_weights(dir / "weights.safetensors", weights);
  {
    const Bundle bundle(dir.string());
    std::vector<int8_t> want(8 * 256);
    std::vector<float> want_scales(8 * 2), got_scales(8 * 2);
    quantize_int4_group128(matrix.data(), 8, 256, want.data(), want_scales.data());
    std::vector<uint8_t> packed(8 * 128);
    std::memcpy(packed.data(), bundle.weight(10), packed.size());
    for (int n = 0; n < 8; ++n)
      for (int k = 0; k < 256; ++k) {
        const uint8_t byte = packed[((k / 64) * 8 + n) * 32 + k % 32];
        const int nibble = k % 64 < 32 ? byte & 15 : byte >> 4;
        ASSERT_EQ(nibble - 8, want[n * 256 + k]) << n << "," << k;
      }
    std::memcpy(got_scales.data(), bundle.weight(11), got_scales.size() * sizeof(float));
    EXPECT_EQ(got_scales, want_scales);
  }
  // Without a layout (what sm_90 kernels read): two a byte in row order,
  // byte j of a row holding column 2j plus 8 in its low nibble and column
  // 2j + 1 plus 8 in its high one.
  json rows = m;
  rows["buffers"][10].erase("layout");
  test::write_file(dir / "manifest.json", rows.dump());
  {
    const Bundle bundle(dir.string());
    std::vector<int8_t> want(8 * 256);
    std::vector<float> want_scales(8 * 2);
    quantize_int4_group128(matrix.data(), 8, 256, want.data(), want_scales.data());
    std::vector<uint8_t> packed(8 * 128);
    std::memcpy(packed.data(), bundle.weight(10), packed.size());
    for (int n = 0; n < 8; ++n)
      for (int k = 0; k < 256; ++k) {
        const uint8_t byte = packed[n * 128 + k / 2];
        const int nibble = k % 2 == 0 ? byte & 15 : byte >> 4;
        ASSERT_EQ(nibble - 8, want[n * 256 + k]) << n << "," << k;
      }
  }
  json bad = m;
  bad["buffers"][11]["shape"] = {8};
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[11]: int4_group128 scales are a 2-D f32 array, "
                                         "got f32 [8]"));
  bad = m;
  bad["buffers"][10]["shape"] = {8, 64};
  test::write_file(dir / "manifest.json", bad.dump());
  EXPECT_THAT(load_error(dir),
              HasSubstr("tensor 'm' in " + (dir / "weights.safetensors").string() +
                        " has 256 columns, but the shape [8, 64] of its values is that of a "
                        "matrix of 128"));
}

TEST(Bundle, ConvertsUnalignedTensors) {
  // A 3-element f16 tensor first puts gain at an odd offset of 6 bytes, so it
  // cannot be read in place as f32.
  const path dir = test::fresh_dir();
  test::write_bundle(dir, test::ops_manifest());
  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.insert(weights.begin(), test::f16_tensor("pad", {3}, {1, 2, 3}));
  test::write_weights(dir / "weights.safetensors", weights);
  const Bundle bundle(dir.string());
  EXPECT_EQ(bundle.mapped_weight_bytes(), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(bundle.weight(5)) % kBufferAlignment, 0u);
  EXPECT_EQ(floats(bundle.weight(5), 4), test::kGain);
}

TEST(Bundle, ReadsTiedTensorOnceAsIsAndOnceTransposed) {
  const path ckpt = test::step_checkpoint(test::fresh_dir("_ckpt"));
  const path dir = test::step_bundle(test::fresh_dir(), ckpt);
  const Bundle bundle(dir.string());
  EXPECT_EQ(bundle.weights_source(), ckpt.string());
  const std::vector<float> e = test::embedding_values();
  const std::vector<float> embed = floats(bundle.weight(test::kEmbedBuffer), e.size());
  const std::vector<float> unembed = floats(bundle.weight(test::kUnembedBuffer), e.size());
  for (int v = 0; v < test::kVocab; ++v)
    for (int h = 0; h < test::kHidden; ++h) {
      EXPECT_EQ(embed[v * test::kHidden + h], e[v * test::kHidden + h]);
      EXPECT_EQ(unembed[h * test::kVocab + v], e[v * test::kHidden + h]);
    }
}

TEST(Bundle, CheckpointGivenAtLoadOverridesTheManifests) {
  const path recorded = test::step_checkpoint(test::fresh_dir("_recorded"), 1.0f);
  const path other = test::step_checkpoint(test::fresh_dir("_other"), 2.0f);
  const path dir = test::step_bundle(test::fresh_dir(), recorded);
  const Bundle bundle(dir.string(), other.string());
  EXPECT_EQ(bundle.weights_source(), other.string());
  EXPECT_EQ(floats(bundle.weight(test::kEmbedBuffer), 32), test::embedding_values(2.0f));
}

TEST(Bundle, RelativeCheckpointIsRelativeToTheBundle) {
  const path dir = test::fresh_dir();
  test::step_checkpoint(dir / "weights");
  json m = test::step_manifest();
  m["weights"]["checkpoint"] = "../weights";
  test::write_bundle(dir / "model.llmb", m);
  const Bundle bundle((dir / "model.llmb").string());
  EXPECT_EQ(floats(bundle.weight(test::kEmbedBuffer), 32), test::embedding_values());
}

TEST(Bundle, BundleWithoutWeightsNeedsNoSource) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  m["weights"] = json::object();
  m["buffers"][5]["kind"] = m["buffers"][7]["kind"] = m["buffers"][8]["kind"] = "activation";
  test::write_bundle(dir, m);
  const Bundle bundle(dir.string());
  EXPECT_EQ(bundle.weights_source(), "");
}

TEST(Bundle, RefusesMissingPieces) {
  const path dir = test::fresh_dir();
  EXPECT_THAT(load_error(dir / "absent"), HasSubstr("absent: not a directory"));
  EXPECT_THAT(load_error(dir), HasSubstr("not a kernel bundle (no manifest.json)"));

  test::write_file(dir / "manifest.json", "{\"format\": ");
  EXPECT_THAT(load_error(dir), HasSubstr("manifest.json: not valid JSON"));
}

TEST(Bundle, LoadsTheWeightsOfAnNvidiaBundle) {
  const path dir = test::fresh_dir();
  test::write_bundle(dir, test::for_sm90(test::ops_manifest()), /*with_kernels=*/false);
  test::write_weights(dir / "weights.safetensors", test::ops_weights());
  const Bundle bundle(dir.string());
  EXPECT_EQ(bundle.manifest().target, "sm_90");
  EXPECT_EQ(floats(bundle.weight(5), 4), test::kGain);
}

TEST(Bundle, RefusesMissingOrMisshapenWeights) {
  const path dir = test::fresh_dir();
  test::write_bundle(dir, test::ops_manifest());
  EXPECT_THAT(load_error(dir), HasSubstr("weights.safetensors"));

  std::vector<test::TestTensor> weights = test::ops_weights();
  weights.erase(weights.begin() + 1); // half_gain
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[7] (weight 'half_gain'): tensor 'half_gain' "
                                         "is missing from " +
                                         (dir / "weights.safetensors").string()));

  weights = test::ops_weights();
  weights[2] = test::f32_tensor("proj", {4, 3}, test::kProj); // already transposed
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[8] (weight 'proj'): tensor 'proj' in " +
                                         (dir / "weights.safetensors").string() +
                                         " has shape [4, 3], expected [3, 4] "
                                         "(transposed to [4, 3])"));

  weights = test::ops_weights();
  weights[0] = test::f32_tensor("gain", {2, 2}, test::kGain);
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("tensor 'gain' in " +
                                         (dir / "weights.safetensors").string() +
                                         " has shape [2, 2], expected [4]"));

  weights = test::ops_weights();
  weights[0] = test::TestTensor{"gain", DType::I32, {4}, std::vector<uint8_t>(16)};
  test::write_weights(dir / "weights.safetensors", weights);
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[5] (weight 'gain'): "));
}

TEST(Bundle, RefusesEmbeddedTensorOfUnreadableDtype) {
  const path dir = test::fresh_dir();
  test::write_bundle(dir, test::ops_manifest());
  // safetensors by hand: "gain" as F64, which llmserve does not read.
  const std::string header =
      R"({"gain":{"dtype":"F64","shape":[4],"data_offsets":[0,32]}})";
  std::string bytes;
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<char>(header.size() >> (8 * i)));
  test::write_file(dir / "weights.safetensors", bytes + header + std::string(32, '\0'));
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[5] (weight 'gain'): tensor 'gain' in " +
                                         (dir / "weights.safetensors").string() +
                                         " has dtype F64, which llmserve does not read"));
}

TEST(Bundle, RefusesMissingCheckpointTensor) {
  const path ckpt = test::fresh_dir("_ckpt");
  test::write_weights(ckpt / "model.safetensors",
                      {test::f32_tensor("other", {1}, {1.0f})});
  const path dir = test::step_bundle(test::fresh_dir(), ckpt);
  EXPECT_THAT(load_error(dir), HasSubstr("buffers[23] (weight 'embed'): " + ckpt.string() +
                                         ": tensor 'embed' is missing"));
  EXPECT_THAT(load_error(dir, (ckpt / "nowhere").string()), HasSubstr("nowhere"));
}

TEST(Bundle, RefusesWeightsWithoutSource) {
  const path dir = test::fresh_dir();
  test::write_bundle(dir, test::step_manifest());
  EXPECT_THAT(load_error(dir), HasSubstr("neither embeds them nor names a checkpoint"));
}

TEST(Bundle, MovesWithItsWeights) {
  const path dir = test::ops_bundle(test::fresh_dir());
  Bundle first(dir.string());
  const void *gain = first.weight(5);
  Bundle moved = std::move(first);
  EXPECT_EQ(moved.weight(5), gain);
  EXPECT_EQ(floats(moved.weight(5), 4), test::kGain);
}

} // namespace
} // namespace llmserve
