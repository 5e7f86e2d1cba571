// The token history a request's presence, frequency and repetition penalties
// look at, kept in the form the step contract wants: each distinct token once,
// with how often it occurs in the output (0: only in the prompt). Updated
// incrementally, one sampled token at a time.
#ifndef LLMSERVE_CORE_PENALTY_HISTORY_H
#define LLMSERVE_CORE_PENALTY_HISTORY_H

#include "core/sampling_params.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace llmserve {

class PenaltyHistory {
public:
  // Tracks nothing for requests without penalties. The prompt matters only
  // to the repetition penalty (presence and frequency count the output).
  PenaltyHistory(const SamplingParams &params,
                 const std::vector<int32_t> &prompt);

  void add_output(int32_t token);

  // Parallel arrays: distinct tokens and their output counts.
  const std::vector<int32_t> &tokens() const { return tokens_; }
  const std::vector<int32_t> &counts() const { return counts_; }

private:
  int32_t &count_of(int32_t token);

  bool enabled_;
  std::vector<int32_t> tokens_;
  std::vector<int32_t> counts_;
  std::unordered_map<int32_t, size_t> index_; // token -> position in tokens_
};

} // namespace llmserve

#endif // LLMSERVE_CORE_PENALTY_HISTORY_H
