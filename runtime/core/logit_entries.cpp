#include "core/logit_entries.h"

#include <algorithm>

namespace llmserve {

LogitEntries::LogitEntries(const SamplingParams &params, const std::vector<int32_t> &prompt)
    : tracks_history_(params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f ||
                      params.repetition_penalty != 1.0f) {
  if (params.repetition_penalty != 1.0f)
    for (int32_t token : prompt)
      entry_of(token, 0);
  for (const auto &[token, bias] : params.logit_bias)
    bias_[entry_of(token, -1)] = bias;
}

void LogitEntries::add_output(int32_t token) {
  if (!tracks_history_)
    return;
  int32_t &count = counts_[entry_of(token, 0)];
  count = std::max(count, 0) + 1; // a biased token is now in the output
}

size_t LogitEntries::entry_of(int32_t token, int32_t count) {
  auto [it, inserted] = index_.try_emplace(token, tokens_.size());
  if (inserted) {
    tokens_.push_back(token);
    counts_.push_back(count);
    bias_.push_back(0.0f);
  }
  return it->second;
}

} // namespace llmserve
