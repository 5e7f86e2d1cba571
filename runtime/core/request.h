// One generation request as the scheduler tracks it, and what the engine
// reports about it after each step.
#ifndef LLMSERVE_CORE_REQUEST_H
#define LLMSERVE_CORE_REQUEST_H

#include "core/grammar_state.h"
#include "core/logit_entries.h"
#include "core/sampling_params.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmserve {

struct RadixNode;

using Clock = std::chrono::steady_clock;

// Seconds from `a` to `b`.
inline double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// waiting -> running -> finished; running -> preempted (back in line, its
// blocks freed, to be recomputed) -> running. Any state -> finished on abort.
enum class RequestStatus { kWaiting, kRunning, kPreempted, kFinished };

enum class FinishReason { kNone, kStop, kLength, kAbort, kError };
inline constexpr int kNumFinishReasons = 5;
// "stop", "length", "abort", "error" (OpenAI's finish_reason words) or "none".
const char *to_string(FinishReason reason);

struct RequestTimes {
  Clock::time_point arrival;
  Clock::time_point first_scheduled; // first admitted to a step
  Clock::time_point first_token;
  Clock::time_point finish;
};

// The seed a request samples with when its SamplingParams carry none.
int64_t default_seed(uint64_t request_id);

struct Request {
  Request(uint64_t id, std::vector<int32_t> prompt, SamplingParams params,
          Clock::time_point arrival);

  // The tokens so far, those still being sampled included.
  int32_t num_tokens() const {
    return static_cast<int32_t>(tokens.size()) + num_pending_tokens;
  }
  // The generated tokens known so far: those reported.
  int32_t num_output_tokens() const {
    return static_cast<int32_t>(tokens.size()) - num_prompt_tokens;
  }
  // Tokens still to run through the model before the next token is sampled:
  // 1 while decoding, more while (re)computing a prompt.
  int32_t num_uncomputed_tokens() const {
    return num_tokens() - num_computed_tokens;
  }

  uint64_t id;
  std::vector<int32_t> tokens; // the prompt, then the generated tokens
  // Tokens that launched steps sample for this request and that are not
  // back yet (at most 2: the step in flight and the one launched after it).
  // The last one is row `pending_row` of the latest launched step.
  int32_t num_pending_tokens = 0;
  int32_t pending_row = -1;
  int32_t num_prompt_tokens;
  SamplingParams params;
  int64_t seed;
  LogitEntries logit_entries;
  // With params.grammar: the grammar's state, set by Engine::add_request.
  std::optional<GrammarState> grammar;

  RequestStatus status = RequestStatus::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;

  // KV blocks of tokens[0, num_computed_tokens), in order; shared prefix
  // blocks come from the radix cache. Counts the tokens of launched steps,
  // whether or not they are back.
  std::vector<int32_t> blocks;
  int32_t num_computed_tokens = 0;
  // Prompt tokens found in the prefix cache when first admitted.
  int32_t num_cached_tokens = 0;
  // Deepest radix node this request holds locked, or null.
  RadixNode *cache_node = nullptr;
  // Tokens given to this request in the step being built.
  int32_t num_scheduled_tokens = 0;

  RequestTimes times; // each token's own time is its RequestOutput::time
};

// What one step did to one request.
struct RequestOutput {
  uint64_t id = 0;
  // The token sampled this step (EOS included), or -1 when the request only
  // ended (abort, error, stop from outside).
  int32_t token = -1;
  // When the request asked for log-probs (SamplingParams::logprobs >= 0):
  // the token's log-probability and the top tokens with theirs, most likely
  // first.
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top_logprobs;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::string error; // why, when finish_reason is kError
  Clock::time_point time; // when the new tokens were sampled or it finished
  RequestTimes times;
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_tokens = 0;
  int32_t num_output_tokens = 0;
};

} // namespace llmserve

#endif // LLMSERVE_CORE_REQUEST_H
