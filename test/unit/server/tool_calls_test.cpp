#include "server/tool_calls.h"

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/vocabulary.h"
#include "server/openai_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llmserve {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"],
      "additionalProperties": false}}},
  {"type": "function", "function": {"name": "now"}}
])");

ToolUse use_of(const json &more) {
  json body = {{"tools", kTools}};
  body.update(more);
  return *parse_tool_use(body, "");
}

ApiError error_of(const json &body) {
  try {
    parse_tool_use(body, "");
  } catch (const ApiError &e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << body.dump();
  return ApiError(0, "");
}

TEST(ToolUse, ParsesToolsAndChoice) {
  EXPECT_FALSE(parse_tool_use(json::object(), ""));
  EXPECT_FALSE(parse_tool_use({{"tools", json::array()}, {"tool_choice", "none"}}, ""));
  ToolUse use = use_of(json::object());
  EXPECT_EQ(use.choice, ToolUse::Choice::kAuto);
  EXPECT_TRUE(use.parallel);
  EXPECT_EQ(use.tools.size(), 2u);
  EXPECT_FALSE(use.forced());
  use = use_of({{"tool_choice", "required"}, {"parallel_tool_calls", false}});
  EXPECT_TRUE(use.forced());
  EXPECT_FALSE(use.parallel);
  use = use_of({{"tool_choice", {{"type", "function"}, {"function", {{"name", "now"}}}}}});
  EXPECT_EQ(use.choice, ToolUse::Choice::kNamed);
  EXPECT_EQ(use.named, "now");
  EXPECT_EQ(use_of({{"tool_choice", "none"}}).choice, ToolUse::Choice::kNone);
  // Parameters keep the order the request text writes them in.
  const std::string text =
      R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": )"
      R"({"type": "object", "properties": {"z": {}, "a": {}}}}}]})";
  use = *parse_tool_use(json::parse(text), text);
  EXPECT_EQ(use.tools[0]["function"]["parameters"]["properties"].begin().key(), "z");
}

TEST(ToolUse, ErrorsNameTheField) {
  const std::pair<json, std::pair<const char *, const char *>> cases[] = {
      {{{"tools", "f"}}, {"tools", "must be an array"}},
      {{{"tools", {{{"type", "code"}}}}}, {"tools[0]", "must be {\"type\": \"function\""}},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "a b"}}}}}}},
       {"tools[0].function.name", "must be 1 to 64 characters"}},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", std::string(65, 'a')}}}}}}},
       {"tools[0].function.name", "must be 1 to 64 characters"}},
      {{{"tools", {kTools[1], kTools[1]}}}, {"tools[1].function.name", "repeats the name 'now'"}},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", 3}}}}}}},
       {"tools[0].function.parameters", "must be a JSON Schema object"}},
      {{{"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "x"}}}}}},
       {"tool_choice", "names the function 'x', which is not among the request's tools"}},
      {{{"tool_choice", "required"}}, {"tool_choice", "is \"required\" but the request has no tools"}},
      {{{"tools", kTools}, {"tool_choice", "always"}}, {"tool_choice", "must be \"none\""}},
      {{{"tools", kTools}, {"parallel_tool_calls", 1}}, {"parallel_tool_calls", "must be a boolean"}},
  };
  for (const auto &[body, want] : cases) {
    ApiError e = error_of(body);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, want.first) << body.dump();
    EXPECT_THAT(e.what(), HasSubstr(want.second)) << body.dump();
  }
  json many = json::array();
  for (int i = 0; i < 129; ++i)
    many.push_back({{"type", "function"}, {"function", {{"name", "f" + std::to_string(i)}}}});
  EXPECT_THAT(error_of({{"tools", many}}).what(), HasSubstr("at most 128"));
}

TEST(ToolCallFormat, NamedAndDetected) {
  EXPECT_EQ(tool_call_format_named("llama3_json"), ToolCallFormat::kLlama3Json);
  EXPECT_FALSE(tool_call_format_named("qwen"));
  EXPECT_EQ(detect_tool_call_format("{{ '<tool_call>' }}"), ToolCallFormat::kHermes);
  EXPECT_EQ(detect_tool_call_format("{{ '[TOOL_CALLS]' }}"), ToolCallFormat::kMistral);
  EXPECT_EQ(detect_tool_call_format("<|python_tag|>"), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(detect_tool_call_format("{{ messages }}"), ToolCallFormat::kHermes);
}

TEST(ParseToolCalls, ReadsEachFormat) {
  ParsedOutput out = parse_tool_calls(
      ToolCallFormat::kHermes,
      "Let me look.<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>");
  EXPECT_EQ(out.content, "Let me look.");
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].name, "now");
  EXPECT_EQ(out.calls[0].arguments, "{}");
  EXPECT_EQ(out.calls[1].arguments, R"({"city":"Oslo"})");
  EXPECT_NE(out.calls[0].id, out.calls[1].id);

  out = parse_tool_calls(ToolCallFormat::kLlama3Json,
                         R"( <|python_tag|>{"name": "now", "parameters": {"z": 1, "a": 2}}; )"
                         R"({"name": "get_weather", "parameters": {"city": "Rome"}})");
  EXPECT_EQ(out.content, " ");
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].arguments, R"({"z":1,"a":2})") << "keys keep their order";

  out = parse_tool_calls(ToolCallFormat::kMistral,
                         R"([TOOL_CALLS][{"name": "now", "arguments": "{\"x\": 1}"}])");
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, R"({"x":1})") << "arguments given as JSON text";
}

