// GBNF text as a request's `grammar` brings it: parsed, compiled against a
// small vocabulary, then walked. The bytes after the first NUL steer the walk.
#include "grammar_walk.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace llmserve;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view input(reinterpret_cast<const char *>(data), size);
  const size_t split = input.find('\0');
  const std::string_view choices = split == input.npos ? "" : input.substr(split + 1);
  try {
    const grammar::Grammar g = grammar::Grammar::parse(input.substr(0, split));
    fuzz::walk(grammar::compile(g, fuzz::vocabulary()), choices);
  } catch (const grammar::GrammarError &) {
  }
  return 0;
}
