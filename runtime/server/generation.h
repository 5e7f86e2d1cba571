// One completions or chat request while it runs: the engine requests of its
// choices, their text as tokens arrive, stop strings, finish reasons and
// usage. The HTTP layer feeds it the outputs from its OutputQueue and turns
// what it returns into a response or stream chunks.
#ifndef LLMSERVE_SERVER_GENERATION_H
#define LLMSERVE_SERVER_GENERATION_H

#include "server/choice_text.h"
#include "server/engine_loop.h"
#include "server/openai_protocol.h"
#include "server/reasoning.h"
#include "server/tool_calls.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llmserve {

class Generation {
public:
  // Submits one engine request per choice (GenerateRequest::submissions);
  // throws ApiError, or QueueFullError and std::invalid_argument from
  // EngineLoop::submit.
  Generation(const GenerateRequest &request, int32_t max_model_len,
             const Tokenizer &tokenizer, EngineLoop &loop);
  // Aborts the choices still running (a client that went away).
  ~Generation();

  struct Delta {
    int32_t index;
    std::string text;
    std::string finish_reason; // "" while the choice runs
    // The log-probs of the tokens that arrived, when the request asked.
    std::optional<std::vector<TokenLogprob>> logprobs;
    // With tools: the calls, in the delta that finishes the choice.
    std::vector<ToolCall> tool_calls;
    // A thinking model's thoughts (reasoning.h); `text` is then its answer.
    std::string reasoning;
  };
  // The echoed prompts, when asked for: what each choice starts with.
  std::vector<Delta> start();
  // Waits up to `timeout` for outputs and applies them; returns the text
  // and finishes they make (possibly none), or nullopt if nothing came.
  std::optional<std::vector<Delta>> next(std::chrono::milliseconds timeout);

  bool done() const { return num_running_ == 0; }
  // The first engine error, if a choice failed.
  const std::string &error() const { return error_; }
  Usage usage() const;
  int32_t num_choices() const { return int32_t(choices_.size()); }

private:
  struct ChoiceState {
    uint64_t id;
    ChoiceText text;
    bool finished = false;
    int64_t text_offset = 0; // characters before the next token's text
    // With tools: what of the text is content, and the calls.
    std::optional<ToolCallStream> tool_calls;
    // A thinking model: what of the text is reasoning.
    std::optional<ReasoningSplitter> reasoning;
  };
  TokenLogprob logprob_of(ChoiceState &choice, const RequestOutput &output) const;
  std::string token_text(int32_t token) const;

  EngineLoop &loop_;
  const Tokenizer &tokenizer_;
  std::shared_ptr<OutputQueue> outputs_ = std::make_shared<OutputQueue>();
  std::vector<std::vector<int32_t>> echo_prompts_; // empty unless echo
  int32_t n_;
  int64_t prompt_tokens_ = 0;
  std::vector<ChoiceState> choices_;
  int32_t num_running_ = 0;
  bool logprobs_;
  bool tokens_as_ids_;
  std::string error_;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_GENERATION_H
