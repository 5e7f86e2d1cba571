// A request's `regex` (and a schema's `pattern`): converted to GBNF, which
// must then parse, or refused with a GrammarError.
#include "grammar/regex_to_gbnf.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace llmserve;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view pattern(reinterpret_cast<const char *>(data), size);
  try {
    grammar::Grammar::parse(grammar::regex_to_gbnf(pattern));
  } catch (const grammar::GrammarError &) {
  }
  // As a schema's pattern: escaped for a JSON string, cut to fit a length.
  try {
    grammar::regex_rule_body(pattern, grammar::RegexText::JsonString, 64);
  } catch (const grammar::GrammarError &) {
  }
  return 0;
}
