// What the stand-in model produces for one request run alone: the expected
// output of every request, however the engine batched, chunked, cached or
// preempted it.
#ifndef LLMSERVE_TEST_CORE_REFERENCE_H
#define LLMSERVE_TEST_CORE_REFERENCE_H

#include "core/request.h"
#include "core/sampling_params.h"
#include "grammar/compiled_grammar.h"
#include "grammar/matcher.h"
#include "grammar/vocabulary.h"
#include "support/stand_in_executor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace llmserve::test {

struct Reference {
  std::vector<int32_t> tokens;
  FinishReason reason = FinishReason::kNone;
};

// Whether bit `token` of a mask row is set.
inline bool mask_allows(const std::vector<uint32_t> &mask, int32_t token) {
  return (mask[token / 32] >> (token % 32)) & 1u;
}

inline Reference run_alone(const StandInExecutor &model,
                           const std::vector<int32_t> &prompt,
                           const SamplingParams &params, int64_t seed,
                           const std::vector<int32_t> &eos_token_ids,
                           int32_t max_model_len) {
  auto contains = [](const std::vector<int32_t> &ids, int32_t token) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  uint64_t context = StandInExecutor::kEmptyContext;
  for (int32_t token : prompt)
    context = StandInExecutor::extend(context, token);
  // The logit entries, computed independently of LogitEntries: each distinct
  // token of the prompt (for the repetition penalty) and of the output, with
  // its output count, and each biased token (count -1 if in neither).
  const bool penalised = params.presence_penalty != 0.0f ||
                         params.frequency_penalty != 0.0f ||
                         params.repetition_penalty != 1.0f;
  std::map<int32_t, int32_t> output_counts;
  Reference ref;
  // Structured output: a matcher of its own, and the mask of each step.
  std::optional<grammar::Matcher> matcher;
  std::vector<uint32_t> mask;
  if (params.grammar) {
    matcher.emplace(params.grammar);
    mask.resize(params.grammar->vocabulary().mask_words());
  }
  while (true) {
    std::map<int32_t, std::pair<int32_t, float>> entries; // token -> count, bias
    if (penalised) {
      for (auto [token, count] : output_counts)
        entries[token] = {count, 0.0f};
      if (params.repetition_penalty != 1.0f)
        for (int32_t token : prompt)
          entries.try_emplace(token, std::pair<int32_t, float>{0, 0.0f});
    }
    auto bias_of = [&](int32_t token) -> float & {
      return entries.try_emplace(token, std::pair<int32_t, float>{-1, 0.0f}).first->second.second;
    };
    for (auto [token, bias] : params.logit_bias)
      bias_of(token) = bias;
    // Before min_tokens, the tokens that would end the request are banned
    // (unless a grammar decides where the output ends).
    if (static_cast<int32_t>(ref.tokens.size()) < params.min_tokens && !params.grammar) {
      if (!params.ignore_eos)
        for (int32_t token : eos_token_ids)
          bias_of(token) = -INFINITY;
      for (int32_t token : params.stop_token_ids)
        bias_of(token) = -INFINITY;
    }
    uint64_t penalties = 0;
    for (auto [token, entry] : entries)
      penalties += StandInExecutor::penalty_entry(token, entry.first, entry.second);
    if (matcher && matcher->fill_next_token_mask(mask.data()) == 0) {
      ref.reason = FinishReason::kError; // a dead end
      return ref;
    }
    auto allowed = [&](int32_t token) {
      if (matcher && !mask_allows(mask, token))
        return false;
      auto it = entries.find(token);
      return it == entries.end() || it->second.second != -INFINITY;
    };
    int32_t token = model.sample(context, params.temperature, seed, penalties, allowed);
    ++output_counts[token];
    ref.tokens.push_back(token);
    int32_t n = static_cast<int32_t>(ref.tokens.size());
    if (matcher && (!matcher->accept_token(token) || matcher->is_finished())) {
      ref.reason = matcher->is_finished() ? FinishReason::kStop : FinishReason::kError;
      return ref;
    }
    if (n >= params.min_tokens &&
        ((!params.ignore_eos && contains(eos_token_ids, token)) ||
         contains(params.stop_token_ids, token))) {
      ref.reason = FinishReason::kStop;
      return ref;
    }
    if (n >= params.max_tokens ||
        static_cast<int32_t>(prompt.size()) + n >= max_model_len) {
      ref.reason = FinishReason::kLength;
      return ref;
    }
    context = StandInExecutor::extend(context, token);
  }
}

} // namespace llmserve::test

#endif // LLMSERVE_TEST_CORE_REFERENCE_H
