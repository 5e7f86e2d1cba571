// A request's JSON schema: converted to GBNF, parsed, compiled against a
// small vocabulary, then walked. The bytes after the first NUL (which JSON
// text cannot hold) steer the walk.
#include "grammar/json_schema.h"
#include "grammar_walk.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace llmserve;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view input(reinterpret_cast<const char *>(data), size);
  const size_t split = input.find('\0');
  const std::string_view text = input.substr(0, split);
  const std::string_view choices = split == input.npos ? "" : input.substr(split + 1);
  const auto schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded())
    return 0;
  try {
    const grammar::Grammar g = grammar::Grammar::parse(grammar::json_schema_to_gbnf(schema));
    fuzz::walk(grammar::compile(g, fuzz::vocabulary()), choices);
  } catch (const grammar::GrammarError &) {
  }
  return 0;
}
