#include "server/request_fields.h"

#include <initializer_list>
#include <string>
#include <string_view>

namespace llmserve {
namespace {

using json = nlohmann::json;

enum class Use {
  kActed,      // parsed and applied (openai_protocol.cpp)
  kHint,       // accepted; changes nothing on this server
  kUnsupported // refused unless `asks_nothing`
};

struct Field {
  std::string_view name;
  Use use;
  // For unsupported fields: whether this value asks for nothing beyond what
  // the server does anyway (given the whole request, for best_of and n).
  bool (*asks_nothing)(const json &value, const json &request) = nullptr;
  const char *why = nullptr;
};

bool empty(const json &v, const json &) {
  if (v.is_string())
    return v.get_ref<const std::string &>().empty();
  return (v.is_array() || v.is_object()) && v.empty();
}

bool text_format(const json &v, const json &) {
  return v.is_object() && v.size() == 1 && v.value("type", json()) == "text";
}

bool text_modality(const json &v, const json &) { return v == json::array({"text"}); }

bool no_tool_call(const json &v, const json &request) {
  if (v == "none")
    return true;
  const json *tools = request.contains("tools") ? &request["tools"] : nullptr;
  return v == "auto" && (!tools || tools->is_null() || tools->empty());
}

bool best_of_n(const json &v, const json &request) {
  const int64_t n = request.contains("n") && request["n"].is_number_integer()
                        ? request["n"].get<int64_t>()
                        : 1;
  return v.is_number_integer() && (v.get<int64_t>() <= 1 || v.get<int64_t>() == n);
}

// Fields of both endpoints.
constexpr Field kCommon[] = {
    {"model", Use::kActed},
    {"stream", Use::kActed},
    {"stream_options", Use::kActed},
    {"max_tokens", Use::kActed},
    {"max_completion_tokens", Use::kActed},
    {"temperature", Use::kActed},
    {"top_p", Use::kActed},
    {"seed", Use::kActed},
    {"stop", Use::kActed},
    {"n", Use::kActed},
    {"presence_penalty", Use::kActed},
    {"frequency_penalty", Use::kActed},
    {"logit_bias", Use::kActed},
    // vLLM's extensions.
    {"top_k", Use::kActed},
    {"min_p", Use::kActed},
    {"repetition_penalty", Use::kActed},
    {"ignore_eos", Use::kActed},
    {"min_tokens", Use::kActed},
    {"stop_token_ids", Use::kActed},
    {"return_tokens_as_token_ids", Use::kActed},
    // Bookkeeping for OpenAI's platform; the prefix cache needs no key.
    {"user", Use::kHint},
    {"metadata", Use::kHint},
    {"store", Use::kHint},
    {"service_tier", Use::kHint},
    {"safety_identifier", Use::kHint},
    {"prompt_cache_key", Use::kHint},
};

constexpr Field kCompletions[] = {
    {"prompt", Use::kActed},
    {"echo", Use::kActed},
    {"logprobs", Use::kActed},
    {"best_of", Use::kUnsupported, best_of_n,
     "is not supported: each choice is sampled once (best_of may only be 1 or n)"},
    {"suffix", Use::kUnsupported, empty, "is not supported: no model served here fills in the "
                                         "middle"},
};

constexpr Field kChat[] = {
    {"messages", Use::kActed},
    {"logprobs", Use::kActed},
    {"top_logprobs", Use::kActed},
    // With no tools, whether calls may be parallel changes nothing.
    {"parallel_tool_calls", Use::kHint},
    {"tools", Use::kUnsupported, empty, "is not supported yet: tool calling is not implemented"},
    {"tool_choice", Use::kUnsupported, no_tool_call,
     "is not supported yet: tool calling is not implemented"},
    {"functions", Use::kUnsupported, empty,
     "is not supported yet: tool calling is not implemented"},
    {"function_call", Use::kUnsupported, no_tool_call,
     "is not supported yet: tool calling is not implemented"},
    {"response_format", Use::kUnsupported, text_format,
     "is not supported yet: only {\"type\": \"text\"} (no structured output)"},
    {"modalities", Use::kUnsupported, text_modality, "may only be [\"text\"]"},
    {"audio", Use::kUnsupported, empty, "is not supported: text only"},
    {"prediction", Use::kUnsupported, empty, "is not supported"},
    {"reasoning_effort", Use::kUnsupported, nullptr, "is not supported"},
    {"verbosity", Use::kUnsupported, nullptr, "is not supported"},
    {"web_search_options", Use::kUnsupported, nullptr, "is not supported"},
};

constexpr Field kStreamOptions[] = {
    {"include_usage", Use::kActed},
    // Padding against side channels on OpenAI's network; none here.
    {"include_obfuscation", Use::kHint},
};

// A message's fields: what is rendered, and what an assistant message
// carries when a client sends a response back as history.
constexpr Field kMessage[] = {
    {"role", Use::kActed},
    {"content", Use::kActed},
    {"name", Use::kHint},
    {"refusal", Use::kUnsupported, empty, "is not supported"},
    {"annotations", Use::kUnsupported, empty, "is not supported"},
    {"audio", Use::kUnsupported, empty, "is not supported: text only"},
    {"tool_calls", Use::kUnsupported, empty,
     "is not supported yet: tool calling is not implemented"},
    {"function_call", Use::kUnsupported, empty,
     "is not supported yet: tool calling is not implemented"},
    {"tool_call_id", Use::kUnsupported, empty,
     "is not supported yet: tool calling is not implemented"},
};

// The fields one kind of object may have, from one or more tables.
struct FieldList {
  const Field *begin, *end;
};

template <size_t N> FieldList list(const Field (&table)[N]) { return {table, table + N}; }

void check(const json &object, const std::string &prefix,
           std::initializer_list<FieldList> tables) {
  for (const auto &[key, value] : object.items()) {
    const Field *field = nullptr;
    for (const FieldList &table : tables)
      for (const Field *f = table.begin; f != table.end && !field; ++f)
        if (f->name == key)
          field = f;
    const std::string name = prefix + key;
    if (!field)
      throw ApiError(400, "Unrecognized request argument supplied: " + name, name);
    if (field->use != Use::kUnsupported || value.is_null() ||
        (field->asks_nothing && field->asks_nothing(value, object)))
      continue;
    throw ApiError(400, "'" + name + "' " + field->why, name);
  }
}

} // namespace

void check_request_fields(const json &body, Endpoint endpoint) {
  check(body, "",
        {list(kCommon), endpoint == Endpoint::kCompletions ? list(kCompletions) : list(kChat)});
  auto options = body.find("stream_options");
  if (options != body.end() && options->is_object())
    check(*options, "stream_options.", {list(kStreamOptions)});
}

void check_message_fields(const json &message, size_t index) {
  check(message, "messages[" + std::to_string(index) + "].", {list(kMessage)});
}

} // namespace llmserve
