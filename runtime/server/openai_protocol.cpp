#include "server/openai_protocol.h"

#include "grammar/grammar.h"
#include "server/request_fields.h"
#include "server/reasoning.h"
#include "server/structured_output.h"

#include <algorithm>

namespace llmserve {
namespace {

using json = nlohmann::json;

[[noreturn]] void invalid(const std::string &field, const std::string &why) {
  throw ApiError(400, "'" + field + "' " + why, field);
}

const json *find(const json &body, const char *field) {
  auto it = body.find(field);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> get_number(const json &body, const char *field) {
  const json *v = find(body, field);
  if (!v)
    return std::nullopt;
  if (!v->is_number())
    invalid(field, std::string("must be a number, not ") + v->type_name());
  return v->get<double>();
}

std::optional<int64_t> get_integer(const json &body, const char *field) {
  const json *v = find(body, field);
  if (!v)
    return std::nullopt;
  if (!v->is_number_integer())
    invalid(field, std::string("must be an integer, not ") +
                       (v->is_number() ? "a fraction" : v->type_name()));
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX))
    invalid(field, "is out of range");
  return v->get<int64_t>();
}

int32_t get_int32(const json &body, const char *field, int64_t min, int64_t max,
                  int32_t fallback) {
  std::optional<int64_t> v = get_integer(body, field);
  if (!v)
    return fallback;
  if (*v < min || *v > max)
    invalid(field, "= " + std::to_string(*v) + " must be in [" + std::to_string(min) +
                       ", " + std::to_string(max) + "]");
  return static_cast<int32_t>(*v);
}

std::optional<bool> get_bool(const json &body, const char *field) {
  const json *v = find(body, field);
  if (!v)
    return std::nullopt;
  if (!v->is_boolean())
    invalid(field, std::string("must be a boolean, not ") + v->type_name());
  return v->get<bool>();
}

void check_model(const json &body, const ModelInfo &model) {
  const json *v = find(body, "model");
  if (!v)
    return;
  if (!v->is_string())
    invalid("model", std::string("must be a string, not ") + v->type_name());
  if (v->get<std::string>() != model.name)
    throw ApiError(404, "The model '" + v->get<std::string>() +
                            "' does not exist; this server serves '" + model.name + "'",
                   "model", "model_not_found");
}

std::vector<int32_t> token_ids(const json &array, const char *field, const ModelInfo &model) {
  std::vector<int32_t> ids;
  for (const json &v : array) {
    if (!v.is_number_integer())
      invalid(field, "must hold token ids (integers)");
    const uint64_t vocab = model.tokenizer->vocab_size();
    const bool in_vocab = v.is_number_unsigned() ? v.get<uint64_t>() < vocab
                                                 : v.get<int64_t>() >= 0 &&
                                                       uint64_t(v.get<int64_t>()) < vocab;
    if (!in_vocab)
      invalid(field, "holds token id " + v.dump() + ", outside the vocabulary of " +
                         std::to_string(vocab));
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

// OpenAI's logit_bias: {"token id": bias}, the ids as decimal strings.
std::vector<std::pair<int32_t, float>> logit_bias(const json &bias, const ModelInfo &model) {
  if (!bias.is_object())
    invalid("logit_bias", std::string("must be an object, not ") + bias.type_name());
  if (bias.size() > kMaxLogitBias)
    invalid("logit_bias", "holds " + std::to_string(bias.size()) + " tokens; at most " +
                              std::to_string(kMaxLogitBias));
  const uint64_t vocab = model.tokenizer->vocab_size();
  std::vector<std::pair<int32_t, float>> entries;
  for (const auto &[key, value] : bias.items()) {
    const bool digits = !key.empty() && key.size() <= 10 &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoull(key) >= vocab)
      invalid("logit_bias", "has key \"" + key.substr(0, 32) +
                                "\", not a token id of the vocabulary of " + std::to_string(vocab));
    if (!value.is_number() || !(value.get<double>() >= -100.0 && value.get<double>() <= 100.0))
      invalid("logit_bias", "maps token " + key + " to " + value.dump().substr(0, 32) +
                                "; biases are numbers in [-100, 100]");
    entries.emplace_back(static_cast<int32_t>(std::stoull(key)), float(value.get<double>()));
  }
  return entries;
}

// The request's sequences (prompts times n) against the server's limit,
// before the prompts are tokenized and copied n times.
void check_choice_count(size_t prompts, int32_t n, const ModelInfo &model) {
  const uint64_t sequences = uint64_t(prompts) * uint64_t(n);
  if (model.max_choices > 0 && sequences > uint64_t(model.max_choices))
    invalid("prompt", "asks for " + std::to_string(sequences) +
                          " sequences (prompts times n); the server holds at most " +
                          std::to_string(model.max_choices));
}

std::vector<std::vector<int32_t>> completion_prompts(const json &body, const ModelInfo &model,
                                                     int32_t n) {
  const json *prompt = find(body, "prompt");
  if (!prompt)
    invalid("prompt", "is required");
  const bool several = prompt->is_array() && !prompt->empty() && !prompt->front().is_number();
  check_choice_count(several ? prompt->size() : 1, n, model);
  const Tokenizer &tokenizer = *model.tokenizer;
  const char *kShapes = "must be a string, an array of strings, an array of token ids "
                        "or an array of token id arrays";
  if (prompt->is_string())
    return {tokenizer.encode(prompt->get<std::string>(), true)};
  if (!prompt->is_array() || prompt->empty())
    invalid("prompt", kShapes);
  const json &first = prompt->front();
  if (first.is_number())
    return {token_ids(*prompt, "prompt", model)};
  std::vector<std::vector<int32_t>> prompts;
  for (const json &p : *prompt) {
    if (first.is_string() && p.is_string())
      prompts.push_back(tokenizer.encode(p.get<std::string>(), true));
    else if (first.is_array() && p.is_array())
      prompts.push_back(token_ids(p, "prompt", model));
    else
      invalid("prompt", kShapes);
  }
  return prompts;
}

// The fields completions and chat share.
// The request's structured output, compiled (or found in the cache).
void parse_structured_output(const json &body, const ModelInfo &model, std::string_view raw_body,
                             SamplingParams &params) {
  std::optional<StructuredOutput> output = structured_output(body, raw_body);
  if (!output)
    return;
  if (!model.grammars)
    throw ApiError(400, "'" + output->field + "': structured output is not available",
                   output->field);
  try {
    params.grammar = model.grammars->get(output->gbnf);
  } catch (const grammar::GrammarError &e) {
    throw ApiError(400, "'" + output->field + "' cannot be followed: " + e.what(),
                   output->field);
  }
}

GenerateRequest parse_common(const json &body, const ModelInfo &model, Endpoint endpoint,
                             std::string_view raw_body) {
  check_model(body, model);
  GenerateRequest r;
  r.endpoint = endpoint;
  SamplingParams &p = r.params;
  p.temperature = float(get_number(body, "temperature").value_or(1.0));
  p.top_p = float(get_number(body, "top_p").value_or(1.0));
  // vLLM spells "off" -1 as well as 0.
  p.top_k = std::max(0, get_int32(body, "top_k", -1, INT32_MAX, 0));
  p.min_p = float(get_number(body, "min_p").value_or(0.0));
  p.seed = get_integer(body, "seed");
  p.presence_penalty = float(get_number(body, "presence_penalty").value_or(0.0));
  p.frequency_penalty = float(get_number(body, "frequency_penalty").value_or(0.0));
  p.repetition_penalty = float(get_number(body, "repetition_penalty").value_or(1.0));
  p.ignore_eos = get_bool(body, "ignore_eos").value_or(false);
  r.tokens_as_ids = get_bool(body, "return_tokens_as_token_ids").value_or(false);
  p.min_tokens = get_int32(body, "min_tokens", 0, INT32_MAX, 0);

  const char *max_field = find(body, "max_completion_tokens") ? "max_completion_tokens"
                                                               : "max_tokens";
  if (std::optional<int64_t> max_tokens = get_integer(body, max_field)) {
    if (*max_tokens <= 0 || *max_tokens > INT32_MAX)
      invalid(max_field, "= " + std::to_string(*max_tokens) + " must be at least 1");
    r.max_tokens = static_cast<int32_t>(*max_tokens);
  }

  if (const json *stop = find(body, "stop")) {
    if (stop->is_string())
      r.stop.push_back(stop->get<std::string>());
    else if (stop->is_array() &&
             std::all_of(stop->begin(), stop->end(), [](const json &s) { return s.is_string(); }))
      r.stop = stop->get<std::vector<std::string>>();
    else
      invalid("stop", "must be a string or an array of strings");
    if (r.stop.size() > kMaxStopStrings)
      invalid("stop", "holds " + std::to_string(r.stop.size()) + " strings; at most " +
                          std::to_string(kMaxStopStrings));
    for (const std::string &s : r.stop)
      if (s.size() > kMaxStopStringBytes)
        invalid("stop", "holds a string of " + std::to_string(s.size()) +
                            " bytes; at most " + std::to_string(kMaxStopStringBytes));
  }
  if (const json *ids = find(body, "stop_token_ids")) {
    if (!ids->is_array())
      invalid("stop_token_ids", std::string("must be an array, not ") + ids->type_name());
    if (ids->size() > kMaxStopTokenIds)
      invalid("stop_token_ids", "holds " + std::to_string(ids->size()) + " ids; at most " +
                                    std::to_string(kMaxStopTokenIds));
    p.stop_token_ids = token_ids(*ids, "stop_token_ids", model);
  }

  if (const json *bias = find(body, "logit_bias"))
    p.logit_bias = logit_bias(*bias, model);
  parse_structured_output(body, model, raw_body, p);

  r.n = get_int32(body, "n", 1, 128, 1);
  r.stream = get_bool(body, "stream").value_or(false);
  if (const json *options = find(body, "stream_options")) {
    if (!options->is_object())
      invalid("stream_options", std::string("must be an object, not ") + options->type_name());
    r.include_usage = get_bool(*options, "include_usage").value_or(false);
  }
  return r;
}

void check_params(const GenerateRequest &r) {
  // max_tokens is resolved per prompt later; check the others now.
  SamplingParams params = r.params;
  params.max_tokens = r.max_tokens.value_or(std::max(params.min_tokens, 1));
  try {
    params.validate();
  } catch (const std::invalid_argument &e) {
    throw ApiError(400, e.what());
  }
}

std::string message_content(const json &message, size_t index) {
  const std::string field = "messages[" + std::to_string(index) + "].content";
  const json *content = find(message, "content");
  if (!content)
    return "";
  if (content->is_string())
    return content->get<std::string>();
  if (!content->is_array())
    invalid(field, "must be a string or an array of content parts");
  std::string text;
  for (const json &part : *content) {
    const json *type = part.is_object() ? find(part, "type") : nullptr;
    if (!type || *type != "text" || !find(part, "text") || !part["text"].is_string())
      invalid(field, "may only hold parts {\"type\": \"text\", \"text\": string}");
    text += part["text"].get<std::string>();
  }
  return text;
}

const char *error_type(int status) {
  switch (status) {
  case 401:
    return "authentication_error";
  case 404:
    return "not_found_error";
  case 413:
    return "request_too_large";
  case 429:
  case 503:
    return "server_overloaded";
  default:
    return status < 500 ? "invalid_request_error" : "server_error";
  }
}

json nullable(const std::string &s) { return s.empty() ? json(nullptr) : json(s); }

} // namespace

ApiError::ApiError(int status, const std::string &message, std::string param, std::string code)
    : std::runtime_error(message), status(status), param(std::move(param)),
      code(std::move(code)) {}

json error_body(int status, const std::string &message, const std::string &param,
                const std::string &code) {
  return {{"error",
           {{"message", message},
            {"type", error_type(status)},
            {"param", nullable(param)},
            {"code", code.empty() ? json(status) : json(code)}}}};
}

json parse_json_object(const std::string &body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    throw ApiError(400, "the request body is not valid JSON");
  if (!parsed.is_object())
    throw ApiError(400, std::string("the request body must be a JSON object, not ") +
                            parsed.type_name());
  return parsed;
}

GenerateRequest parse_completion_request(const json &body, const ModelInfo &model,
                                         std::string_view raw_body) {
  check_request_fields(body, Endpoint::kCompletions);
  GenerateRequest r = parse_common(body, model, Endpoint::kCompletions, raw_body);
  r.prompts = completion_prompts(body, model, r.n);
  r.echo = get_bool(body, "echo").value_or(false);
  // 0 still asks for the sampled token's log-prob.
  r.params.logprobs = get_int32(body, "logprobs", 0, 20, -1);
  if (r.echo && r.params.logprobs >= 0)
    invalid("logprobs", "cannot be combined with echo: prompt log-probs are not computed");
  check_params(r);
  for (const auto &prompt : r.prompts)
    if (prompt.empty())
      invalid("prompt", "is empty");
  return r;
}

// An assistant message's tool_calls as chat templates read them: the
// arguments as an object (Hugging Face's convention), not JSON text.
nlohmann::ordered_json template_tool_calls(const json &calls, const std::string &field) {
  if (!calls.is_array())
    invalid(field, "must be an array of tool calls");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const json &call = calls[k];
    const std::string at = field + "[" + std::to_string(k) + "]";
    const json *function = call.is_object() ? find(call, "function") : nullptr;
    if (!function || !function->is_object() || !find(*function, "name") ||
        !(*function)["name"].is_string())
      invalid(at, "must be {\"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
    nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
    if (const json *given = find(*function, "arguments")) {
      arguments = given->is_string()
                      ? nlohmann::ordered_json::parse(given->get<std::string>(), nullptr, false)
                      : nlohmann::ordered_json::parse(given->dump());
      if (arguments.is_discarded()) // not JSON: the template gets the text
        arguments = given->get<std::string>();
    }
    nlohmann::ordered_json entry = {{"type", "function"},
                                    {"function", {{"name", (*function)["name"]},
                                                  {"arguments", std::move(arguments)}}}};
    if (const json *id = find(call, "id"))
      entry["id"] = *id;
    out.push_back(std::move(entry));
  }
  return out;
}

// The template's variables beyond the messages: the tools, and vLLM's
// chat_template_kwargs (enable_thinking, ...).
nlohmann::ordered_json template_variables(const json &body, const std::optional<ToolUse> &tools) {
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  if (const json *kwargs = find(body, "chat_template_kwargs")) {
    if (!kwargs->is_object())
      invalid("chat_template_kwargs", std::string("must be an object, not ") + kwargs->type_name());
    for (const auto &[key, value] : kwargs->items()) {
      if (key == "messages" || key == "tools" || key == "add_generation_prompt")
        invalid("chat_template_kwargs." + key, "is set by the request itself");
      variables[key] = nlohmann::ordered_json::parse(value.dump());
    }
  }
  if (tools)
    variables["tools"] = tools->tools;
  return variables;
}

std::string render_chat(const json &messages, const ModelInfo &model,
                        const nlohmann::ordered_json &variables) {
  if (!model.chat_template)
    throw ApiError(400, "model '" + model.name + "' has no chat template; use /v1/completions");
  if (!messages.is_array() || messages.empty())
    invalid("messages", "must be a non-empty array of messages");
  if (messages.size() > kMaxMessages)
    invalid("messages", "holds " + std::to_string(messages.size()) + " messages; at most " +
                            std::to_string(kMaxMessages));
  nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const json &m = messages[i];
    const json *role = m.is_object() ? find(m, "role") : nullptr;
    if (!role || !role->is_string())
      invalid("messages[" + std::to_string(i) + "].role", "must be a string");
    check_message_fields(m, i);
    nlohmann::ordered_json message = {{"role", role->get<std::string>()},
                                      {"content", message_content(m, i)}};
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (const json *calls = find(m, "tool_calls"); calls && !calls->empty())
      message["tool_calls"] = template_tool_calls(*calls, at + ".tool_calls");
    if (const json *id = find(m, "tool_call_id")) {
      if (!id->is_string())
        invalid(at + ".tool_call_id", "must be a string");
      message["tool_call_id"] = id->get<std::string>();
    }
    conversation.push_back(std::move(message));
  }
  try {
    return model.chat_template->render(conversation, /*add_generation_prompt=*/true, variables);
  } catch (const ChatTemplateError &e) {
    throw ApiError(400, std::string("chat template: ") + e.what(), "messages");
  }
}

