#include "server/openai_protocol.h"

#include "grammar/matcher.h"

#include "tokenizer/test_tokenizers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace llmserve {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

class OpenAiProtocol : public ::testing::Test {
protected:
  OpenAiProtocol()
      : tokenizer_(Tokenizer::from_json(testing::sentencepiece_json().dump())),
        template_("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                  "{% if add_generation_prompt %}<assistant>{% endif %}",
                  "<s>", "</s>"),
        grammars_(grammar::Vocabulary::from_tokenizer(tokenizer_), 8),
        model_{"tiny", 32, &tokenizer_, &template_, 0, &grammars_} {}

  // The ApiError a parse throws.
  ApiError error(const json &body, Endpoint endpoint = Endpoint::kCompletions) {
    try {
      if (endpoint == Endpoint::kCompletions)
        parse_completion_request(body, model_);
      else
        parse_chat_request(body, model_);
    } catch (const ApiError &e) {
      return e;
    }
    ADD_FAILURE() << "no error for " << body.dump();
    return ApiError(0, "");
  }

  Tokenizer tokenizer_;
  ChatTemplate template_;
  GrammarCache grammars_;
  ModelInfo model_;
};

TEST_F(OpenAiProtocol, CompletionFieldsMapToSamplingParams) {
  GenerateRequest r = parse_completion_request(
      {{"model", "tiny"}, {"prompt", "ab"}, {"temperature", 0.5}, {"top_p", 0.9},
       {"top_k", -1}, {"min_p", 0.1}, {"seed", 7}, {"max_tokens", 5}, {"stop", "x"},
       {"stop_token_ids", {2}}, {"ignore_eos", true}, {"n", 2}, {"stream", true},
       {"stream_options", {{"include_usage", true}}}, {"echo", true}, {"user", "u"}},
      model_);
  EXPECT_EQ(r.prompts, (std::vector<std::vector<int32_t>>{{1, 264}}));
  EXPECT_FLOAT_EQ(r.params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.params.top_p, 0.9f);
  EXPECT_EQ(r.params.top_k, 0);
  EXPECT_FLOAT_EQ(r.params.min_p, 0.1f);
  EXPECT_EQ(r.params.seed, 7);
  EXPECT_EQ(r.max_tokens, 5);
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(r.params.stop_token_ids, std::vector<int32_t>{2});
  EXPECT_TRUE(r.params.ignore_eos && r.stream && r.include_usage && r.echo);
  EXPECT_EQ(r.n, 2);
}

TEST_F(OpenAiProtocol, LogitBiasMapsTokenIdsToBiases) {
  const GenerateRequest r = parse_completion_request(
      {{"prompt", "a"}, {"logit_bias", {{"5", 10}, {"0", -100}, {"7", 0.5}}}}, model_);
  std::map<int32_t, float> bias(r.params.logit_bias.begin(), r.params.logit_bias.end());
  EXPECT_EQ(bias, (std::map<int32_t, float>{{0, -100.0f}, {5, 10.0f}, {7, 0.5f}}));
  const std::pair<json, const char *> bad[] = {
      {json::array({5}), "must be an object, not array"},
      {{{"x5", 1}}, "has key \"x5\", not a token id"},
      {{{"-1", 1}}, "has key \"-1\", not a token id"},
      {{{"", 1}}, "has key \"\", not a token id"},
      {{{"99999999999", 1}}, "not a token id of the vocabulary"},
      {{{"5", 101}}, "maps token 5 to 101; biases are numbers in [-100, 100]"},
      {{{"5", "1"}}, "maps token 5 to \"1\""},
  };
  for (const auto &[value, message] : bad) {
    ApiError e = error({{"prompt", "a"}, {"logit_bias", value}});
    EXPECT_EQ(e.status, 400) << value.dump();
    EXPECT_EQ(e.param, "logit_bias");
    EXPECT_THAT(e.what(), HasSubstr(message));
  }
  json many = json::object();
  for (int i = 0; i < 1025; ++i)
    many[std::to_string(i)] = 1;
  EXPECT_THAT(error({{"prompt", "a"}, {"logit_bias", many}}).what(),
              HasSubstr("holds 1025 tokens; at most 1024"));
  const std::string vocab = std::to_string(tokenizer_.vocab_size());
  EXPECT_THAT(error({{"prompt", "a"}, {"logit_bias", {{vocab, 1}}}}).what(),
              HasSubstr("not a token id of the vocabulary of " + vocab));
}

