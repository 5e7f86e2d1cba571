#include "core/sampling_params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>

namespace llmserve {
namespace {

TEST(SamplingParams, DefaultsAreValid) { SamplingParams().validate(); }

TEST(SamplingParams, NamesTheFieldOutOfRange) {
  struct Case {
    const char *field;
    std::function<void(SamplingParams &)> set;
  };
  const Case cases[] = {
      {"temperature", [](SamplingParams &p) { p.temperature = -0.5f; }},
      {"temperature", [](SamplingParams &p) { p.temperature = NAN; }},
      {"top_p", [](SamplingParams &p) { p.top_p = 0.0f; }},
      {"top_p", [](SamplingParams &p) { p.top_p = 1.5f; }},
      {"top_k", [](SamplingParams &p) { p.top_k = -1; }},
      {"min_p", [](SamplingParams &p) { p.min_p = 2.0f; }},
      {"presence_penalty", [](SamplingParams &p) { p.presence_penalty = 3.0f; }},
      {"frequency_penalty", [](SamplingParams &p) { p.frequency_penalty = -2.5f; }},
      {"repetition_penalty", [](SamplingParams &p) { p.repetition_penalty = 0.0f; }},
      {"max_tokens", [](SamplingParams &p) { p.max_tokens = 0; }},
      {"min_tokens", [](SamplingParams &p) { p.min_tokens = 17; }},
      {"stop_token_ids", [](SamplingParams &p) { p.stop_token_ids = {3, -4}; }},
      {"logprobs", [](SamplingParams &p) { p.logprobs = 21; }},
      {"logprobs", [](SamplingParams &p) { p.logprobs = -2; }},
  };
  for (const Case &c : cases) {
    SamplingParams p;
    c.set(p);
    try {
      p.validate();
      ADD_FAILURE() << c.field << " out of range was accepted";
    } catch (const std::invalid_argument &e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(std::string(c.field) + " = "));
    }
  }
}

} // namespace
} // namespace llmserve