GenerateRequest parse_chat_request(const json &body, const ModelInfo &model,
                                   std::string_view raw_body) {
  check_request_fields(body, Endpoint::kChatCompletions);
  GenerateRequest r = parse_common(body, model, Endpoint::kChatCompletions, raw_body);
  check_choice_count(1, r.n, model);
  const json *messages = find(body, "messages");
  if (!messages)
    invalid("messages", "is required");
  r.tools = parse_tool_use(body, raw_body);
  r.tool_call_format = model.tool_call_format;
  const std::string prompt = render_chat(*messages, model, template_variables(body, r.tools));
  r.prompts = {model.tokenizer->encode(prompt, false)};
  r.reasoning = model.thinks;
  r.starts_thinking = model.thinks && prompt_opens_thinking(prompt);
  if (r.tools && r.tools->forced()) {
    // The grammar makes the model call a tool, as the choice demands.
    if (r.params.grammar)
      invalid("tool_choice", "cannot force a tool call together with a response_format or "
                             "structured_outputs");
    if (!model.grammars)
      invalid("tool_choice", "cannot force a tool call: structured output is not available");
    try {
      r.params.grammar = model.grammars->get(tool_call_gbnf(model.tool_call_format, *r.tools));
    } catch (const grammar::GrammarError &e) {
      invalid("tools", std::string("cannot be followed: ") + e.what());
    }
  }
  const int32_t top_logprobs = get_int32(body, "top_logprobs", 0, 20, -1);
  if (get_bool(body, "logprobs").value_or(false))
    r.params.logprobs = std::max(0, top_logprobs);
  else if (top_logprobs >= 0)
    invalid("top_logprobs", "needs \"logprobs\": true");
  check_params(r);
  if (r.prompts[0].empty())
    invalid("messages", "render to an empty prompt");
  return r;
}