// The grammar a request's structured output compiles to: what it accepts as
// the whole output.
bool accepts(const SamplingParams &params, std::string_view text) {
  grammar::Matcher matcher(params.grammar);
  return matcher.accept_bytes(text) && matcher.can_end();
}

TEST_F(OpenAiProtocol, StructuredOutputBecomesTheRequestsGrammar) {
  const json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  auto chat_with = [&](const json &more) {
    json body = chat;
    body.update(more);
    return parse_chat_request(body, model_).params;
  };
  EXPECT_FALSE(chat_with({{"response_format", {{"type", "text"}}}}).grammar);
  SamplingParams p = chat_with({{"response_format", {{"type", "json_object"}}}});
  EXPECT_TRUE(accepts(p, R"({"a": [1, "x"]})"));
  EXPECT_FALSE(accepts(p, "[1]"));

  // Properties in the order the request text writes them.
  const std::string text =
      R"({"prompt": "a", "response_format": {"type": "json_schema", "json_schema": {"name": "p",)"
      R"( "strict": true, "schema": {"type": "object", "properties": {"z": {"type": "integer"},)"
      R"( "a": {"type": "boolean"}}, "required": ["z", "a"], "additionalProperties": false}}}})";
  p = parse_completion_request(json::parse(text), model_, text).params;
  EXPECT_TRUE(accepts(p, R"({"z": 3, "a": true})"));
  EXPECT_FALSE(accepts(p, R"({"a": true, "z": 3})"));
  EXPECT_FALSE(accepts(p, R"({"z": 3.5, "a": true})"));
  // Without the text, the order of the parsed body (sorted).
  p = parse_completion_request(json::parse(text), model_).params;
  EXPECT_TRUE(accepts(p, R"({"a": true, "z": 3})"));

  auto with = [&](const json &outputs) {
    return parse_completion_request({{"prompt", "a"}, {"structured_outputs", outputs}}, model_)
        .params;
  };
  p = with({{"regex", "[a-c]{2}-[0-9]+"}});
  EXPECT_TRUE(accepts(p, "ab-12"));
  EXPECT_FALSE(accepts(p, "ab-"));
  p = with({{"choice", {"yes", "no"}}});
  EXPECT_TRUE(accepts(p, "no"));
  EXPECT_FALSE(accepts(p, "yes no"));
  p = with({{"grammar", "root ::= \"x\"+"}});
  EXPECT_TRUE(accepts(p, "xxx"));
  p = with({{"json", R"({"type": "array", "items": {"type": "null"}})"}});
  EXPECT_TRUE(accepts(p, "[null, null]"));
  p = with({{"json", {{"type", "string"}, {"maxLength", 2}}}});
  EXPECT_TRUE(accepts(p, R"("ab")"));
  EXPECT_FALSE(accepts(p, R"("abc")"));
  p = with({{"json_object", true}});
  EXPECT_TRUE(accepts(p, "{}"));
  // Requests with the same grammar share its compiled form.
  EXPECT_EQ(with({{"choice", {"yes", "no"}}}).grammar, with({{"choice", {"yes", "no"}}}).grammar);
}

