#include "model/quantized_checkpoint.h"

#include "model/convert.h"
#include "model/quantize.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace llmserve {

namespace {

constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

std::string shape_text(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

[[noreturn]] void fail(const TensorView &t, const std::string &message) {
  throw std::runtime_error("tensor '" + t.name + "': " + message);
}

void expect(const TensorView &t, DType dtype, const std::vector<int64_t> &shape,
            const char *layout) {
  if (t.dtype != dtype || t.shape != shape)
    fail(t, std::string(dtype_name(t.dtype)) + " " + shape_text(t.shape) + ", but " + layout +
                " stores " + dtype_name(dtype) + " " + shape_text(shape));
}

// Element i of an int32 tensor (its bytes need not be aligned).
int32_t word(const TensorView &t, int64_t i) {
  int32_t w;
  std::memcpy(&w, t.data + i * sizeof(int32_t), sizeof w);
  return w;
}

int nibble(int32_t word, int i) { return (static_cast<uint32_t>(word) >> (4 * i)) & 0xF; }

} // namespace

const char *quantized_checkpoint_name(QuantizedCheckpoint c) {
  switch (c) {
  case QuantizedCheckpoint::Gptq:
    return "gptq";
  case QuantizedCheckpoint::GptqV2:
    return "gptq_v2";
  case QuantizedCheckpoint::Awq:
    return "awq";
  case QuantizedCheckpoint::Fp8Block128:
    return "fp8_block128";
  case QuantizedCheckpoint::CompressedTensors:
    return "compressed_tensors";
  case QuantizedCheckpoint::CompressedTensorsInt4:
    return "compressed_tensors_int4";
  }
  return "?";
}

std::optional<QuantizedCheckpoint> parse_quantized_checkpoint(std::string_view name) {
  for (QuantizedCheckpoint c :
       {QuantizedCheckpoint::Gptq, QuantizedCheckpoint::GptqV2, QuantizedCheckpoint::Awq,
        QuantizedCheckpoint::Fp8Block128, QuantizedCheckpoint::CompressedTensors,
        QuantizedCheckpoint::CompressedTensorsInt4})
    if (name == quantized_checkpoint_name(c))
      return c;
  return std::nullopt;
}

Int4WithZeros unpack_int4_checkpoint(QuantizedCheckpoint layout, const TensorView &qweight,
                                     const TensorView &qzeros, const TensorView &scales,
                                     const TensorView *g_idx) {
  const bool awq = layout == QuantizedCheckpoint::Awq;
  const char *name = quantized_checkpoint_name(layout);
  if (qweight.dtype != DType::I32 || qweight.shape.size() != 2)
    fail(qweight, std::string(dtype_name(qweight.dtype)) + " " + shape_text(qweight.shape) +
                      ", but " + name + " packs 4-bit values in a 2-D i32 tensor");
  // [K / 8, N] (GPTQ) or [K, N / 8] (AWQ).
  const int64_t k = awq ? qweight.shape[0] : 8 * qweight.shape[0];
  const int64_t n = awq ? 8 * qweight.shape[1] : qweight.shape[1];
  if (scales.shape.size() != 2 || scales.shape[1] != n || scales.shape[0] <= 0)
    fail(scales, shape_text(scales.shape) + ", but " + qweight.name + " " +
                     shape_text(qweight.shape) + " is a linear of " + std::to_string(n) +
                     " outputs: expected [groups, " + std::to_string(n) + "]");
  const int64_t groups = scales.shape[0];
  if (groups * kInt4GroupSize != k)
    fail(scales, std::to_string(groups) + " groups of " + std::to_string(k) +
                     " inputs, a group size of " +
                     (k % groups ? std::to_string(double(k) / double(groups))
                                 : std::to_string(k / groups)) +
                     "; llmserve reads groups of 128");
  if (scales.dtype != DType::F16 && scales.dtype != DType::BF16 && scales.dtype != DType::F32)
    fail(scales, std::string(dtype_name(scales.dtype)) + ", expected f16, bf16 or f32 scales");
  expect(qzeros, DType::I32, {groups, n / 8}, name);

  Int4WithZeros out;
  out.rows = n;
  out.cols = k;
  out.values.resize(static_cast<size_t>(n * k));
  out.zeros.resize(static_cast<size_t>(n * groups));
  out.scales.resize(static_cast<size_t>(n * groups));
  for (int64_t row = 0; row < qweight.shape[0]; ++row)
    for (int64_t col = 0; col < qweight.shape[1]; ++col) {
      const int32_t w = word(qweight, row * qweight.shape[1] + col);
      for (int i = 0; i < 8; ++i) {
        // AWQ: row k, column 8 col + order[i]; GPTQ: row 8 row + i, column col.
        const int64_t kk = awq ? row : 8 * row + i, nn = awq ? 8 * col + kAwqOrder[i] : col;
        out.values[nn * k + kk] = static_cast<int8_t>(nibble(w, i) - 8);
      }
    }
  const int zero_offset = layout == QuantizedCheckpoint::Gptq ? 1 : 0;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t col = 0; col < n / 8; ++col) {
      const int32_t w = word(qzeros, g * (n / 8) + col);
      for (int i = 0; i < 8; ++i) {
        const int64_t nn = 8 * col + (awq ? kAwqOrder[i] : i);
        out.zeros[nn * groups + g] = static_cast<int8_t>(nibble(w, i) + zero_offset);
      }
    }
  convert_tensor(scales, DType::F32, /*transpose=*/true, out.scales.data());
  for (float s : out.scales)
    if (!std::isfinite(s))
      fail(scales, "holds a NaN or an infinity");
  out.group.resize(static_cast<size_t>(k));
  for (int64_t kk = 0; kk < k; ++kk)
    out.group[kk] = static_cast<int32_t>(kk / kInt4GroupSize);
  if (g_idx) {
    expect(*g_idx, DType::I32, {k}, name);
    for (int64_t kk = 0; kk < k; ++kk) {
      const int32_t g = word(*g_idx, kk);
      if (g < 0 || g >= groups)
        fail(*g_idx, "row " + std::to_string(kk) + " is in group " + std::to_string(g) +
                         ", but the linear has " + std::to_string(groups) + " group(s)");
      out.act_order |= g != out.group[kk];
      out.group[kk] = g;
    }
  }
  return out;
}