std::vector<int32_t> parse_tokenize_request(const json &body, const ModelInfo &model) {
  check_model(body, model);
  if (const json *messages = find(body, "messages"))
    return model.tokenizer->encode(render_chat(*messages, model),
                                   get_bool(body, "add_special_tokens").value_or(false));
  const json *prompt = find(body, "prompt");
  if (!prompt || !prompt->is_string())
    invalid("prompt", "must be a string (or give \"messages\")");
  return model.tokenizer->encode(prompt->get<std::string>(),
                                 get_bool(body, "add_special_tokens").value_or(true));
}

std::vector<int32_t> parse_detokenize_request(const json &body, const ModelInfo &model) {
  check_model(body, model);
  const json *tokens = find(body, "tokens");
  if (!tokens || !tokens->is_array())
    invalid("tokens", "must be an array of token ids");
  return token_ids(*tokens, "tokens", model);
}

std::vector<Submission> GenerateRequest::submissions(int32_t max_model_len) const {
  const char *prompt_field = endpoint == Endpoint::kChatCompletions ? "messages" : "prompt";
  std::vector<Submission> out;
  for (const auto &prompt : prompts) {
    const int64_t length = int64_t(prompt.size());
    if (length >= max_model_len)
      throw ApiError(400, "This model's maximum context length is " +
                              std::to_string(max_model_len) + " tokens, but the prompt has " +
                              std::to_string(length) + " tokens",
                     prompt_field);
    const int32_t room = static_cast<int32_t>(max_model_len - length);
    if (max_tokens && *max_tokens > room)
      throw ApiError(400, "This model's maximum context length is " +
                              std::to_string(max_model_len) + " tokens; the prompt has " +
                              std::to_string(length) + " and max_tokens asks for " +
                              std::to_string(*max_tokens) + " more",
                     "max_tokens");
    // OpenAI's defaults: 16 tokens for completions, the rest of the context
    // for chat.
    int32_t default_max = endpoint == Endpoint::kCompletions ? std::min(16, room) : room;
    for (int32_t j = 0; j < n; ++j) {
      Submission s{prompt, params};
      s.params.max_tokens = max_tokens.value_or(default_max);
      s.params.min_tokens = std::min(s.params.min_tokens, s.params.max_tokens);
      if (params.seed)
        s.params.seed = *params.seed + j;
      out.push_back(std::move(s));
    }
  }
  return out;
}

