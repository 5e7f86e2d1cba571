#include "model/quantize.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace llmserve {

const char *quantization_name(WeightQuantization q) {
  switch (q) {
  case WeightQuantization::Int8Channel:
    return "int8_channel";
  case WeightQuantization::Int4Group128:
    return "int4_group128";
  }
  return "";
}

std::optional<WeightQuantization> parse_quantization(std::string_view name) {
  if (name == "int8_channel")
    return WeightQuantization::Int8Channel;
  if (name == "int4_group128")
    return WeightQuantization::Int4Group128;
  return std::nullopt;
}

const char *quantized_part_name(QuantizedPart p) {
  switch (p) {
  case QuantizedPart::Values:
    return "values";
  case QuantizedPart::Scales:
    return "scales";
  case QuantizedPart::Zeros:
    return "zeros";
  }
  return "?";
}

std::optional<QuantizedPart> parse_quantized_part(std::string_view name) {
  for (QuantizedPart p : {QuantizedPart::Values, QuantizedPart::Scales, QuantizedPart::Zeros})
    if (name == quantized_part_name(p))
      return p;
  return std::nullopt;
}

namespace {

void check_finite(const float *row, int64_t n, int64_t cols, const char *scheme) {
  bool finite = true; // branch-free, so that it vectorizes
  for (int64_t k = 0; k < cols; ++k)
    finite &= std::isfinite(row[k]);
  if (!finite)
    for (int64_t k = 0; k < cols; ++k)
      if (!std::isfinite(row[k]))
        throw std::runtime_error("row " + std::to_string(n) + " holds " +
                                 std::to_string(row[k]) + ", which " + scheme +
                                 " cannot quantize");
}

} // namespace

void quantize_int8_channel(const float *w, int64_t rows, int64_t cols,
                           int8_t *values, float *scales) {
  for (int64_t n = 0; n < rows; ++n) {
    const float *row = w + n * cols;
    check_finite(row, n, cols, "int8_channel");
    float absmax = 0;
    for (int64_t k = 0; k < cols; ++k)
      absmax = std::fmax(absmax, std::fabs(row[k]));
    const float scale = absmax > 0 ? absmax / 127.0f : 1.0f;
    if (scales)
      scales[n] = scale;
    if (values)
      for (int64_t k = 0; k < cols; ++k)
        // |row[k] / scale| <= 127 up to rounding; rint rounds half to even
        // in the default rounding mode.
        values[n * cols + k] = static_cast<int8_t>(
            std::fmax(-127.0f, std::fmin(127.0f, std::rint(row[k] / scale))));
  }
}

void quantize_int4_group128(const float *w, int64_t rows, int64_t cols,
                            int8_t *values, float *scales) {
  if (cols % kInt4GroupSize != 0)
    throw std::runtime_error("int4_group128 quantizes rows of a multiple of 128 columns, got " +
                             std::to_string(cols));
  const int64_t groups = cols / kInt4GroupSize;
  for (int64_t n = 0; n < rows; ++n) {
    const float *row = w + n * cols;
    check_finite(row, n, cols, "int4_group128");
    for (int64_t g = 0; g < groups; ++g) {
      const float *group = row + g * kInt4GroupSize;
      float largest = 0;
      for (int64_t k = 0; k < kInt4GroupSize; ++k)
        if (std::fabs(group[k]) > std::fabs(largest))
          largest = group[k];
      const float scale = largest != 0 ? largest / -8.0f : 1.0f;
      if (scales)
        scales[n * groups + g] = scale;
      if (values)
        for (int64_t k = 0; k < kInt4GroupSize; ++k)
          values[n * cols + g * kInt4GroupSize + k] = static_cast<int8_t>(
              std::fmax(-8.0f, std::fmin(7.0f, std::rint(group[k] / scale))));
    }
  }
}

} // namespace llmserve
