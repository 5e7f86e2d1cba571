// The OpenAI API's JSON: requests of /v1/completions and
// /v1/chat/completions parsed into engine submissions, the response and
// stream-chunk bodies, and OpenAI-shaped errors.
#ifndef LLMSERVE_SERVER_OPENAI_PROTOCOL_H
#define LLMSERVE_SERVER_OPENAI_PROTOCOL_H

#include "core/sampling_params.h"
#include "server/engine_loop.h"
#include "server/grammar_cache.h"
#include "server/logprobs.h"
#include "server/tool_calls.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

// An error the client gets as {"error": {"message", "type", "param", "code"}}
// with HTTP status `status`.
struct ApiError : std::runtime_error {
  ApiError(int status, const std::string &message, std::string param = "",
           std::string code = "");
  int status;
  std::string param; // the request field at fault, or ""
  std::string code;  // e.g. "model_not_found", or ""
};

// The error body; `type` follows the status (invalid_request_error,
// authentication_error, not_found_error, server_error, ...).
nlohmann::json error_body(int status, const std::string &message,
                          const std::string &param = "", const std::string &code = "");

// Parses a request body that must be a JSON object (400 otherwise).
nlohmann::json parse_json_object(const std::string &body);

enum class Endpoint { kCompletions, kChatCompletions };

// What the model and server allow a request.
struct ModelInfo {
  std::string name;
  int32_t max_model_len = 0;
  const Tokenizer *tokenizer = nullptr;
  const ChatTemplate *chat_template = nullptr; // null: chat is refused
  // Sequences (prompts times n) one request may ask for: the server's
  // in-flight limit, checked before any prompt is tokenized. 0: no limit.
  int32_t max_choices = 0;
  // Structured output's grammars, compiled against the model's vocabulary;
  // null: structured output is refused.
  GrammarCache *grammars = nullptr;
  // How the model's family writes tool calls (--tool-call-parser, else what
  // its chat template shows).
  ToolCallFormat tool_call_format = ToolCallFormat::kHermes;
  // The model thinks in <think>...</think> (its chat template shows it).
  bool thinks = false;
};

// What one request may carry, checked before anything is allocated for it.
inline constexpr size_t kMaxStopStrings = 64;
inline constexpr size_t kMaxStopStringBytes = 1024;
inline constexpr size_t kMaxStopTokenIds = 1024;
// Tokens one request may bias (logit_bias).
inline constexpr size_t kMaxLogitBias = 1024;
inline constexpr size_t kMaxMessages = 10000;

// A completions or chat request, validated and tokenized.
struct GenerateRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::vector<std::vector<int32_t>> prompts; // chat: one
  std::vector<std::string> stop;
  SamplingParams params; // max_tokens resolved per prompt by submissions()
  std::optional<int32_t> max_tokens; // as asked; absent: the default
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;
  bool echo = false;
  // vLLM's extension: log-prob tokens spelled "token_id:<id>" rather than
  // as text, for clients that need the ids.
  bool tokens_as_ids = false;
  // Chat: the request's tools, and how the model writes its calls.
  std::optional<ToolUse> tools;
  ToolCallFormat tool_call_format = ToolCallFormat::kHermes;
  // Chat with a thinking model: its thoughts go to reasoning_content; the
  // output begins inside them when the prompt opened a think block.
  bool reasoning = false;
  bool starts_thinking = false;

  // Choices are numbered prompt-major: choice i is prompt i / n. Each
  // prompt's choice j samples with seed + j when a seed is given.
  int32_t num_choices() const { return int32_t(prompts.size()) * n; }
  // One engine submission per choice. Throws ApiError when a prompt leaves
  // no room for max_tokens in max_model_len.
  std::vector<Submission> submissions(int32_t max_model_len) const;
};

// Throw ApiError (400 for malformed or out-of-range fields, 404 for another
// model's name) naming the field. `raw_body`, the text `body` was parsed
// from, gives JSON schemas their properties in the order written (empty:
// the order of `body`, which sorts them).
GenerateRequest parse_completion_request(const nlohmann::json &body, const ModelInfo &model,
                                         std::string_view raw_body = {});
GenerateRequest parse_chat_request(const nlohmann::json &body, const ModelInfo &model,
                                   std::string_view raw_body = {});
// The prompt of a chat request's "messages", rendered with the template and
// further template variables (tools, chat_template_kwargs).
std::string render_chat(const nlohmann::json &messages, const ModelInfo &model,
                        const nlohmann::ordered_json &variables = nlohmann::ordered_json::object());

// POST /tokenize: {"prompt": string} (add_special_tokens default true) or
// {"messages": [...]} (rendered with the chat template; default false).
std::vector<int32_t> parse_tokenize_request(const nlohmann::json &body, const ModelInfo &model);
// POST /detokenize: {"tokens": [ids]}.
std::vector<int32_t> parse_detokenize_request(const nlohmann::json &body, const ModelInfo &model);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};
nlohmann::json usage_json(const Usage &usage);

// Response bodies. `id` is "cmpl-..." or "chatcmpl-...", `created` Unix
// seconds. finish_reason null while a choice runs.
struct ResponseHeader {
  std::string id;
  int64_t created = 0;
  std::string model;
};
struct Choice {
  std::string text;
  std::string finish_reason;
  std::optional<std::vector<TokenLogprob>> logprobs; // absent: not asked for
  std::vector<ToolCall> tool_calls;                  // chat
  std::string reasoning;                             // chat: reasoning_content
};
nlohmann::json full_response(Endpoint endpoint, const ResponseHeader &header,
                             const std::vector<Choice> &choices, const Usage &usage);
// One streamed choice update. Chat: `first` adds role "assistant" to the
// delta. `with_usage`: "usage": null, as OpenAI sends when include_usage.
// `logprobs`: those of the chunk's tokens when the request asked for them.
// `tool_calls`: chat calls, each whole in one delta.
nlohmann::json chunk(Endpoint endpoint, const ResponseHeader &header, int32_t index,
                     const std::string &text, const std::string &finish_reason,
                     bool first, bool with_usage,
                     const std::optional<std::vector<TokenLogprob>> &logprobs = {},
                     const std::vector<ToolCall> &tool_calls = {},
                     const std::string &reasoning = "");
// The last chunk when include_usage: no choices, the usage.
nlohmann::json usage_chunk(Endpoint endpoint, const ResponseHeader &header,
                           const Usage &usage);

} // namespace llmserve

#endif // LLMSERVE_SERVER_OPENAI_PROTOCOL_H
