#include "core/penalty_history.h"

namespace llmserve {

PenaltyHistory::PenaltyHistory(const SamplingParams &params,
                               const std::vector<int32_t> &prompt)
    : enabled_(params.presence_penalty != 0.0f ||
               params.frequency_penalty != 0.0f ||
               params.repetition_penalty != 1.0f) {
  if (params.repetition_penalty != 1.0f)
    for (int32_t token : prompt)
      count_of(token);
}

void PenaltyHistory::add_output(int32_t token) {
  if (enabled_)
    ++count_of(token);
}

int32_t &PenaltyHistory::count_of(int32_t token) {
  auto [it, inserted] = index_.try_emplace(token, tokens_.size());
  if (inserted) {
    tokens_.push_back(token);
    counts_.push_back(0);
  }
  return counts_[it->second];
}

} // namespace llmserve