TEST_F(OpenAiProtocol, StructuredOutputErrorsNameTheField) {
  struct Case {
    const char *more; // JSON fields added to a completion request
    const char *param;
    const char *message;
  };
  const Case bad[] = {
      {R"({"response_format": "json"})", "response_format", "must be an object, not string"},
      {R"({"response_format": {"type": "xml"}})", "response_format.type",
       R"(must be "text", "json_object" or "json_schema")"},
      {R"({"response_format": {"type": "json_schema"}})", "response_format.json_schema",
       R"(must be an object with a "schema")"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"schema": 3}}})",
       "response_format.json_schema.schema", "must be a JSON Schema (an object), not number"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"schema": {"not": {}}}}})",
       "response_format.json_schema.schema", "unsupported keyword 'not'"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"schema": {}, "x": 1}}})",
       "response_format.json_schema.x", "Unrecognized request argument supplied"},
      {R"({"structured_outputs": {"regex": "(a)\\1"}})", "structured_outputs.regex",
       "cannot be followed: regex: backreference"},
      {R"({"structured_outputs": {"regex": "["}})", "structured_outputs.regex",
       "cannot be followed"},
      {R"({"structured_outputs": {"grammar": "root ::= missing"}})", "structured_outputs.grammar",
       "undefined rule 'missing'"},
      {R"({"structured_outputs": {"choice": []}})", "structured_outputs.choice",
       "must be a non-empty array of strings"},
      {R"({"structured_outputs": {"json": "{not json"}})", "structured_outputs.json",
       "is a string that is not JSON"},
      {R"({"structured_outputs": {"json_object": 1}})", "structured_outputs.json_object",
       "must be true"},
      {R"({"structured_outputs": {"regex": "a", "choice": ["a"]}})", "structured_outputs",
       "asks for regex and choice; give one of them"},
      {R"({"structured_outputs": {"structural_tag": "x"}})", "structured_outputs.structural_tag",
       "is not supported"},
      {R"({"structured_outputs": {"regex": "a"}, "response_format": {"type": "json_object"}})",
       "structured_outputs", "cannot be combined with a response_format"},
  };
  for (const Case &c : bad) {
    json body = {{"prompt", "a"}};
    body.update(json::parse(c.more));
    ApiError e = error(body);
    EXPECT_EQ(e.status, 400) << c.more;
    EXPECT_EQ(e.param, c.param) << c.more;
    EXPECT_THAT(e.what(), HasSubstr(c.message)) << c.more;
  }
  // Without a grammar cache, structured output is refused.
  ModelInfo plain = model_;
  plain.grammars = nullptr;
  try {
    parse_completion_request({{"prompt", "a"}, {"response_format", {{"type", "json_object"}}}},
                             plain);
    ADD_FAILURE() << "no error";
  } catch (const ApiError &e) {
    EXPECT_THAT(e.what(), HasSubstr("structured output is not available"));
  }
}

TEST_F(OpenAiProtocol, FieldsNotActedOnAreRefusedByName) {
  const json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  auto with = [](json body, const json &more) {
    body.update(more);
    return body;
  };
  // A field the API does not have.
  ApiError e = error({{"prompt", "a"}, {"whatever", {1}}});
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "whatever");
  EXPECT_STREQ(e.what(), "Unrecognized request argument supplied: whatever");
  EXPECT_EQ(error(with(chat, {{"echo", true}}), Endpoint::kChatCompletions).param, "echo");
  EXPECT_EQ(error({{"prompt", "a"}, {"stream_options", {{"include_usage", true}, {"x", 1}}}})
                .param,
            "stream_options.x");
  // Fields of the API this server does not act on, asking for something.
  for (const json &more : {json{{"best_of", 3}},
                           json{{"best_of", 2}, {"n", 3}}, json{{"suffix", "!"}}}) {
    e = error(with({{"prompt", "a"}}, more));
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, more.begin().key()) << more.dump();
  }
  for (const json &more :
       {json{{"tool_choice", "required"}}, json{{"function_call", "f"}},
        json{{"modalities", {"text", "audio"}}}, json{{"reasoning_effort", "low"}},
        json{{"functions", {{{"name", "f"}}}}}, json{{"audio", {{"voice", "x"}}}}}) {
    e = error(with(chat, more), Endpoint::kChatCompletions);
    EXPECT_EQ(e.status, 400);
    EXPECT_TRUE(more.contains(e.param)) << e.param << " for " << more.dump();
  }
  EXPECT_STREQ(error(with(chat, {{"functions", {{{"name", "f"}}}}}), Endpoint::kChatCompletions)
                   .what(),
               "'functions' is not supported: use tools");
  // Message fields: tool calls and unknown keys, named with their message.
  e = error({{"messages",
              {{{"role", "user"}, {"content", "hi"}},
               {{"role", "assistant"}, {"content", ""}, {"tool_calls", {{{"id", "c"}}}}}}}},
            Endpoint::kChatCompletions);
  EXPECT_EQ(e.param, "messages[1].tool_calls[0]");
  EXPECT_EQ(error({{"messages", {{{"role", "user"}, {"content", "hi"}, {"x", 1}}}}},
                  Endpoint::kChatCompletions)
                .param,
            "messages[0].x");

  // Hints, nulls and the values that ask for nothing are accepted.
  EXPECT_NO_THROW(parse_completion_request(
      {{"prompt", "a"}, {"user", "u"}, {"metadata", {{"k", "v"}}}, {"store", false},
       {"service_tier", "auto"}, {"prompt_cache_key", "k"}, {"safety_identifier", "s"},
       {"logit_bias", json::object()}, {"best_of", 2}, {"n", 2}, {"suffix", ""},
       {"logprobs", nullptr},
       {"stream_options", {{"include_usage", false}, {"include_obfuscation", true}}}},
      model_));
  EXPECT_NO_THROW(parse_completion_request({{"prompt", "a"}, {"best_of", 1}}, model_));
  EXPECT_NO_THROW(parse_chat_request(
      with(chat, {{"tools", json::array()}, {"tool_choice", "auto"},
                  {"parallel_tool_calls", true}, {"response_format", {{"type", "text"}}},
                  {"modalities", {"text"}}, {"functions", nullptr}, {"function_call", "none"},
                  {"messages",
                   {{{"role", "user"}, {"content", "hi"}, {"name", "me"}},
                    {{"role", "assistant"}, {"content", "yes"}, {"refusal", nullptr},
                     {"tool_calls", json::array()}, {"annotations", json::array()}},
                    {{"role", "user"}, {"content", "so"}}}}}),
      model_));
}

