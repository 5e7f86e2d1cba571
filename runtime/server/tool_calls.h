// Tool calling: a chat request's `tools`, `tool_choice` and
// `parallel_tool_calls`; the grammar that makes the model call a tool when it
// must; and the calls read back out of the text in the format the model's
// family writes them (vLLM's tool-call parsers of the same names):
//
//   hermes       <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//                (Hermes, Qwen 2.5 and 3), one block per call
//   llama3_json  {"name": "f", "parameters": {...}} (Llama 3.1+), calls
//                separated by "; ", optionally after <|python_tag|>
//   mistral      [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
#ifndef LLMSERVE_SERVER_TOOL_CALLS_H
#define LLMSERVE_SERVER_TOOL_CALLS_H

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

enum class ToolCallFormat { kHermes, kLlama3Json, kMistral };

// "hermes", "llama3_json", "mistral".
const char *to_string(ToolCallFormat format);
std::optional<ToolCallFormat> tool_call_format_named(std::string_view name);
// The format a chat template's own tool-call syntax shows; hermes when it
// shows none.
ToolCallFormat detect_tool_call_format(std::string_view chat_template);

struct ToolUse {
  enum class Choice { kNone, kAuto, kRequired, kNamed };
  // The request's tools as the chat template sees them ({"type":
  // "function", "function": {...}}), in the order written.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  Choice choice = Choice::kAuto;
  std::string named; // kNamed: the function the model must call
  bool parallel = true;

  // Whether the output must be calls (required or a named function).
  bool forced() const { return choice == Choice::kRequired || choice == Choice::kNamed; }
};

// The request's tool fields; nullopt when it has no tools. `raw_body` (the
// request text) keeps each schema's properties in the order written. Throws
// ApiError (400) naming the field: a malformed tool, a tool_choice naming a
// function that is not among the tools, or one that needs tools without any.
std::optional<ToolUse> parse_tool_use(const nlohmann::json &body, std::string_view raw_body);

// GBNF whose sentences are one call (or with `parallel`, one or more) of the
// tools `use` allows, arguments valid against each tool's parameters schema.
// Throws ApiError (400) naming the tool whose schema cannot be followed.
std::string tool_call_gbnf(ToolCallFormat format, const ToolUse &use);

struct ToolCall {
  std::string id; // "call_" and 24 random characters
  std::string name;
  std::string arguments; // JSON text
};

struct ParsedOutput {
  std::string content; // text outside the calls
  std::vector<ToolCall> calls;
};

// A finished output split into its content and calls. Text in which no call
// is well formed is all content.
ParsedOutput parse_tool_calls(ToolCallFormat format, std::string_view text);

// The same for an output that arrives in pieces: content is passed on as it
// comes, except text that may begin a call, which is held until finish().
class ToolCallStream {
public:
  explicit ToolCallStream(ToolCallFormat format) : format_(format) {}

  // The part of `text` that is content for sure.
  std::string push(std::string_view text);
  // The content held back and the calls, at the end of the output.
  ParsedOutput finish();

private:
  ToolCallFormat format_;
  bool started_ = false; // some content has been passed on
  bool in_calls_ = false;
  std::string held_;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_TOOL_CALLS_H