namespace {

// Scales as f32, each of them finite.
std::vector<float> finite_scales(const TensorView &scale) {
  if (scale.dtype != DType::F32 && scale.dtype != DType::BF16 && scale.dtype != DType::F16)
    fail(scale, std::string(dtype_name(scale.dtype)) + ", expected f32, bf16 or f16 scales");
  std::vector<float> out(static_cast<size_t>(scale.numel()));
  convert_tensor(scale, DType::F32, /*transpose=*/false, out.data());
  for (size_t i = 0; i < out.size(); ++i)
    if (!std::isfinite(out[i]))
      fail(scale, "scale " + std::to_string(i) + " is " + std::to_string(out[i]));
  return out;
}

} // namespace

Int4WithZeros unpack_compressed_int4(const TensorView &weight_packed,
                                     const TensorView &weight_scale,
                                     const TensorView &weight_shape) {
  const char *name = quantized_checkpoint_name(QuantizedCheckpoint::CompressedTensorsInt4);
  if ((weight_shape.dtype != DType::I32 && weight_shape.dtype != DType::I64) ||
      weight_shape.shape != std::vector<int64_t>{2})
    fail(weight_shape, std::string(dtype_name(weight_shape.dtype)) + " " +
                           shape_text(weight_shape.shape) + ", but " + name +
                           " stores the linear's [N, K] as 2 integers");
  int64_t dims[2];
  for (int i = 0; i < 2; ++i) {
    if (weight_shape.dtype == DType::I32) {
      dims[i] = word(weight_shape, i);
    } else {
      std::memcpy(&dims[i], weight_shape.data + i * sizeof(int64_t), sizeof(int64_t));
    }
  }
  const int64_t n = dims[0], k = dims[1];
  if (n <= 0 || k <= 0 || k % kInt4GroupSize != 0)
    fail(weight_shape, "[" + std::to_string(n) + ", " + std::to_string(k) +
                           "]: llmserve reads linears whose K is a multiple of 128");
  expect(weight_packed, DType::I32, {n, k / 8}, name);
  const int64_t groups = k / kInt4GroupSize;
  if (weight_scale.shape != std::vector<int64_t>{n, groups})
    fail(weight_scale, shape_text(weight_scale.shape) + ", but a linear of [" +
                           std::to_string(n) + ", " + std::to_string(k) +
                           "] in groups of 128 has " + shape_text({n, groups}) + " scales");
  Int4WithZeros out;
  out.rows = n;
  out.cols = k;
  out.scales = finite_scales(weight_scale);
  out.values.resize(static_cast<size_t>(n * k));
  for (int64_t i = 0; i < n * k / 8; ++i) {
    const int32_t w = word(weight_packed, i);
    for (int j = 0; j < 8; ++j)
      out.values[8 * i + j] = static_cast<int8_t>(nibble(w, j) - 8);
  }
  // Symmetric: w = (stored - 8) * scale, what zero points of 8 give.
  out.zeros.assign(static_cast<size_t>(n * groups), 8);
  out.group.resize(static_cast<size_t>(k));
  for (int64_t kk = 0; kk < k; ++kk)
    out.group[kk] = static_cast<int32_t>(kk / kInt4GroupSize);
  return out;
}

