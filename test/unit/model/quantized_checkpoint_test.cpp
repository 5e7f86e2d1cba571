#include "model/convert.h"
#include "model/quantized_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>

namespace llmserve {
namespace {

using ::testing::HasSubstr;

// A tensor over bytes this test owns.
struct Tensor {
  std::vector<uint8_t> bytes;
  TensorView view;

  Tensor(std::string name, DType dtype, std::vector<int64_t> shape, size_t element)
      : bytes(element * count(shape)), view{std::move(name), dtype, std::move(shape), nullptr, 0} {
    view.data = bytes.data();
    view.nbytes = bytes.size();
  }
  static size_t count(const std::vector<int64_t> &shape) {
    size_t n = 1;
    for (int64_t d : shape)
      n *= static_cast<size_t>(d);
    return n;
  }
  void set_word(int64_t i, uint32_t w) { std::memcpy(bytes.data() + 4 * i, &w, 4); }
  void set_half(int64_t i, float f) {
    const uint16_t h = f32_to_f16(f);
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
};

// One linear of N = 8 outputs and K = 128 inputs (one group) in `layout`:
// value q[n, k] = (n + k) % 16, zero point z[n] = n + 1, scale s[n] = 0.5 n.
struct Linear {
  Tensor qweight, qzeros, scales, g_idx;

  explicit Linear(QuantizedCheckpoint layout)
      : qweight("m.qweight", DType::I32,
                layout == QuantizedCheckpoint::Awq ? std::vector<int64_t>{128, 1}
                                                   : std::vector<int64_t>{16, 8},
                4),
        qzeros("m.qzeros", DType::I32, {1, 1}, 4), scales("m.scales", DType::F16, {1, 8}, 2),
        g_idx("m.g_idx", DType::I32, {128}, 4) {
    const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    const bool awq = layout == QuantizedCheckpoint::Awq;
    if (awq) {
      for (int k = 0; k < 128; ++k) {
        uint32_t w = 0;
        for (int i = 0; i < 8; ++i)
          w |= uint32_t((order[i] + k) % 16) << (4 * i);
        qweight.set_word(k, w);
      }
    } else {
      for (int r = 0; r < 16; ++r)
        for (int n = 0; n < 8; ++n) {
          uint32_t w = 0;
          for (int i = 0; i < 8; ++i)
            w |= uint32_t((n + 8 * r + i) % 16) << (4 * i);
          qweight.set_word(r * 8 + n, w);
        }
    }
    uint32_t z = 0;
    for (int i = 0; i < 8; ++i) {
      const int n = awq ? order[i] : i;
      z |= uint32_t(n + 1 - (layout == QuantizedCheckpoint::Gptq ? 1 : 0)) << (4 * i);
    }
    qzeros.set_word(0, z);
    for (int n = 0; n < 8; ++n)
      scales.set_half(n, 0.5f * n);
    for (int k = 0; k < 128; ++k)
      g_idx.set_word(k, 0);
  }

