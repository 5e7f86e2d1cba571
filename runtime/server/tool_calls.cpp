#include "server/tool_calls.h"

#include "grammar/gbnf_rename.h"
#include "grammar/gbnf_text.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "server/openai_protocol.h"

#include <algorithm>
#include <random>

namespace llmserve {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// OpenAI's limit on a function name.
constexpr size_t kMaxFunctionName = 64;
constexpr size_t kMaxTools = 128;

[[noreturn]] void invalid(const std::string &field, const std::string &why) {
  throw ApiError(400, "'" + field + "' " + why, field);
}

// How each format opens its calls, and the name of a call's arguments.
struct Syntax {
  const char *open;      // before the calls
  const char *close;     // after them
  const char *separator; // between two calls
  const char *call_open, *call_close; // around each call
  const char *arguments_key;
};

Syntax syntax_of(ToolCallFormat format) {
  switch (format) {
  case ToolCallFormat::kHermes:
    return {"", "", "\n", "<tool_call>\n", "\n</tool_call>", "arguments"};
  case ToolCallFormat::kLlama3Json:
    return {"", "", "; ", "", "", "parameters"};
  case ToolCallFormat::kMistral:
    return {"[TOOL_CALLS][", "]", ", ", "", "", "arguments"};
  }
  return {};
}

bool valid_function_name(const std::string &name) {
  return !name.empty() && name.size() <= kMaxFunctionName &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
         });
}

std::string call_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i)
    id += kChars[rng() % (sizeof kChars - 1)];
  return id;
}

// The end of the JSON object or array that opens at `begin` (one past its
// closing bracket), or npos when the text ends first.
size_t json_value_end(std::string_view text, size_t begin) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// {"name": ..., "<arguments_key>": {...}} as a call, or nullopt.
std::optional<ToolCall> call_of(const ordered_json &value, const char *arguments_key) {
  if (!value.is_object() || !value.contains("name") || !value["name"].is_string())
    return std::nullopt;
  ordered_json arguments = value.value(arguments_key, ordered_json::object());
  if (arguments.is_string()) // some models write the arguments as JSON text
    arguments = ordered_json::parse(arguments.get<std::string>(), nullptr, false);
  if (!arguments.is_object())
    return std::nullopt;
  return ToolCall{call_id(), value["name"].get<std::string>(), arguments.dump()};
}

std::string_view trim_left(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  return text;
}

// The calls of `text` (everything from the first call on), or nullopt when
// they are not well formed.
std::optional<std::vector<ToolCall>> calls_in(ToolCallFormat format, std::string_view text) {
  const Syntax syntax = syntax_of(format);
  std::vector<ToolCall> calls;
  auto parse_object = [&](std::string_view at) -> std::optional<std::pair<ToolCall, size_t>> {
    at = trim_left(at);
    if (at.empty() || at.front() != '{')
      return std::nullopt;
    const size_t end = json_value_end(at, 0);
    if (end == std::string_view::npos)
      return std::nullopt;
    const ordered_json value = ordered_json::parse(at.substr(0, end), nullptr, false);
    std::optional<ToolCall> call = call_of(value, syntax.arguments_key);
    if (!call)
      return std::nullopt;
    return std::pair{*call, end};
  };
  switch (format) {
  case ToolCallFormat::kHermes: {
    const std::string_view open = "<tool_call>", close = "</tool_call>";
    for (size_t at = text.find(open); at != std::string_view::npos; at = text.find(open, at)) {
      at += open.size();
      const size_t end = text.find(close, at);
      auto call = parse_object(text.substr(at, end == std::string_view::npos ? text.npos
                                                                              : end - at));
      if (!call)
        return std::nullopt;
      calls.push_back(call->first);
      if (end == std::string_view::npos)
        break;
      at = end + close.size();
    }
    break;
  }
  case ToolCallFormat::kLlama3Json: {
    std::string_view rest = trim_left(text);
    if (rest.substr(0, 14) == "<|python_tag|>")
      rest.remove_prefix(14);
    while (true) {
      auto call = parse_object(rest);
      if (!call)
        return std::nullopt;
      calls.push_back(call->first);
      rest = trim_left(trim_left(rest).substr(call->second));
      if (rest.empty())
        break;
      if (rest.front() != ';')
        return std::nullopt;
      rest.remove_prefix(1);
    }
    break;
  }
  case ToolCallFormat::kMistral: {
    std::string_view rest = trim_left(text.substr(std::string_view("[TOOL_CALLS]").size()));
    const size_t end = rest.empty() || rest.front() != '[' ? rest.npos : json_value_end(rest, 0);
    if (end == std::string_view::npos)
      return std::nullopt;
    const ordered_json list = ordered_json::parse(rest.substr(0, end), nullptr, false);
    if (!list.is_array() || list.empty())
      return std::nullopt;
    for (const ordered_json &value : list) {
      std::optional<ToolCall> call = call_of(value, syntax.arguments_key);
      if (!call)
        return std::nullopt;
      calls.push_back(*call);
    }
    break;
  }
  }
  if (calls.empty())
    return std::nullopt;
  return calls;
}