json usage_json(const Usage &u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

namespace {

json logprobs_json(Endpoint endpoint,
                   const std::optional<std::vector<TokenLogprob>> &logprobs) {
  if (!logprobs)
    return nullptr;
  return endpoint == Endpoint::kCompletions ? completion_logprobs(*logprobs)
                                            : chat_logprobs(*logprobs);
}

json response_head(Endpoint endpoint, const ResponseHeader &h, bool is_chunk) {
  const char *object = endpoint == Endpoint::kCompletions ? "text_completion"
                       : is_chunk                         ? "chat.completion.chunk"
                                                          : "chat.completion";
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

// The calls as OpenAI writes them; a stream's deltas number them.
json tool_calls_json(const std::vector<ToolCall> &calls, bool indexed) {
  json list = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json call = {{"id", calls[i].id},
                 {"type", "function"},
                 {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (indexed)
      call["index"] = i;
    list.push_back(std::move(call));
  }
  return list;
}

} // namespace

json full_response(Endpoint endpoint, const ResponseHeader &header,
                   const std::vector<Choice> &choices, const Usage &usage) {
  json out = response_head(endpoint, header, false);
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    json c = {{"index", i}};
    if (endpoint == Endpoint::kCompletions) {
      c["text"] = choices[i].text;
    } else {
      const std::vector<ToolCall> &calls = choices[i].tool_calls;
      c["message"] = {{"role", "assistant"},
                      {"content", calls.empty() || !choices[i].text.empty()
                                      ? json(choices[i].text)
                                      : json(nullptr)}};
      if (!calls.empty())
        c["message"]["tool_calls"] = tool_calls_json(calls, false);
      if (!choices[i].reasoning.empty())
        c["message"]["reasoning_content"] = choices[i].reasoning;
    }
    c["logprobs"] = logprobs_json(endpoint, choices[i].logprobs);
    c["finish_reason"] = nullable(choices[i].finish_reason);
    list.push_back(std::move(c));
  }
  out["choices"] = std::move(list);
  out["usage"] = usage_json(usage);
  return out;
}

json chunk(Endpoint endpoint, const ResponseHeader &header, int32_t index,
           const std::string &text, const std::string &finish_reason, bool first,
           bool with_usage, const std::optional<std::vector<TokenLogprob>> &logprobs,
           const std::vector<ToolCall> &tool_calls, const std::string &reasoning) {
  json out = response_head(endpoint, header, true);
  json c = {{"index", index}};
  if (endpoint == Endpoint::kCompletions) {
    c["text"] = text;
  } else {
    json delta = json::object();
    if (first)
      delta["role"] = "assistant";
    if (!reasoning.empty())
      delta["reasoning_content"] = reasoning;
    if (first || !text.empty())
      delta["content"] = text;
    if (!tool_calls.empty())
      delta["tool_calls"] = tool_calls_json(tool_calls, true);
    c["delta"] = std::move(delta);
  }
  c["logprobs"] = logprobs_json(endpoint, logprobs);
  c["finish_reason"] = nullable(finish_reason);
  out["choices"] = json::array({std::move(c)});
  if (with_usage)
    out["usage"] = nullptr;
  return out;
}

json usage_chunk(Endpoint endpoint, const ResponseHeader &header, const Usage &usage) {
  json out = response_head(endpoint, header, true);
  out["choices"] = json::array();
  out["usage"] = usage_json(usage);
  return out;
}

} // namespace llmserve