  Int4WithZeros unpack(QuantizedCheckpoint layout, bool with_g_idx = true) {
    return unpack_int4_checkpoint(layout, qweight.view, qzeros.view, scales.view,
                                  with_g_idx ? &g_idx.view : nullptr);
  }
};

TEST(QuantizedCheckpoint, UnpacksGptqAndAwqIntoValuesZerosAndScales) {
  for (QuantizedCheckpoint layout :
       {QuantizedCheckpoint::Gptq, QuantizedCheckpoint::GptqV2, QuantizedCheckpoint::Awq}) {
    SCOPED_TRACE(quantized_checkpoint_name(layout));
    Linear linear(layout);
    const Int4WithZeros q = linear.unpack(layout, layout != QuantizedCheckpoint::Awq);
    ASSERT_EQ(q.rows, 8);
    ASSERT_EQ(q.cols, 128);
    for (int n = 0; n < 8; ++n) {
      EXPECT_EQ(q.zeros[n], n + 1);
      EXPECT_EQ(q.scales[n], 0.5f * n);
      for (int k = 0; k < 128; ++k)
        ASSERT_EQ(q.values[n * 128 + k], (n + k) % 16 - 8) << n << "," << k;
    }
  }
}

TEST(QuantizedCheckpoint, NamesTheTensorAtFault) {
  auto error = [](auto &&unpack) -> std::string {
    try {
      unpack();
    } catch (const std::runtime_error &e) {
      return e.what();
    }
    return "(unpacked)";
  };
  const auto gptq = QuantizedCheckpoint::Gptq;
  {
    Linear l(gptq); // scales of 64-input groups
    l.scales = Tensor("m.scales", DType::F16, {2, 8}, 2);
    EXPECT_THAT(error([&] { l.unpack(gptq); }),
                HasSubstr("tensor 'm.scales': 2 groups of 128 inputs, a group size of 64; "
                          "llmserve reads groups of 128"));
  }
  {
    Linear l(gptq); // truncated: scales for 4 of the 8 outputs
    l.scales = Tensor("m.scales", DType::F16, {1, 4}, 2);
    EXPECT_THAT(error([&] { l.unpack(gptq); }),
                HasSubstr("tensor 'm.scales': [1, 4], but m.qweight [16, 8] is a linear of 8 "
                          "outputs: expected [groups, 8]"));
  }
  {
    Linear l(gptq);
    l.qweight.view.dtype = DType::F32;
    EXPECT_THAT(error([&] { l.unpack(gptq); }),
                HasSubstr("tensor 'm.qweight': f32 [16, 8], but gptq packs 4-bit values in a "
                          "2-D i32 tensor"));
  }
  {
    Linear l(gptq);
    l.qzeros = Tensor("m.qzeros", DType::I32, {1, 2}, 4);
    EXPECT_THAT(error([&] { l.unpack(gptq); }),
                HasSubstr("tensor 'm.qzeros': i32 [1, 2], but gptq stores i32 [1, 1]"));
  }
  {
    Linear l(gptq); // a group past the linear's one
    l.g_idx.set_word(3, 1);
    EXPECT_THAT(error([&] { l.unpack(gptq); }),
                HasSubstr("tensor 'm.g_idx': row 3 is in group 1, but the linear has 1 group(s)"));
  }
  {
    Linear l(QuantizedCheckpoint::Awq);
    l.scales.set_half(2, std::numeric_limits<float>::infinity());
    EXPECT_THAT(error([&] { l.unpack(QuantizedCheckpoint::Awq); }),
                HasSubstr("tensor 'm.scales': holds a NaN or an infinity"));
  }
}

TEST(QuantizedCheckpoint, DequantizesByEachColumnsGroup) {
  // 2 outputs of 256 inputs whose groups follow the activation order:
  // column k in group (k / 2) % 2.
  Int4WithZeros q;
  q.rows = 2;
  q.cols = 256;
  q.act_order = true;
  for (int k = 0; k < 256; ++k)
    q.group.push_back((k / 2) % 2);
  for (int i = 0; i < 2 * 256; ++i)
    q.values.push_back(static_cast<int8_t>(i % 16 - 8));
  q.zeros = {3, 9, 0, 16};          // [n][g]
  q.scales = {0.5f, 2.0f, 1.0f, 0.25f};
  const std::vector<float> w = dequantize_int4(q);
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 256; ++k) {
      const int g = n * 2 + q.group[k];
      EXPECT_EQ(w[n * 256 + k], float((n * 256 + k) % 16 - q.zeros[g]) * q.scales[g]);
    }
}

// An FP8 weight of 130 x 200 (2 x 2 blocks, the last ones partial) whose
// element (n, k) has code (n + k) % 120 and block (i, j) the scale i + 2j + 1.
struct Fp8Weight {
  Tensor weight{"w", DType::F8E4M3, {130, 200}, 1};
  Tensor scales{"w_scale_inv", DType::F32, {2, 2}, 4};

