// The syntax tree of a regular expression in the ECMAScript subset that JSON
// Schema's `pattern` and vLLM's `regex` use: literals, escapes, classes,
// groups, alternation, greedy and lazy quantifiers, and ^ $ at the ends.
// Patterns are read over code points, as ECMAScript does with the u flag
// (JSON Schema validators such as ajv) and Python's re does. Anything that
// is not a regular language (backreferences, lookaround) or that ECMAScript
// and Python read differently is refused.
#ifndef LLMSERVE_GRAMMAR_REGEX_SYNTAX_H
#define LLMSERVE_GRAMMAR_REGEX_SYNTAX_H

#include "grammar/gbnf_text.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace llmserve::grammar {

struct RegexNode {
  enum class Kind {
    Chars,       // one code point from `chars`
    Sequence,    // `children` one after another (empty: the empty string)
    Alternation, // one of `children`
    Repeat,      // children[0], between `min` and `max` times
  };
  static constexpr uint32_t kUnbounded = UINT32_MAX;

  Kind kind = Kind::Sequence;
  CodepointSet chars;
  std::vector<RegexNode> children;
  uint32_t min = 0, max = 0;
};

// The tree of the whole pattern. The shorthand classes (\d \w \s and their
// negations) and `.` match only what they match both in ECMAScript and in
// Python's Unicode-aware re, so the language never exceeds either reading.
// Throws GrammarError naming the construct and its byte offset, also for
// patterns over grammar.h's limits (repetition counts, nesting, size once
// repetitions are expanded).
RegexNode parse_regex(std::string_view pattern);

} // namespace llmserve::grammar

#endif
