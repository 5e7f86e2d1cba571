// The grammar a request's structured output asks for, as GBNF text: OpenAI's
// response_format (json_object, json_schema) or vLLM's structured_outputs
// (json, regex, choice, grammar, json_object). The engine then lets each
// sampled token keep the output within it (docs/server.md).
#ifndef LLMSERVE_SERVER_STRUCTURED_OUTPUT_H
#define LLMSERVE_SERVER_STRUCTURED_OUTPUT_H

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace llmserve {

struct StructuredOutput {
  std::string gbnf;
  std::string field; // where it comes from, for errors: "response_format", ...
};

// nullopt when the request asks for plain text. `raw_body` is the request's
// text, read again to keep the order a schema declares its properties in
// (nlohmann::json sorts object keys); empty: the order of `body`. Throws
// ApiError (400) naming the field when the request is malformed or its
// schema, regex, choices or grammar cannot become a grammar.
std::optional<StructuredOutput> structured_output(const nlohmann::json &body,
                                                  std::string_view raw_body);

} // namespace llmserve

#endif // LLMSERVE_SERVER_STRUCTURED_OUTPUT_H
