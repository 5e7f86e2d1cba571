// Regular expressions as GBNF: vLLM's `regex` structured output, and JSON
// Schema's `pattern` inside a JSON string. The pattern must match the whole
// text (Python's fullmatch), which for `pattern` is stricter than JSON
// Schema's unanchored search, so what the grammar accepts always validates.
// The accepted syntax and what is refused are in regex_syntax.h.
#ifndef LLMSERVE_GRAMMAR_REGEX_TO_GBNF_H
#define LLMSERVE_GRAMMAR_REGEX_TO_GBNF_H

#include "grammar/grammar.h" // GrammarError

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmserve::grammar {

// How the matched text is written in the output.
enum class RegexText {
  Raw,        // as is
  JsonString, // escaped as the inside of a JSON string literal
};

struct RegexBody {
  static constexpr size_t kUnbounded = SIZE_MAX;
  std::string gbnf;     // one GBNF expression, referring to no rule
  size_t min_chars = 0; // the shortest match, in code points
  size_t max_chars = 0; // the longest match, or kUnbounded
};

// A grammar whose `root` accepts exactly the texts the pattern fully matches.
// Throws GrammarError ("regex: ... at offset N") for a construct outside the
// subset or a pattern that matches nothing.
std::string regex_to_gbnf(std::string_view pattern);

// The pattern as an expression to use inside another grammar. With
// `max_chars`, repetitions without an upper bound get bounds that keep every
// match within max_chars, as even a share as they allow (leaving out the
// longer matches); throws GrammarError when a match is longer even so.
RegexBody regex_rule_body(std::string_view pattern, RegexText text, size_t max_chars = RegexBody::kUnbounded);

} // namespace llmserve::grammar

#endif
