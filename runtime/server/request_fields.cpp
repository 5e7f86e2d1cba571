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

bool text_modality(const json &v, const json &) { return v == json::array({"text"}); }

bool no_function_call(const json &v, const json &) { return v == "none" || v == "auto"; }

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
    // Structured output (structured_output.cpp); vLLM accepts
    // response_format from completions too.
    {"response_format", Use::kActed},
    {"structured_outputs", Use::kActed},
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
    // Tool calling (tool_calls.cpp) and the template's variables.
    {"tools", Use::kActed},
    {"tool_choice", Use::kActed},
    {"parallel_tool_calls", Use::kActed},
    {"chat_template_kwargs", Use::kActed},
    // OpenAI's deprecated spelling of tools.
    {"functions", Use::kUnsupported, empty, "is not supported: use tools"},
    {"function_call", Use::kUnsupported, no_function_call, "is not supported: use tool_choice"},
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
    {"tool_calls", Use::kActed},
    {"tool_call_id", Use::kActed},
    {"function_call", Use::kUnsupported, empty, "is not supported: use tool_calls"},
};

constexpr Field kResponseFormat[] = {
    {"type", Use::kActed},
    {"json_schema", Use::kActed},
};

constexpr Field kJsonSchema[] = {
    {"name", Use::kHint},
    {"description", Use::kHint},
    {"schema", Use::kActed},
    // The output follows the schema whether or not it is strict.
    {"strict", Use::kHint},
};

// vLLM's structured_outputs: one of the first five.
constexpr Field kStructuredOutputs[] = {
    {"json", Use::kActed},
    {"regex", Use::kActed},
    {"choice", Use::kActed},
    {"grammar", Use::kActed},
    {"json_object", Use::kActed},
    {"structural_tag", Use::kUnsupported, nullptr, "is not supported"},
    {"whitespace_pattern", Use::kUnsupported, nullptr,
     "is not supported: JSON whitespace is bounded as llama.cpp bounds it"},
    {"disable_any_whitespace", Use::kUnsupported, nullptr, "is not supported"},
    {"disable_additional_properties", Use::kUnsupported, nullptr, "is not supported"},
    {"disable_fallback", Use::kHint},
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

void check_structured_output_fields(const json &body) {
  if (auto format = body.find("response_format"); format != body.end() && format->is_object()) {
    check(*format, "response_format.", {list(kResponseFormat)});
    if (auto schema = format->find("json_schema");
        schema != format->end() && schema->is_object())
      check(*schema, "response_format.json_schema.", {list(kJsonSchema)});
  }
  if (auto outputs = body.find("structured_outputs");
      outputs != body.end() && outputs->is_object())
    check(*outputs, "structured_outputs.", {list(kStructuredOutputs)});
}

void check_message_fields(const json &message, size_t index) {
  check(message, "messages[" + std::to_string(index) + "].", {list(kMessage)});
}

} // namespace llmserve
