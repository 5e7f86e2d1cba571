#include "model/quantize.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace llmserve {

const char *quantization_name(WeightQuantization q) {
  switch (q) {
  case WeightQuantization::Int8Channel:
    return "int8_channel";
  }
  return "";
}

std::optional<WeightQuantization> parse_quantization(std::string_view name) {
  if (name == "int8_channel")
    return WeightQuantization::Int8Channel;
  return std::nullopt;
}

const char *quantized_part_name(QuantizedPart p) {
  return p == QuantizedPart::Values ? "values" : "scales";
}

std::optional<QuantizedPart> parse_quantized_part(std::string_view name) {
  if (name == "values")
    return QuantizedPart::Values;
  if (name == "scales")
    return QuantizedPart::Scales;
  return std::nullopt;
}

void quantize_int8_channel(const float *w, int64_t rows, int64_t cols,
                           int8_t *values, float *scales) {
  for (int64_t n = 0; n < rows; ++n) {
    const float *row = w + n * cols;
    // Branch-free loops, so that they vectorize.
    float absmax = 0;
    bool finite = true;
    for (int64_t k = 0; k < cols; ++k) {
      finite &= std::isfinite(row[k]);
      absmax = std::fmax(absmax, std::fabs(row[k]));
    }
    if (!finite)
      for (int64_t k = 0; k < cols; ++k)
        if (!std::isfinite(row[k]))
          throw std::runtime_error("row " + std::to_string(n) + " holds " +
                                   std::to_string(row[k]) +
                                   ", which int8_channel cannot quantize");
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

} // namespace llmserve
