// Weight quantization done at load, as the bundle asks (docs/bundle.md).
#ifndef LLMSERVE_MODEL_QUANTIZE_H
#define LLMSERVE_MODEL_QUANTIZE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace llmserve {

enum class WeightQuantization {
  // Per row (output channel) of an [N, K] matrix: int8 values and one f32
  // scale, w[n, k] ~ values[n, k] * scales[n].
  Int8Channel,
  // Per row and group of 128 columns of an [N, K] matrix (K a multiple of
  // 128): int4 values in [-8, 7] and one f32 scale, w[n, k] ~ values[n, k] *
  // scales[n, k / 128]. The scale is the group's element of largest
  // magnitude over -8, so that element is exactly -8 (llama.cpp's Q4_0).
  Int4Group128,
  // An FP8 checkpoint's weight as it stores it (never quantized at load):
  // e4m3 codes [N, K] and one f32 scale per block of 128 x 128 ([ceil(N /
  // 128), ceil(K / 128)]), w[n, k] = codes[n, k] * scales[n / 128, k / 128].
  Fp8Block128,
};

// Columns of a group of int4_group128.
inline constexpr int64_t kInt4GroupSize = 128;
// Rows and columns of a block of fp8_block128, which share a scale.
inline constexpr int64_t kFp8BlockSize = 128;

// Which array of a quantized weight a bundle buffer holds: zero points come
// with int4_group128 read from a GPTQ or AWQ checkpoint.
enum class QuantizedPart { Values, Scales, Zeros };

// The bundle's spellings: "int8_channel", "int4_group128", "fp8_block128"; "values",
// "scales", "zeros".
const char *quantization_name(WeightQuantization q);
std::optional<WeightQuantization> parse_quantization(std::string_view name);
const char *quantized_part_name(QuantizedPart p);
std::optional<QuantizedPart> parse_quantized_part(std::string_view name);

// int8_channel of the row-major [rows, cols] matrix `w`: scales[n] is
// max_k |w[n, k]| / 127 (1 for a row of zeros) and values[n, k] is
// w[n, k] / scales[n] rounded to nearest, ties to even, in [-127, 127].
// Either output may be null. Throws if `w` holds a NaN or an infinity.
void quantize_int8_channel(const float *w, int64_t rows, int64_t cols,
                           int8_t *values, float *scales);

// int4_group128 of the row-major [rows, cols] matrix `w` (cols a multiple of
// 128): for each group, m is its first element of largest magnitude, the
// scale starts as m / -8 (1 for a group of zeros, llama.cpp's Q4_0) and the
// values as w[n, k] / scale rounded to nearest, ties to even, in [-8, 7],
// one value per byte; then up to twice the least-squares scale of those
// values, sum(w q) / sum(q q), and the values rounded to it replace them
// while their squared error is smaller. Rows are quantized on several
// threads. Throws if `w` holds a NaN or an infinity.
void quantize_int4_group128(const float *w, int64_t rows, int64_t cols,
                            int8_t *values, float *scales);

} // namespace llmserve

#endif // LLMSERVE_MODEL_QUANTIZE_H
