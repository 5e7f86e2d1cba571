#include "server/structured_output.h"

#include "grammar/choice.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/regex_to_gbnf.h"
#include "server/openai_protocol.h"
#include "server/request_fields.h"

#include <initializer_list>
#include <vector>

namespace llmserve {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

[[noreturn]] void invalid(const std::string &field, const std::string &why) {
  throw ApiError(400, "'" + field + "' " + why, field);
}

// The value at `path` in the body, its object keys in the order the client
// wrote them.
ordered_json in_written_order(const json &value, std::string_view raw_body,
                              std::initializer_list<const char *> path) {
  if (raw_body.empty())
    return ordered_json::parse(value.dump());
  ordered_json at = ordered_json::parse(raw_body);
  for (const char *key : path)
    at = ordered_json(at.at(key));
  return at;
}

// A grammar from one of the converters, its errors as the field's 400.
template <typename Convert>
StructuredOutput converted(const std::string &field, Convert &&convert) {
  try {
    return {convert(), field};
  } catch (const grammar::GrammarError &e) {
    invalid(field, std::string("cannot be followed: ") + e.what());
  }
}

std::optional<StructuredOutput> response_format(const json &format, std::string_view raw_body) {
  const std::string field = "response_format";
  if (!format.is_object())
    invalid(field, std::string("must be an object, not ") + format.type_name());
  const json type = format.value("type", json());
  if (type == "text")
    return std::nullopt;
  if (type == "json_object")
    return StructuredOutput{grammar::json_object_gbnf(), field};
  if (type != "json_schema")
    invalid(field + ".type", "must be \"text\", \"json_object\" or \"json_schema\", not " +
                                 type.dump());
  const json *spec = format.contains("json_schema") ? &format["json_schema"] : nullptr;
  if (!spec || !spec->is_object() || !spec->contains("schema"))
    invalid(field + ".json_schema", "must be an object with a \"schema\"");
  const json &schema = (*spec)["schema"];
  if (!schema.is_object() && !schema.is_boolean())
    invalid(field + ".json_schema.schema", std::string("must be a JSON Schema (an object), not ") +
                                               schema.type_name());
  const ordered_json ordered =
      in_written_order(schema, raw_body, {"response_format", "json_schema", "schema"});
  return converted(field + ".json_schema.schema",
                   [&] { return grammar::json_schema_to_gbnf(ordered); });
}

std::optional<StructuredOutput> structured_outputs(const json &outputs,
                                                   std::string_view raw_body) {
  const std::string field = "structured_outputs";
  if (!outputs.is_object())
    invalid(field, std::string("must be an object, not ") + outputs.type_name());
  std::vector<std::string> asked;
  for (const char *kind : {"json", "regex", "choice", "grammar", "json_object"})
    if (outputs.contains(kind) && !outputs[kind].is_null() && outputs[kind] != false)
      asked.push_back(kind);
  if (asked.empty())
    return std::nullopt;
  if (asked.size() > 1)
    invalid(field, "asks for " + asked[0] + " and " + asked[1] + "; give one of them");
  const std::string kind = asked[0];
  const std::string at = field + "." + kind;
  const json &value = outputs[kind];
  if (kind == "json") {
    ordered_json schema;
    if (value.is_string()) {
      // vLLM also takes the schema as JSON text.
      schema = ordered_json::parse(value.get<std::string>(), nullptr, false);
      if (schema.is_discarded())
        invalid(at, "is a string that is not JSON");
    } else if (value.is_object() || value.is_boolean()) {
      schema = in_written_order(value, raw_body, {"structured_outputs", "json"});
    } else {
      invalid(at, std::string("must be a JSON Schema, not ") + value.type_name());
    }
    return converted(at, [&] { return grammar::json_schema_to_gbnf(schema); });
  }
  if (kind == "json_object") {
    if (value != true)
      invalid(at, "must be true");
    return StructuredOutput{grammar::json_object_gbnf(), at};
  }
  if (kind == "choice") {
    if (!value.is_array() || value.empty() ||
        !std::all_of(value.begin(), value.end(), [](const json &c) { return c.is_string(); }))
      invalid(at, "must be a non-empty array of strings");
    return converted(at, [&] {
      return grammar::choices_to_gbnf(value.get<std::vector<std::string>>());
    });
  }
  if (!value.is_string())
    invalid(at, std::string("must be a string, not ") + value.type_name());
  if (kind == "regex")
    return converted(at, [&] { return grammar::regex_to_gbnf(value.get<std::string>()); });
  // A GBNF grammar is checked when it is compiled.
  return StructuredOutput{value.get<std::string>(), at};
}

} // namespace

std::optional<StructuredOutput> structured_output(const json &body, std::string_view raw_body) {
  check_structured_output_fields(body);
  const json *format = body.contains("response_format") && !body["response_format"].is_null()
                           ? &body["response_format"]
                           : nullptr;
  const json *outputs = body.contains("structured_outputs") &&
                                !body["structured_outputs"].is_null()
                            ? &body["structured_outputs"]
                            : nullptr;
  std::optional<StructuredOutput> from_format =
      format ? response_format(*format, raw_body) : std::nullopt;
  std::optional<StructuredOutput> from_outputs =
      outputs ? structured_outputs(*outputs, raw_body) : std::nullopt;
  if (from_format && from_outputs)
    invalid("structured_outputs", "cannot be combined with a response_format other than text");
  return from_format ? from_format : from_outputs;
}

} // namespace llmserve
