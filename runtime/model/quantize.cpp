#include "model/quantize.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace llmserve {

const char *quantization_name(WeightQuantization q) {
  switch (q) {
  case WeightQuantization::Int8Channel:
    return "int8_channel";
  case WeightQuantization::Int4Group128:
    return "int4_group128";
  case WeightQuantization::Fp8Block128:
    return "fp8_block128";
  }
  return "";
}

std::optional<WeightQuantization> parse_quantization(std::string_view name) {
  if (name == "int8_channel")
    return WeightQuantization::Int8Channel;
  if (name == "int4_group128")
    return WeightQuantization::Int4Group128;
  if (name == "fp8_block128")
    return WeightQuantization::Fp8Block128;
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

// x rounded to the nearest integer, ties to even, for |x| < 2^22 (larger
// magnitudes come back at least 2^21, which the callers' clamps take):
// adding and subtracting 1.5 * 2^23 rounds in the default rounding mode,
// as rint does, without a library call.
float round_half_even(float x) {
  constexpr float kShift = 12582912.0f;
  return (x + kShift) - kShift;
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
        // |row[k] / scale| <= 127 up to rounding.
        values[n * cols + k] = static_cast<int8_t>(
            std::fmax(-127.0f, std::fmin(127.0f, round_half_even(row[k] / scale))));
  }
}

namespace {

// Least-squares refinements of an int4 group's scale (quantize_int4_group128).
constexpr int kInt4Refinements = 2;
// Elements a quantizing thread takes at least.
constexpr int64_t kElementsPerThread = int64_t{1} << 20;

// A group's int4 values at `scale` (w / scale rounded, in [-8, 7]) and, in
// double, its squared error, sum of w * q and sum of q * q.
struct Int4Rounding {
  double error = 0, wq = 0, qq = 0;
};
Int4Rounding round_int4(const float *group, float scale, int8_t *q) {
  Int4Rounding r;
  for (int64_t k = 0; k < kInt4GroupSize; ++k) {
    q[k] = static_cast<int8_t>(
        std::fmax(-8.0f, std::fmin(7.0f, round_half_even(group[k] / scale))));
    const double d = double(group[k]) - double(scale) * q[k];
    r.error += d * d;
    r.wq += double(group[k]) * q[k];
    r.qq += double(q[k]) * q[k];
  }
  return r;
}

} // namespace

void quantize_int4_group128(const float *w, int64_t rows, int64_t cols,
                            int8_t *values, float *scales) {
  if (cols % kInt4GroupSize != 0)
    throw std::runtime_error("int4_group128 quantizes rows of a multiple of 128 columns, got " +
                             std::to_string(cols));
  const int64_t groups = cols / kInt4GroupSize;
  auto quantize_rows = [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float *row = w + n * cols;
      check_finite(row, n, cols, "int4_group128");
      for (int64_t g = 0; g < groups; ++g) {
        const float *group = row + g * kInt4GroupSize;
        float largest = 0;
        for (int64_t k = 0; k < kInt4GroupSize; ++k)
          if (std::fabs(group[k]) > std::fabs(largest))
            largest = group[k];
        // llama.cpp's Q4_0 scale, then up to kInt4Refinements times the
        // least-squares scale of the values, sum(w q) / sum(q q), while
        // that rounds to less error.
        float scale = largest != 0 ? largest / -8.0f : 1.0f;
        int8_t q[kInt4GroupSize], refined_q[kInt4GroupSize];
        Int4Rounding best = round_int4(group, scale, q);
        for (int step = 0; step < kInt4Refinements && best.qq > 0; ++step) {
          const float refined = static_cast<float>(best.wq / best.qq);
          const Int4Rounding next =
              refined != 0 ? round_int4(group, refined, refined_q) : Int4Rounding{};
          if (refined == 0 || !(next.error < best.error))
            break;
          best = next;
          scale = refined;
          std::memcpy(q, refined_q, sizeof q);
        }
        if (scales)
          scales[n * groups + g] = scale;
        if (values)
          std::memcpy(values + n * cols + g * kInt4GroupSize, q, sizeof q);
      }
    }
  };
  // Rows in parallel, each on its own; the error of the first bad row is
  // the one thrown, as without threads.
  const int64_t threads = std::min<int64_t>(
      std::max(1u, std::thread::hardware_concurrency()), rows * cols / kElementsPerThread + 1);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  auto quantize_part = [&](int64_t t) {
    try {
      quantize_rows(rows * t / threads, rows * (t + 1) / threads);
    } catch (...) {
      errors[static_cast<size_t>(t)] = std::current_exception();
    }
  };
  // The calling thread takes the first part.
  std::vector<std::thread> workers;
  for (int64_t t = 1; t < threads; ++t)
    workers.emplace_back(quantize_part, t);
  quantize_part(0);
  for (std::thread &worker : workers)
    worker.join();
  for (const std::exception_ptr &error : errors)
    if (error)
      std::rethrow_exception(error);
}

} // namespace llmserve
