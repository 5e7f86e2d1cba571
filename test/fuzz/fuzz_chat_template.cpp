// A chat template as tokenizer_config.json brings it, rendered for a short
// conversation with tools and a tool call. Parsing and rendering run under
// budgets: a template may fail, but never crash, hang or exhaust memory.
#include "tokenizer/chat_template.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

using namespace llmserve;
using nlohmann::ordered_json;

namespace {

const ordered_json &messages() {
  static const ordered_json m = ordered_json::parse(R"([
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
    {"role": "assistant", "content": "21 degrees."},
    {"role": "user", "content": "Thanks \u00e9\u65e5"}
  ])");
  return m;
}

const ordered_json &variables() {
  static const ordered_json v = ordered_json::parse(R"({
    "tools": [{"type": "function", "function": {"name": "get_weather",
      "description": "The forecast", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
      "required": ["city"]}}}],
    "enable_thinking": false
  })");
  return v;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    const ChatTemplate chat(std::string(reinterpret_cast<const char *>(data), size), "<s>", "</s>");
    chat.render(messages(), /*add_generation_prompt=*/true, variables());
    chat.render(messages(), /*add_generation_prompt=*/false);
  } catch (const ChatTemplateError &) {
  }
  return 0;
}