std::vector<float> dequantize_int4(const Int4WithZeros &q) {
  const int64_t groups = q.cols / kInt4GroupSize;
  std::vector<float> w(static_cast<size_t>(q.rows * q.cols));
  for (int64_t n = 0; n < q.rows; ++n)
    for (int64_t k = 0; k < q.cols; ++k) {
      const int64_t g = n * groups + q.group[k];
      w[n * q.cols + k] =
          static_cast<float>(q.values[n * q.cols + k] + 8 - q.zeros[g]) * q.scales[g];
    }
  return w;
}

std::string fp8_scale_name(const std::string &weight) { return weight + "_scale_inv"; }

void check_fp8_weight(const TensorView &weight) {
  if (weight.dtype != DType::F8E4M3 || weight.shape.size() != 2)
    fail(weight, std::string(dtype_name(weight.dtype)) + " " + shape_text(weight.shape) +
                     ", but an FP8 checkpoint stores a 2-D f8_e4m3 weight");
}

void check_fp8_codes(const TensorView &weight) {
  check_fp8_weight(weight);
  const int64_t k = weight.shape[1];
  for (int64_t i = 0; i < weight.shape[0] * k; ++i)
    if ((weight.data[i] & 0x7f) == 0x7f)
      fail(weight, "element [" + std::to_string(i / k) + ", " + std::to_string(i % k) + "] is NaN");
}

std::vector<float> fp8_block_scales(const TensorView &weight, const TensorView &scale_inv) {
  const int64_t n = weight.shape[0], k = weight.shape[1];
  const std::vector<int64_t> blocks = {(n + kFp8BlockSize - 1) / kFp8BlockSize,
                                       (k + kFp8BlockSize - 1) / kFp8BlockSize};
  if (scale_inv.dtype != DType::F32 && scale_inv.dtype != DType::BF16)
    fail(scale_inv, std::string(dtype_name(scale_inv.dtype)) +
                        ", but block scales are f32 or bf16");
  if (scale_inv.shape != blocks)
    fail(scale_inv, shape_text(scale_inv.shape) + ", but " + weight.name + " " +
                        shape_text(weight.shape) + " in blocks of 128 x 128 has " +
                        shape_text(blocks) + " scales");
  std::vector<float> scales(static_cast<size_t>(blocks[0] * blocks[1]));
  convert_tensor(scale_inv, DType::F32, /*transpose=*/false, scales.data());
  for (size_t i = 0; i < scales.size(); ++i)
    if (!std::isfinite(scales[i]))
      fail(scale_inv, "scale " + std::to_string(scales[i]) + " of block [" +
                          std::to_string(i / blocks[1]) + ", " + std::to_string(i % blocks[1]) +
                          "] is not finite");
  return scales;
}

