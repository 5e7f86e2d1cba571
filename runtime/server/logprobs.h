// Log-probabilities of generated tokens as the OpenAI API returns them: the
// legacy completions shape ({tokens, token_logprobs, top_logprobs,
// text_offset}) and the chat shape ({content: [{token, logprob, bytes,
// top_logprobs}]}).
#ifndef LLMSERVE_SERVER_LOGPROBS_H
#define LLMSERVE_SERVER_LOGPROBS_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace llmserve {

// One generated token: its text (the token decoded alone, so valid UTF-8 with
// U+FFFD for a partial character, as Hugging Face decodes), log-probability,
// offset in the choice's text (in characters, as Python counts them) and the
// most likely tokens with theirs.
struct TokenLogprob {
  std::string token;
  float logprob = 0.0f;
  int64_t text_offset = 0;
  std::vector<std::pair<std::string, float>> top;
};

// Characters (Unicode code points) in UTF-8 `text`.
int64_t num_characters(const std::string &text);

nlohmann::json completion_logprobs(const std::vector<TokenLogprob> &tokens);
nlohmann::json chat_logprobs(const std::vector<TokenLogprob> &tokens);

} // namespace llmserve

#endif // LLMSERVE_SERVER_LOGPROBS_H
