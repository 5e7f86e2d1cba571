// A request's logit entries in the form the step contract wants: each distinct
// token its presence, frequency and repetition penalties or its logit_bias
// touch, once, with how often it occurs in the output (0: only in the prompt;
// -1: in neither, a token that is only biased) and its bias. Updated
// incrementally, one sampled token at a time.
#ifndef LLMSERVE_CORE_LOGIT_ENTRIES_H
#define LLMSERVE_CORE_LOGIT_ENTRIES_H

#include "core/sampling_params.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace llmserve {

class LogitEntries {
public:
  // Tracks no history for requests without penalties. The prompt matters
  // only to the repetition penalty (presence and frequency count the output).
  LogitEntries(const SamplingParams &params, const std::vector<int32_t> &prompt);

  void add_output(int32_t token);
  // Whether the entries change with each output token (penalties), rather
  // than only biasing fixed tokens.
  bool tracks_history() const { return tracks_history_; }

  // Parallel arrays: distinct tokens, their output counts and biases.
  const std::vector<int32_t> &tokens() const { return tokens_; }
  const std::vector<int32_t> &counts() const { return counts_; }
  const std::vector<float> &bias() const { return bias_; }

private:
  // The entry of `token`, added with `count` if there is none yet.
  size_t entry_of(int32_t token, int32_t count);

  bool tracks_history_;
  std::vector<int32_t> tokens_;
  std::vector<int32_t> counts_;
  std::vector<float> bias_;
  std::unordered_map<int32_t, size_t> index_; // token -> entry
};

} // namespace llmserve

#endif // LLMSERVE_CORE_LOGIT_ENTRIES_H