TEST_F(OpenAiProtocol, AmplificationIsBoundedBeforeAllocation) {
  // Prompts times n against the server's in-flight limit, before any
  // prompt is tokenized.
  model_.max_choices = 10;
  ApiError e = error({{"prompt", json::array({"a", "b", "c", "d"})}, {"n", 3}});
  EXPECT_EQ(e.param, "prompt");
  EXPECT_STREQ(e.what(), "'prompt' asks for 12 sequences (prompts times n); the server holds "
                         "at most 10");
  EXPECT_EQ(error({{"prompt", json::array({{1, 2}, {3}, {4}})}, {"n", 4}}).param, "prompt");
  EXPECT_EQ(parse_completion_request({{"prompt", json::array({"a", "b"})}, {"n", 5}}, model_)
                .num_choices(),
            10);
  EXPECT_EQ(parse_completion_request({{"prompt", json::array({1, 2, 3})}, {"n", 10}}, model_)
                .num_choices(),
            10); // one prompt of token ids
  EXPECT_EQ(error({{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"n", 11}},
                  Endpoint::kChatCompletions)
                .param,
            "prompt");

  // Stop strings and stop ids: at most 64 strings of 1024 bytes, 1024 ids.
  EXPECT_NO_THROW(parse_completion_request(
      {{"prompt", "a"}, {"stop", std::vector<std::string>(kMaxStopStrings, "x")}}, model_));
  e = error({{"prompt", "a"}, {"stop", std::vector<std::string>(kMaxStopStrings + 1, "x")}});
  EXPECT_EQ(e.param, "stop");
  EXPECT_STREQ(e.what(), "'stop' holds 65 strings; at most 64");
  EXPECT_EQ(error({{"prompt", "a"}, {"stop", std::string(kMaxStopStringBytes + 1, 'x')}}).param,
            "stop");
  EXPECT_EQ(error({{"prompt", "a"},
                   {"stop_token_ids", std::vector<int>(kMaxStopTokenIds + 1, 2)}})
                .param,
            "stop_token_ids");

  // Messages: at most 10,000.
  json many = json::array();
  for (size_t i = 0; i <= kMaxMessages; ++i)
    many.push_back({{"role", "user"}, {"content", "hi"}});
  e = error({{"messages", many}}, Endpoint::kChatCompletions);
  EXPECT_EQ(e.param, "messages");
  EXPECT_STREQ(e.what(), "'messages' holds 10001 messages; at most 10000");
}

TEST_F(OpenAiProtocol, PromptShapes) {
  auto prompts = [&](const json &prompt) {
    return parse_completion_request({{"prompt", prompt}}, model_).prompts;
  };
  EXPECT_EQ(prompts({5, 6}), (std::vector<std::vector<int32_t>>{{5, 6}}));
  EXPECT_EQ(prompts({{5}, {6, 7}}), (std::vector<std::vector<int32_t>>{{5}, {6, 7}}));
  EXPECT_EQ(prompts({"a", "b"}), (std::vector<std::vector<int32_t>>{{1, 262}, {1, 259, 261}}));
}

TEST_F(OpenAiProtocol, WrongTypesNameTheField) {
  for (const char *field : {"temperature", "max_tokens", "n", "seed", "stream", "stop",
                            "stop_token_ids", "echo", "stream_options", "model", "top_k"}) {
    const bool wants_string = field == std::string("stop") || field == std::string("model");
    ApiError e = error({{"prompt", "a"}, {field, wants_string ? json(1) : json("x")}});
    EXPECT_EQ(e.status, 400) << field;
    EXPECT_EQ(e.param, field);
  }
  EXPECT_EQ(std::string(error({{"prompt", "a"}, {"n", 1.5}}).what()),
            "'n' must be an integer, not a fraction");
  EXPECT_EQ(std::string(error({{"prompt", "a"}, {"stream", 1}}).what()),
            "'stream' must be a boolean, not number");
  for (const json &prompt : {json(), json::array(), json({1, "a"}), json({{1}, "a"}),
                             json({{"a", 1}}), json(3)})
    EXPECT_EQ(error({{"prompt", prompt}}).param, "prompt") << prompt.dump();
}

