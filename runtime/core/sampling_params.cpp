#include "core/sampling_params.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace llmserve {
namespace {

void require(bool ok, const char *field, const std::string &value,
             const char *rule) {
  if (!ok)
    throw std::invalid_argument("sampling parameter " + std::string(field) +
                                " = " + value + ": must be " + rule);
}

std::string str(float v) { return std::to_string(v); }
std::string str(int32_t v) { return std::to_string(v); }

} // namespace

void SamplingParams::validate() const {
  require(std::isfinite(temperature) && temperature >= 0.0f, "temperature",
          str(temperature), ">= 0");
  require(top_p > 0.0f && top_p <= 1.0f, "top_p", str(top_p), "in (0, 1]");
  require(top_k >= 0, "top_k", str(top_k), ">= 0");
  require(min_p >= 0.0f && min_p <= 1.0f, "min_p", str(min_p), "in [0, 1]");
  require(presence_penalty >= -2.0f && presence_penalty <= 2.0f,
          "presence_penalty", str(presence_penalty), "in [-2, 2]");
  require(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f,
          "frequency_penalty", str(frequency_penalty), "in [-2, 2]");
  require(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f,
          "repetition_penalty", str(repetition_penalty), "> 0");
  require(max_tokens >= 1, "max_tokens", str(max_tokens), ">= 1");
  require(min_tokens >= 0 && min_tokens <= max_tokens, "min_tokens",
          str(min_tokens), "in [0, max_tokens]");
  for (const auto &[token, bias] : logit_bias) {
    require(token >= 0, "logit_bias", str(token), "token ids >= 0");
    require(bias >= -100.0f && bias <= 100.0f, "logit_bias", str(bias), "in [-100, 100]");
  }
  for (int32_t id : stop_token_ids)
    require(id >= 0, "stop_token_ids", str(id), "token ids >= 0");
  require(logprobs >= -1 && logprobs <= 20, "logprobs", str(logprobs),
          "in [-1, 20]");
}

} // namespace llmserve
