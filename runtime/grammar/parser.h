// GBNF text to its syntax tree: what grammar.h lowers to rules over bytes.
#ifndef LLMSERVE_GRAMMAR_PARSER_H
#define LLMSERVE_GRAMMAR_PARSER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve::grammar::gbnf {

inline constexpr uint32_t kUnbounded = UINT32_MAX;

struct CodePointRange {
  uint32_t first, last; // inclusive
};

struct Expr;
using Sequence = std::vector<Expr>;

struct Expr {
  enum Kind { Literal, Class, RuleRef, Group };
  Kind kind = Literal;
  std::vector<uint32_t> literal;       // Literal: code points
  std::vector<CodePointRange> ranges;  // Class: as written ('.' is every code point)
  bool negated = false;                // Class: [^...]
  std::string name;                    // RuleRef
  std::vector<Sequence> alternatives;  // Group
  uint32_t min = 1, max = 1;           // Group: repeated min to max times
  size_t offset = 0;                   // where it starts in the text
};

struct RuleDef {
  std::string name;
  std::vector<Sequence> alternatives;
  size_t offset = 0;
};

// The rules in the order written. A repetition wraps what it repeats in a
// Group. Throws GrammarError naming line:column on malformed text or when
// kMaxGrammarBytes, kMaxNesting or kMaxRepetition is exceeded.
std::vector<RuleDef> parse(std::string_view text);

// "GBNF line L, column C" of a byte offset of the text, for error messages.
std::string position(std::string_view text, size_t offset);

} // namespace llmserve::grammar::gbnf

#endif