TEST_F(OpenAiProtocol, OutOfRangeValues) {
  ApiError e = error({{"prompt", "a"}, {"max_tokens", 0}});
  EXPECT_EQ(e.param, "max_tokens");
  EXPECT_EQ(std::string(e.what()), "'max_tokens' = 0 must be at least 1");
  EXPECT_EQ(error({{"prompt", "a"}, {"n", 0}}).param, "n");
  EXPECT_EQ(error({{"prompt", {0, 265}}}).param, "prompt");
  EXPECT_EQ(error({{"prompt", {-1}}}).param, "prompt");
  EXPECT_EQ(error({{"prompt", "a"}, {"stop_token_ids", {999}}}).param, "stop_token_ids");
  EXPECT_EQ(error({{"prompt", "a"}, {"logprobs", 21}}).param, "logprobs");
  EXPECT_EQ(error({{"prompt", "a"}, {"logprobs", -1}}).param, "logprobs");
  EXPECT_EQ(error({{"prompt", "a"}, {"logprobs", 2}, {"echo", true}}).param, "logprobs");
  EXPECT_EQ(parse_completion_request({{"prompt", "a"}, {"logprobs", 0}}, model_).params.logprobs,
            0);
  EXPECT_EQ(parse_completion_request({{"prompt", "a"}}, model_).params.logprobs, -1);
  e = error({{"prompt", "a"}, {"temperature", -1}});
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(std::string(e.what()).find("temperature"), std::string::npos);
  EXPECT_NE(std::string(error({{"prompt", "a"}, {"min_tokens", 9}, {"max_tokens", 3}}).what())
                .find("min_tokens"),
            std::string::npos);
}

TEST_F(OpenAiProtocol, AnotherModelIs404) {
  ApiError e = error({{"prompt", "a"}, {"model", "gpt-4"}});
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.code, "model_not_found");
  EXPECT_EQ(e.param, "model");
}

TEST_F(OpenAiProtocol, ChatRendersTheTemplate) {
  GenerateRequest r = parse_chat_request(
      {{"messages", {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "ab"}}}}}}},
       {"logprobs", false}},
      model_);
  EXPECT_EQ(tokenizer_.decode(r.prompts[0], false), "<user>ab<assistant>");
  EXPECT_EQ(r.params.logprobs, -1);
  r = parse_chat_request({{"messages", {{{"role", "user"}, {"content", "a"}}}},
                          {"logprobs", true}, {"top_logprobs", 3}},
                         model_);
  EXPECT_EQ(r.params.logprobs, 3);
  r = parse_chat_request({{"messages", {{{"role", "user"}, {"content", "a"}}}},
                          {"logprobs", true}},
                         model_);
  EXPECT_EQ(r.params.logprobs, 0) << "the sampled token's log-prob, no top ones";
  ApiError e = error({{"messages", {{{"role", "user"}, {"content", "a"}}}}, {"top_logprobs", 2}},
                     Endpoint::kChatCompletions);
  EXPECT_EQ(e.param, "top_logprobs");
  EXPECT_NE(std::string(e.what()).find("needs \"logprobs\": true"), std::string::npos);
  EXPECT_EQ(error({{"messages", "hi"}}, Endpoint::kChatCompletions).param, "messages");
  EXPECT_EQ(error({}, Endpoint::kChatCompletions).param, "messages");
  EXPECT_EQ(error({{"messages", {{{"content", "a"}}}}}, Endpoint::kChatCompletions).param,
            "messages[0].role");
  EXPECT_EQ(error({{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}},
                  Endpoint::kChatCompletions)
                .param,
            "messages[0].content");
  ChatTemplate strict("{{ raise_exception('only users speak') }}", "<s>", "</s>");
  ModelInfo with_strict = model_;
  with_strict.chat_template = &strict;
  try {
    render_chat(json::array({{{"role", "user"}, {"content", "a"}}}), with_strict);
    ADD_FAILURE();
  } catch (const ApiError &e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "messages");
    EXPECT_NE(std::string(e.what()).find("only users speak"), std::string::npos) << e.what();
  }
  ModelInfo no_template = model_;
  no_template.chat_template = nullptr;
  EXPECT_THROW(render_chat(json::array({{{"role", "user"}, {"content", "a"}}}), no_template),
               ApiError);
}

