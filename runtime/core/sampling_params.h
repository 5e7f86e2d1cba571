// How one request samples and when it stops: the OpenAI-style knobs the server
// maps a JSON request onto. Stop *strings* are not here: the server matches
// them on detokenized text and ends the request through Engine::finish.
#ifndef LLMSERVE_CORE_SAMPLING_PARAMS_H
#define LLMSERVE_CORE_SAMPLING_PARAMS_H

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace llmserve {

namespace grammar {
class CompiledGrammar;
}

struct SamplingParams {
  float temperature = 1.0f; // 0 = greedy
  float top_p = 1.0f;       // in (0, 1]; 1 = off
  int32_t top_k = 0;        // 0 = off
  float min_p = 0.0f;       // in [0, 1]; 0 = off
  // Absent: the engine assigns one, so every request samples reproducibly
  // whatever else shares its batch.
  std::optional<int64_t> seed;
  float presence_penalty = 0.0f;   // in [-2, 2]; 0 = off
  float frequency_penalty = 0.0f;  // in [-2, 2]; 0 = off
  float repetition_penalty = 1.0f; // > 0; 1 = off
  // (token, bias): added to the token's logit before sampling, in [-100, 100]
  // as in the OpenAI API.
  std::vector<std::pair<int32_t, float>> logit_bias;
  int32_t max_tokens = 16;         // generated tokens, >= 1
  int32_t min_tokens = 0;          // EOS and stop tokens cannot be sampled before this
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  // -1: no log-probs; k >= 0: each generated token's log-probability and
  // the k most likely tokens' (k <= 20).
  int32_t logprobs = -1;
  // Structured output: each sampled token keeps the output a prefix of a
  // sentence of this grammar, compiled against the model's vocabulary; the
  // output ends where the grammar allows its stop tokens (min_tokens does not
  // apply).
  std::shared_ptr<const grammar::CompiledGrammar> grammar;

  // Throws std::invalid_argument naming the first field out of range.
  void validate() const;
};

} // namespace llmserve

#endif // LLMSERVE_CORE_SAMPLING_PARAMS_H
