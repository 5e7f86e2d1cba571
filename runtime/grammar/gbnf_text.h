// Writing GBNF text in llama.cpp's syntax: quoted literals and character
// classes, shared by the converters that produce grammars (JSON Schema,
// regular expressions, choices).
#ifndef LLMSERVE_GRAMMAR_GBNF_TEXT_H
#define LLMSERVE_GRAMMAR_GBNF_TEXT_H

#include "grammar/grammar.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve::grammar {

// An inclusive range of Unicode scalar values.
struct CodepointRange {
  char32_t first, last;
};

// A sorted list of disjoint, non-adjacent ranges.
using CodepointSet = std::vector<CodepointRange>;

constexpr char32_t kMaxCodepoint = 0x10FFFF;

// The set's normal form from ranges in any order, overlapping or not.
CodepointSet normalized(CodepointSet ranges);

// The scalar values not in `set` (surrogates are never included).
CodepointSet complement(const CodepointSet &set);

CodepointSet intersection(const CodepointSet &a, const CodepointSet &b);

// A quoted literal matching exactly `text`. Throws GrammarError when `text` is
// not valid UTF-8 (GBNF literals are text, not bytes).
std::string gbnf_literal(std::string_view text);

// A bracketed character class matching one code point of a non-empty set.
std::string gbnf_class(const CodepointSet &set);

// The quantifier for `min` to `max` (nullopt: any number of) repetitions:
// "" (once), "?", "*", "+", "{m}", "{m,}" or "{m,n}".
std::string gbnf_repetition(uint64_t min, std::optional<uint64_t> max);

// The expressions as alternatives: "a | b | c".
std::string gbnf_alternatives(const std::vector<std::string> &expressions);

// `name` with every character outside [a-zA-Z0-9-] replaced by '-': a rule
// name derived from arbitrary text.
std::string gbnf_rule_name(std::string_view name);

} // namespace llmserve::grammar

#endif