TEST(ParseToolCalls, MalformedCallsAreContent) {
  for (const auto &[format, text] : std::vector<std::pair<ToolCallFormat, std::string>>{
           {ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"now\", \"arguments\": {"},
           {ToolCallFormat::kHermes, "<tool_call>{\"arguments\": {}}</tool_call>"},
           {ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": 3}</tool_call>"},
           {ToolCallFormat::kLlama3Json, "{\"name\": \"f\", \"parameters\": {}} trailing"},
           {ToolCallFormat::kLlama3Json, "Sure: {\"name\": \"f\"}"},
           {ToolCallFormat::kMistral, "[TOOL_CALLS][]"},
           {ToolCallFormat::kMistral, "[TOOL_CALLS] not json"},
       }) {
    ParsedOutput out = parse_tool_calls(format, text);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
  }
}

TEST(ToolCallStream, PassesContentOnAndHoldsWhatMayBeACall) {
  ToolCallStream stream(ToolCallFormat::kHermes);
  EXPECT_EQ(stream.push("Hello <tool"), "Hello ");
  EXPECT_EQ(stream.push("box> and <"), "<toolbox> and ");
  EXPECT_EQ(stream.push("tool_call>\n{\"name\": \"now\", "), "");
  EXPECT_EQ(stream.push("\"arguments\": {}}\n</tool_call>"), "");
  ParsedOutput end = stream.finish();
  EXPECT_EQ(end.content, "");
  ASSERT_EQ(end.calls.size(), 1u);
  EXPECT_EQ(end.calls[0].name, "now");

  // A call cut short is content after all.
  ToolCallStream cut(ToolCallFormat::kMistral);
  EXPECT_EQ(cut.push("[TOOL_"), "");
  EXPECT_EQ(cut.push("CALLS][{\"name\""), "");
  EXPECT_EQ(cut.finish().content, "[TOOL_CALLS][{\"name\"");

  // Llama 3: calls open the output, or there are none.
  ToolCallStream llama(ToolCallFormat::kLlama3Json);
  EXPECT_EQ(llama.push("  "), "");
  EXPECT_EQ(llama.push("It is {"), "  It is {");
  EXPECT_EQ(llama.push("\"name\": \"now\"}"), "\"name\": \"now\"}");
  EXPECT_TRUE(llama.finish().calls.empty());
  ToolCallStream call(ToolCallFormat::kLlama3Json);
  EXPECT_EQ(call.push("{\"name\": \"now\", \"parameters\": {}}"), "");
  EXPECT_EQ(call.finish().calls.size(), 1u);
}

// The forcing grammar: what it accepts, on a vocabulary of single bytes.
bool accepts(const std::string &gbnf, const std::string &text) {
  std::vector<std::string> bytes(256);
  for (int b = 1; b < 256; ++b)
    bytes[b] = std::string(1, char(b));
  auto compiled = grammar::compile(grammar::Grammar::parse(gbnf),
                                   std::make_shared<const grammar::Vocabulary>(
                                       bytes, std::vector<int32_t>{0}));
  grammar::Matcher matcher(compiled);
  return matcher.accept_bytes(text) && matcher.can_end();
}

TEST(ToolCallGbnf, ForcesValidCallsOfTheAllowedTools) {
  const std::string weather =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"c\"}}"
      "\n</tool_call>";
  const std::string now = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  std::string gbnf = tool_call_gbnf(ToolCallFormat::kHermes, use_of({{"tool_choice", "required"}}));
  EXPECT_TRUE(accepts(gbnf, weather));
  EXPECT_TRUE(accepts(gbnf, now + "\n" + weather)) << "parallel calls";
  EXPECT_FALSE(accepts(gbnf, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                             "{\"city\": \"Oslo\"}}\n</tool_call>"))
      << "a required argument missing";
  EXPECT_FALSE(accepts(gbnf, "Sure." + now));
  gbnf = tool_call_gbnf(ToolCallFormat::kHermes,
                        use_of({{"tool_choice", {{"type", "function"}, {"function", {{"name", "now"}}}}},
                                {"parallel_tool_calls", false}}));
  EXPECT_TRUE(accepts(gbnf, now));
  EXPECT_FALSE(accepts(gbnf, weather));
  EXPECT_FALSE(accepts(gbnf, now + "\n" + now));

  gbnf = tool_call_gbnf(ToolCallFormat::kLlama3Json, use_of({{"tool_choice", "required"}}));
  EXPECT_TRUE(accepts(gbnf, R"({"name": "now", "parameters": {}}; {"name": "now", "parameters": {}})"));
  gbnf = tool_call_gbnf(ToolCallFormat::kMistral, use_of({{"tool_choice", "required"}}));
  EXPECT_TRUE(accepts(gbnf, R"([TOOL_CALLS][{"name": "now", "arguments": {}}])"));
  EXPECT_FALSE(accepts(gbnf, R"([TOOL_CALLS][])"));

  // What the grammar accepts, the parser reads back.
  ParsedOutput out = parse_tool_calls(ToolCallFormat::kHermes, weather);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, R"({"city":"Oslo","unit":"c"})");

  // A tool whose schema cannot be followed is named.
  json bad = kTools;
  bad[0]["function"]["parameters"]["not"] = json::object();
  try {
    tool_call_gbnf(ToolCallFormat::kHermes, *parse_tool_use({{"tools", bad}, {"tool_choice", "required"}}, ""));
    ADD_FAILURE() << "no error";
  } catch (const ApiError &e) {
    EXPECT_EQ(e.param, "tools[0].function.parameters");
  }
}

} // namespace
} // namespace llmserve