// Where the calls begin in `text`, or npos.
size_t calls_begin(ToolCallFormat format, std::string_view text) {
  switch (format) {
  case ToolCallFormat::kHermes:
    return text.find("<tool_call>");
  case ToolCallFormat::kMistral:
    return text.find("[TOOL_CALLS]");
  case ToolCallFormat::kLlama3Json: {
    const std::string_view rest = trim_left(text);
    return !rest.empty() && (rest.front() == '{' || rest.substr(0, 14) == "<|python_tag|>")
               ? text.size() - rest.size()
               : std::string_view::npos;
  }
  }
  return std::string_view::npos;
}

} // namespace

const char *to_string(ToolCallFormat format) {
  switch (format) {
  case ToolCallFormat::kHermes:
    return "hermes";
  case ToolCallFormat::kLlama3Json:
    return "llama3_json";
  case ToolCallFormat::kMistral:
    return "mistral";
  }
  return "";
}

std::optional<ToolCallFormat> tool_call_format_named(std::string_view name) {
  for (ToolCallFormat format :
       {ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral})
    if (name == to_string(format))
      return format;
  return std::nullopt;
}

ToolCallFormat detect_tool_call_format(std::string_view chat_template) {
  if (chat_template.find("[TOOL_CALLS]") != std::string_view::npos)
    return ToolCallFormat::kMistral;
  if (chat_template.find("<|python_tag|>") != std::string_view::npos ||
      chat_template.find("\"parameters\": ") != std::string_view::npos)
    return ToolCallFormat::kLlama3Json;
  return ToolCallFormat::kHermes;
}

std::optional<ToolUse> parse_tool_use(const json &body, std::string_view raw_body) {
  ToolUse use;
  const json *tools = body.contains("tools") && !body["tools"].is_null() ? &body["tools"] : nullptr;
  if (tools && !tools->is_array())
    invalid("tools", std::string("must be an array, not ") + tools->type_name());
  if (tools && tools->size() > kMaxTools)
    invalid("tools", "holds " + std::to_string(tools->size()) + " tools; at most " +
                         std::to_string(kMaxTools));
  // The tools again with their keys in the order the request writes them
  // (json sorts them): read once, whatever the number of tools.
  const ordered_json written = tools ? (raw_body.empty() ? ordered_json::parse(tools->dump())
                                                         : ordered_json::parse(raw_body)["tools"])
                                     : ordered_json();
  std::vector<std::string> names;
  for (size_t i = 0; tools && i < tools->size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const json &tool = (*tools)[i];
    if (!tool.is_object() || tool.value("type", json()) != "function" ||
        !tool.contains("function") || !tool["function"].is_object())
      invalid(at, "must be {\"type\": \"function\", \"function\": {...}}");
    const json &function = tool["function"];
    const std::string name = function.value("name", json()).is_string()
                                 ? function["name"].get<std::string>()
                                 : "";
    if (!valid_function_name(name))
      invalid(at + ".function.name", "must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -");
    if (std::find(names.begin(), names.end(), name) != names.end())
      invalid(at + ".function.name", "repeats the name '" + name + "'");
    names.push_back(name);
    if (function.contains("parameters") && !function["parameters"].is_null() &&
        !function["parameters"].is_object())
      invalid(at + ".function.parameters", "must be a JSON Schema object");
    use.tools.push_back(written[i]);
  }

  const json choice = body.value("tool_choice", json());
  if (choice.is_null() || choice == "auto") {
    use.choice = ToolUse::Choice::kAuto;
  } else if (choice == "none") {
    use.choice = ToolUse::Choice::kNone;
  } else if (choice == "required") {
    use.choice = ToolUse::Choice::kRequired;
  } else if (choice.is_object() && choice.value("type", json()) == "function" &&
             choice.contains("function") && choice["function"].is_object() &&
             choice["function"].value("name", json()).is_string()) {
    use.choice = ToolUse::Choice::kNamed;
    use.named = choice["function"]["name"].get<std::string>();
    if (std::find(names.begin(), names.end(), use.named) == names.end())
      invalid("tool_choice", "names the function '" + use.named +
                                 "', which is not among the request's tools");
  } else {
    invalid("tool_choice", "must be \"none\", \"auto\", \"required\" or {\"type\": "
                           "\"function\", \"function\": {\"name\": ...}}");
  }
  if (use.choice == ToolUse::Choice::kRequired && names.empty())
    invalid("tool_choice", "is \"required\" but the request has no tools");
  const json parallel = body.value("parallel_tool_calls", json());
  if (!parallel.is_null() && !parallel.is_boolean())
    invalid("parallel_tool_calls", "must be a boolean");
  use.parallel = parallel.is_null() || parallel.get<bool>();
  if (names.empty())
    return std::nullopt;
  return use;
}