std::vector<float> dequantize_fp8_block128(const TensorView &weight, const TensorView &scale_inv) {
  check_fp8_codes(weight);
  const std::vector<float> scales = fp8_block_scales(weight, scale_inv);
  const int64_t n = weight.shape[0], k = weight.shape[1];
  const int64_t block_columns = (k + kFp8BlockSize - 1) / kFp8BlockSize;
  std::vector<float> w(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      w[r * k + c] = e4m3_to_f32(weight.data[r * k + c]) *
                     scales[(r / kFp8BlockSize) * block_columns + c / kFp8BlockSize];
  return w;
}

std::string compressed_scale_name(const std::string &weight) {
  const std::string suffix = ".weight";
  const bool module = weight.size() > suffix.size() &&
                      weight.compare(weight.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (module ? weight.substr(0, weight.size() - suffix.size()) : weight) + ".weight_scale";
}

std::vector<float> dequantize_compressed(const TensorView &weight, const TensorView &scale) {
  constexpr int64_t kBlock = 128;
  const bool fp8 = weight.dtype == DType::F8E4M3;
  if ((!fp8 && weight.dtype != DType::I8) || weight.shape.size() != 2)
    fail(weight, std::string(dtype_name(weight.dtype)) + " " + shape_text(weight.shape) +
                     ", but compressed-tensors stores a 2-D f8_e4m3 or i8 weight");
  const int64_t n = weight.shape[0], k = weight.shape[1];
  const std::vector<float> scales = finite_scales(scale);
  // Element (r, c) takes scale (r / row_divisor) * scale_cols + c / width:
  // one for the tensor, one per row, per group of columns, or per block of
  // 128 x 128.
  const std::vector<int64_t> blocks = {(n + kBlock - 1) / kBlock, (k + kBlock - 1) / kBlock};
  int64_t row_divisor, scale_cols, width;
  if (scales.size() == 1) {
    row_divisor = n, scale_cols = 1, width = k;
  } else if (scale.shape.size() == 2 && scale.shape[0] == n && scale.shape[1] > 0 &&
             k % scale.shape[1] == 0) {
    row_divisor = 1, scale_cols = scale.shape[1], width = k / scale.shape[1];
  } else if (scale.shape == blocks) {
    row_divisor = kBlock, scale_cols = blocks[1], width = kBlock;
  } else {
    fail(scale, shape_text(scale.shape) + ", but " + weight.name + " " +
                    shape_text(weight.shape) + " takes one scale ([1]), one a row ([" +
                    std::to_string(n) + ", 1]), one a group of columns ([" + std::to_string(n) +
                    ", K / group]) or one a block of 128 x 128 (" + shape_text(blocks) + ")");
  }
  std::vector<float> w(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      const uint8_t code = weight.data[r * k + c];
      if (fp8 && (code & 0x7f) == 0x7f)
        fail(weight, "element [" + std::to_string(r) + ", " + std::to_string(c) + "] is NaN");
      const float value = fp8 ? e4m3_to_f32(code) : static_cast<float>(static_cast<int8_t>(code));
      w[r * k + c] = value * scales[(r / row_divisor) * scale_cols + c / width];
    }
  return w;
}

} // namespace llmserve
