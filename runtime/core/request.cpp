#include "core/request.h"

#include <utility>

namespace llmserve {

const char *to_string(FinishReason reason) {
  switch (reason) {
  case FinishReason::kNone:
    return "none";
  case FinishReason::kStop:
    return "stop";
  case FinishReason::kLength:
    return "length";
  case FinishReason::kAbort:
    return "abort";
  case FinishReason::kError:
    return "error";
  }
  return "none";
}

int64_t default_seed(uint64_t request_id) {
  // splitmix64: consecutive ids get unrelated seeds.
  uint64_t z = request_id + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<int64_t>(z ^ (z >> 31));
}

Request::Request(uint64_t id, std::vector<int32_t> prompt,
                 SamplingParams params, Clock::time_point arrival)
    : id(id), tokens(std::move(prompt)),
      num_prompt_tokens(static_cast<int32_t>(tokens.size())),
      params(std::move(params)),
      seed(this->params.seed ? *this->params.seed : default_seed(id)),
      logit_entries(this->params, tokens) {
  times.arrival = arrival;
}

} // namespace llmserve