  Fp8Weight() {
    for (int64_t n = 0; n < 130; ++n)
      for (int64_t k = 0; k < 200; ++k)
        weight.bytes[n * 200 + k] = static_cast<uint8_t>((n + k) % 120);
    for (int i = 0; i < 4; ++i) {
      const float s = float(i / 2 + 2 * (i % 2) + 1);
      std::memcpy(scales.bytes.data() + 4 * i, &s, 4);
    }
  }
};

TEST(QuantizedCheckpoint, DequantizesFp8WeightsByBlock) {
  Fp8Weight f;
  EXPECT_EQ(fp8_scale_name("model.layers.0.mlp.up_proj.weight"),
            "model.layers.0.mlp.up_proj.weight_scale_inv");
  const std::vector<float> w = dequantize_fp8_block128(f.weight.view, f.scales.view);
  ASSERT_EQ(w.size(), 130u * 200);
  for (int64_t n : {0, 5, 127, 128, 129})
    for (int64_t k : {0, 77, 127, 128, 199}) {
      const float scale = float(n / 128 + 2 * (k / 128) + 1);
      EXPECT_EQ(w[n * 200 + k], e4m3_to_f32(static_cast<uint8_t>((n + k) % 120)) * scale)
          << n << ", " << k;
    }
  // bf16 scales read the same.
  Tensor bf16("w_scale_inv", DType::BF16, {2, 2}, 2);
  for (int i = 0; i < 4; ++i) {
    const uint16_t h = f32_to_bf16(float(i / 2 + 2 * (i % 2) + 1));
    std::memcpy(bf16.bytes.data() + 2 * i, &h, 2);
  }
  EXPECT_EQ(dequantize_fp8_block128(f.weight.view, bf16.view), w);
}

TEST(QuantizedCheckpoint, NamesTheFp8TensorAtFault) {
  auto error = [](const TensorView &weight, const TensorView &scales) -> std::string {
    try {
      dequantize_fp8_block128(weight, scales);
    } catch (const std::runtime_error &e) {
      return e.what();
    }
    return "(dequantized)";
  };
  Fp8Weight f;
  Tensor not_fp8("w", DType::F16, {130, 200}, 2);
  EXPECT_EQ(error(not_fp8.view, f.scales.view),
            "tensor 'w': f16 [130, 200], but an FP8 checkpoint stores a 2-D f8_e4m3 weight");
  Tensor per_tensor("w_scale_inv", DType::F32, {1}, 4);
  EXPECT_EQ(error(f.weight.view, per_tensor.view),
            "tensor 'w_scale_inv': [1], but w [130, 200] in blocks of 128 x 128 has [2, 2] "
            "scales");
  Tensor int_scales("w_scale_inv", DType::I32, {2, 2}, 4);
  EXPECT_EQ(error(f.weight.view, int_scales.view),
            "tensor 'w_scale_inv': i32, but block scales are f32 or bf16");
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(f.scales.bytes.data() + 4 * 3, &inf, 4);
  EXPECT_THAT(error(f.weight.view, f.scales.view),
              HasSubstr("tensor 'w_scale_inv': scale inf of block [1, 1] is not finite"));
  Fp8Weight nan;
  nan.weight.bytes[3 * 200 + 4] = 0xff;
  EXPECT_EQ(error(nan.weight.view, nan.scales.view), "tensor 'w': element [3, 4] is NaN");
}

// A compressed-tensors weight [130, 256]: FP8 codes (n + k) % 120, or int8
// values (n + k) % 200 - 100, and `scales` of the given shape, scale i
// being i + 1 (f32).
struct CompressedWeight {
  Tensor weight, scales;