std::string tool_call_gbnf(ToolCallFormat format, const ToolUse &use) {
  const Syntax syntax = syntax_of(format);
  std::string rules, alternatives;
  for (size_t i = 0; i < use.tools.size(); ++i) {
    const ordered_json &function = use.tools[i]["function"];
    const std::string name = function["name"].get<std::string>();
    if (use.choice == ToolUse::Choice::kNamed && name != use.named)
      continue;
    const std::string prefix = "tool" + std::to_string(i) + "-";
    std::string arguments;
    try {
      arguments = function.contains("parameters")
                      ? grammar::json_schema_to_gbnf(function["parameters"])
                      : grammar::json_object_gbnf();
    } catch (const grammar::GrammarError &e) {
      invalid("tools[" + std::to_string(i) + "].function.parameters",
              std::string("cannot be followed: ") + e.what());
    }
    rules += grammar::gbnf_with_rule_prefix(arguments, prefix) + "\n";
    const std::string head = std::string("{\"name\": ") + ordered_json(name).dump() + ", \"" +
                             syntax.arguments_key + "\": ";
    alternatives += (alternatives.empty() ? "" : " | ") + grammar::gbnf_literal(head) + " " +
                    prefix + "root " + grammar::gbnf_literal("}");
  }
  const std::string call = (*syntax.call_open ? grammar::gbnf_literal(syntax.call_open) + " " : "") +
                           "call" +
                           (*syntax.call_close ? " " + grammar::gbnf_literal(syntax.call_close) : "");
  std::string root = "root ::= ";
  if (*syntax.open)
    root += grammar::gbnf_literal(syntax.open) + " ";
  root += "call-block";
  if (use.parallel)
    root += " (" + grammar::gbnf_literal(syntax.separator) + " call-block)*";
  if (*syntax.close)
    root += " " + grammar::gbnf_literal(syntax.close);
  return root + "\ncall-block ::= " + call + "\ncall ::= " + alternatives + "\n" + rules;
}

ParsedOutput parse_tool_calls(ToolCallFormat format, std::string_view text) {
  const size_t begin = calls_begin(format, text);
  if (begin == std::string_view::npos)
    return {std::string(text), {}};
  std::optional<std::vector<ToolCall>> calls = calls_in(format, text.substr(begin));
  if (!calls)
    return {std::string(text), {}};
  return {std::string(text.substr(0, begin)), std::move(*calls)};
}

std::string ToolCallStream::push(std::string_view text) {
  held_ += text;
  if (in_calls_)
    return "";
  const size_t begin = format_ == ToolCallFormat::kLlama3Json && started_
                           ? std::string_view::npos
                           : calls_begin(format_, held_);
  std::string content;
  if (begin != std::string_view::npos) {
    content = held_.substr(0, begin);
    held_.erase(0, begin);
    in_calls_ = true;
  } else if (format_ == ToolCallFormat::kLlama3Json) {
    // Calls open the output; until a character says otherwise, hold it.
    if (trim_left(held_).empty() && !started_)
      return "";
    content = std::move(held_);
    held_.clear();
  } else {
    // Hold the longest end of the text that may begin the opening marker.
    const std::string_view marker =
        format_ == ToolCallFormat::kHermes ? "<tool_call>" : "[TOOL_CALLS]";
    size_t keep = std::min(held_.size(), marker.size() - 1);
    while (keep > 0 && std::string_view(held_).substr(held_.size() - keep) !=
                           marker.substr(0, keep))
      --keep;
    content = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
  }
  started_ = started_ || !content.empty();
  return content;
}

ParsedOutput ToolCallStream::finish() {
  if (!in_calls_)
    return {std::exchange(held_, ""), {}};
  std::optional<std::vector<ToolCall>> calls = calls_in(format_, held_);
  if (!calls)
    return {std::exchange(held_, ""), {}};
  held_.clear();
  return {"", std::move(*calls)};
}

} // namespace llmserve
