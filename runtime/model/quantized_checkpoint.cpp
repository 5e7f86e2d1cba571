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
  }
  return "?";
}

std::optional<QuantizedCheckpoint> parse_quantized_checkpoint(std::string_view name) {
  for (QuantizedCheckpoint c :
       {QuantizedCheckpoint::Gptq, QuantizedCheckpoint::GptqV2, QuantizedCheckpoint::Awq})
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
  if (g_idx) {
    expect(*g_idx, DType::I32, {k}, name);
    for (int64_t kk = 0; kk < k; ++kk)
      if (word(*g_idx, kk) != kk / kInt4GroupSize)
        fail(*g_idx, "row " + std::to_string(kk) + " is in group " +
                         std::to_string(word(*g_idx, kk)) + ", not " +
                         std::to_string(kk / kInt4GroupSize) +
                         ": act-order (desc_act) checkpoints are not supported");
  }
  return out;
}

} // namespace llmserve