  CompressedWeight(DType dtype, std::vector<int64_t> scale_shape)
      : weight("m.weight", dtype, {130, 256}, 1), scales("m.weight_scale", DType::F32,
                                                         std::move(scale_shape), 4) {
    for (int64_t n = 0; n < 130; ++n)
      for (int64_t k = 0; k < 256; ++k)
        weight.bytes[n * 256 + k] = static_cast<uint8_t>(
            dtype == DType::I8 ? int8_t((n + k) % 200 - 100) : int8_t((n + k) % 120));
    for (int64_t i = 0; i < Tensor::count(scales.view.shape); ++i) {
      const float s = float(i + 1);
      std::memcpy(scales.bytes.data() + 4 * i, &s, 4);
    }
  }
  float value(int64_t n, int64_t k) const {
    const uint8_t code = weight.bytes[n * 256 + k];
    return weight.view.dtype == DType::I8 ? float(int8_t(code)) : e4m3_to_f32(code);
  }
};

TEST(QuantizedCheckpoint, DequantizesCompressedTensorsByTheScalesShape) {
  EXPECT_EQ(compressed_scale_name("model.layers.0.mlp.up_proj.weight"),
            "model.layers.0.mlp.up_proj.weight_scale");
  // Which scale (n, k) takes, for each strategy the scales' shape implies.
  struct Case {
    const char *strategy;
    std::vector<int64_t> shape;
    std::function<int64_t(int64_t, int64_t)> scale;
  };
  const std::vector<Case> cases = {
      {"tensor", {1}, [](int64_t, int64_t) { return int64_t{0}; }},
      {"tensor (a scalar)", {}, [](int64_t, int64_t) { return int64_t{0}; }},
      {"channel", {130, 1}, [](int64_t n, int64_t) { return n; }},
      {"group of 64", {130, 4}, [](int64_t n, int64_t k) { return n * 4 + k / 64; }},
      {"block of 128 x 128", {2, 2}, [](int64_t n, int64_t k) { return n / 128 * 2 + k / 128; }},
  };
  for (DType dtype : {DType::F8E4M3, DType::I8})
    for (const Case &c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + c.strategy);
      CompressedWeight f(dtype, c.shape);
      const std::vector<float> w = dequantize_compressed(f.weight.view, f.scales.view);
      ASSERT_EQ(w.size(), 130u * 256);
      for (int64_t n : {0, 5, 127, 128, 129})
        for (int64_t k : {0, 63, 64, 127, 128, 255})
          EXPECT_EQ(w[n * 256 + k], f.value(n, k) * float(c.scale(n, k) + 1)) << n << ", " << k;
    }
}

TEST(QuantizedCheckpoint, NamesTheCompressedTensorAtFault) {
  auto error = [](const TensorView &weight, const TensorView &scales) -> std::string {
    try {
      dequantize_compressed(weight, scales);
    } catch (const std::runtime_error &e) {
      return e.what();
    }
    return "(dequantized)";
  };
  CompressedWeight f(DType::F8E4M3, {130, 1});
  Tensor f16("m.weight", DType::F16, {130, 256}, 2);
  EXPECT_EQ(error(f16.view, f.scales.view),
            "tensor 'm.weight': f16 [130, 256], but compressed-tensors stores a 2-D f8_e4m3 or "
            "i8 weight");
  Tensor uneven("m.weight_scale", DType::F32, {130, 3}, 4);
  EXPECT_EQ(error(f.weight.view, uneven.view),
            "tensor 'm.weight_scale': [130, 3], but m.weight [130, 256] takes one scale ([1]), "
            "one a row ([130, 1]), one a group of columns ([130, K / group]) or one a block of "
            "128 x 128 ([2, 2])");
  Tensor int_scales("m.weight_scale", DType::I32, {130, 1}, 4);
  EXPECT_EQ(error(f.weight.view, int_scales.view),
            "tensor 'm.weight_scale': i32, expected f32, bf16 or f16 scales");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(f.scales.bytes.data() + 4 * 7, &nan, 4);
  EXPECT_EQ(error(f.weight.view, f.scales.view), "tensor 'm.weight_scale': scale 7 is nan");
  CompressedWeight codes(DType::F8E4M3, {1});
  codes.weight.bytes[2 * 256 + 9] = 0x7f;
  EXPECT_EQ(error(codes.weight.view, codes.scales.view),
            "tensor 'm.weight': element [2, 9] is NaN");
}

// A pack-quantized linear of N = 8 outputs and K = 256 inputs: value
// (n + k) % 16 - 8 stored plus 8 at bits 4 (k % 8) of word [n, k / 8];
// scale [n, g] = n + g + 1 (f16); its shape as i64.
struct PackedLinear {
  Tensor packed{"m.weight_packed", DType::I32, {8, 32}, 4};
  Tensor scales{"m.weight_scale", DType::F16, {8, 2}, 2};
  Tensor shape{"m.weight_shape", DType::I64, {2}, 8};