TEST_F(OpenAiProtocol, SubmissionsResolveLengthsAndSeeds) {
  GenerateRequest r = parse_completion_request(
      {{"prompt", {{5, 6}, {7}}}, {"n", 2}, {"seed", 10}}, model_);
  std::vector<Submission> s = r.submissions(32);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[1].prompt, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(s[2].prompt, (std::vector<int32_t>{7}));
  EXPECT_EQ(s[0].params.seed, 10);
  EXPECT_EQ(s[1].params.seed, 11);
  EXPECT_EQ(s[2].params.seed, 10);
  EXPECT_EQ(s[0].params.max_tokens, 16); // completions' default
  EXPECT_EQ(r.submissions(20)[0].params.max_tokens, 16);
  EXPECT_EQ(r.submissions(10)[0].params.max_tokens, 8); // what is left of the context

  GenerateRequest chat =
      parse_chat_request({{"messages", {{{"role", "user"}, {"content", "a"}}}}}, model_);
  size_t prompt = chat.prompts[0].size();
  EXPECT_EQ(chat.submissions(32)[0].params.max_tokens, int32_t(32 - prompt));
  EXPECT_FALSE(chat.submissions(32)[0].params.seed.has_value());

  try {
    parse_completion_request({{"prompt", std::vector<int>(32, 5)}}, model_).submissions(32);
    ADD_FAILURE();
  } catch (const ApiError &e) {
    EXPECT_EQ(e.param, "prompt");
    EXPECT_EQ(std::string(e.what()),
              "This model's maximum context length is 32 tokens, but the prompt has 32 tokens");
  }
  try {
    parse_completion_request({{"prompt", {5}}, {"max_tokens", 32}}, model_).submissions(32);
    ADD_FAILURE();
  } catch (const ApiError &e) {
    EXPECT_EQ(e.param, "max_tokens");
  }
}

TEST_F(OpenAiProtocol, JsonBodies) {
  EXPECT_THROW(parse_json_object("{oops"), ApiError);
  EXPECT_THROW(parse_json_object("[]"), ApiError);
  EXPECT_EQ(parse_json_object("{\"a\": 1}")["a"], 1);
  json e = error_body(404, "gone", "model", "model_not_found");
  EXPECT_EQ(e, json::parse(R"({"error": {"message": "gone", "type": "not_found_error",
                                         "param": "model", "code": "model_not_found"}})"));
  EXPECT_EQ(error_body(400, "bad")["error"]["param"], nullptr);
}

TEST_F(OpenAiProtocol, TokenizeAndDetokenize) {
  EXPECT_EQ(parse_tokenize_request({{"prompt", "ab"}}, model_), (std::vector<int32_t>{1, 264}));
  EXPECT_EQ(parse_tokenize_request({{"prompt", "ab"}, {"add_special_tokens", false}}, model_),
            (std::vector<int32_t>{264}));
  EXPECT_EQ(parse_detokenize_request({{"tokens", {264}}}, model_), std::vector<int32_t>{264});
  EXPECT_THROW(parse_tokenize_request({{"prompt", 1}}, model_), ApiError);
  EXPECT_THROW(parse_detokenize_request({{"tokens", "ab"}}, model_), ApiError);
}

TEST_F(OpenAiProtocol, ResponseShapes) {
  ResponseHeader h{"chatcmpl-1", 100, "tiny"};
  json full = full_response(Endpoint::kChatCompletions, h, {{"hi", "stop"}}, {3, 1});
  EXPECT_EQ(full["object"], "chat.completion");
  EXPECT_EQ(full["choices"][0]["message"], json({{"role", "assistant"}, {"content", "hi"}}));
  EXPECT_EQ(full["usage"], json({{"prompt_tokens", 3}, {"completion_tokens", 1},
                                 {"total_tokens", 4}}));
  json first = chunk(Endpoint::kChatCompletions, h, 1, "", "", true, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_EQ(first["choices"][0]["index"], 1);
  EXPECT_EQ(first["choices"][0]["finish_reason"], nullptr);
  EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
  json last = chunk(Endpoint::kChatCompletions, h, 0, "", "length", false, false);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(last.contains("usage"));
  json text = chunk(Endpoint::kCompletions, h, 0, "x", "", false, false);
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "x");
  json usage = usage_chunk(Endpoint::kCompletions, h, {2, 2});
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 4);
}

} // namespace
} // namespace llmserve