  PackedLinear() {
    for (int64_t n = 0; n < 8; ++n) {
      for (int64_t j = 0; j < 32; ++j) {
        uint32_t w = 0;
        for (int i = 0; i < 8; ++i)
          w |= uint32_t((n + 8 * j + i) % 16) << (4 * i);
        packed.set_word(n * 32 + j, w);
      }
      for (int64_t g = 0; g < 2; ++g)
        scales.set_half(n * 2 + g, float(n + g + 1));
    }
    const int64_t dims[2] = {8, 256};
    std::memcpy(shape.bytes.data(), dims, sizeof dims);
  }
};

TEST(QuantizedCheckpoint, UnpacksCompressedTensorsInt4WithZeroPointsOfEight) {
  PackedLinear p;
  const Int4WithZeros q = unpack_compressed_int4(p.packed.view, p.scales.view, p.shape.view);
  ASSERT_EQ(q.rows, 8);
  ASSERT_EQ(q.cols, 256);
  EXPECT_FALSE(q.act_order);
  const std::vector<float> w = dequantize_int4(q);
  for (int64_t n = 0; n < 8; ++n)
    for (int64_t k = 0; k < 256; ++k) {
      EXPECT_EQ(q.values[n * 256 + k], (n + k) % 16 - 8);
      EXPECT_EQ(w[n * 256 + k], float((n + k) % 16 - 8) * float(n + k / 128 + 1));
    }
  EXPECT_THAT(q.zeros, ::testing::Each(8));
}

TEST(QuantizedCheckpoint, NamesTheCompressedInt4TensorAtFault) {
  auto error = [](const TensorView &packed, const TensorView &scales,
                  const TensorView &shape) -> std::string {
    try {
      unpack_compressed_int4(packed, scales, shape);
    } catch (const std::runtime_error &e) {
      return e.what();
    }
    return "(unpacked)";
  };
  PackedLinear p;
  Tensor odd_k("m.weight_shape", DType::I32, {2}, 4);
  odd_k.set_word(0, 8);
  odd_k.set_word(1, 200);
  EXPECT_EQ(error(p.packed.view, p.scales.view, odd_k.view),
            "tensor 'm.weight_shape': [8, 200]: llmserve reads linears whose K is a multiple "
            "of 128");
  Tensor float_shape("m.weight_shape", DType::F32, {2}, 4);
  EXPECT_EQ(error(p.packed.view, p.scales.view, float_shape.view),
            "tensor 'm.weight_shape': f32 [2], but compressed_tensors_int4 stores the "
            "linear's [N, K] as 2 integers");
  Tensor short_packed("m.weight_packed", DType::I32, {8, 16}, 4);
  EXPECT_EQ(error(short_packed.view, p.scales.view, p.shape.view),
            "tensor 'm.weight_packed': i32 [8, 16], but compressed_tensors_int4 stores i32 "
            "[8, 32]");
  Tensor groups_of_64("m.weight_scale", DType::F16, {8, 4}, 2);
  EXPECT_EQ(error(p.packed.view, groups_of_64.view, p.shape.view),
            "tensor 'm.weight_scale': [8, 4], but a linear of [8, 256] in groups of 128 has "
            "[8, 2] scales");
}

} // namespace
} // namespace llmserve
