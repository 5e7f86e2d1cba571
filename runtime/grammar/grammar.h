// A GBNF grammar (llama.cpp's syntax, its grammars/README.md), parsed,
// checked and lowered to rules over bytes: literals become byte sequences,
// character classes (sets of code points) the UTF-8 byte-range sequences that
// encode them, groups and repetitions generated rules (a long bounded
// repetition one counted rule, lower.h). Grammar text is untrusted (it
// arrives in HTTP requests): every limit below is enforced with a
// GrammarError, never a crash, hang or unbounded allocation.
#ifndef LLMSERVE_GRAMMAR_GRAMMAR_H
#define LLMSERVE_GRAMMAR_GRAMMAR_H

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve::grammar {

// Every error of this library: malformed GBNF (the message names line:column
// and what was expected), undefined rule, left recursion, limits exceeded.
class GrammarError : public std::runtime_error {
public:
  using runtime_error::runtime_error;
};

inline constexpr size_t kMaxGrammarBytes = 1 << 20;  // of GBNF text
inline constexpr size_t kMaxNesting = 64;            // parentheses and repetitions
inline constexpr uint32_t kMaxRepetition = 10000;    // a bound of {m,n}
inline constexpr size_t kMaxElements = 100000;       // once repetitions are expanded

// The bytes one terminal matches.
using ByteSet = std::bitset<256>;

// One element of an alternative: a terminal or a reference to a rule.
struct Element {
  enum Kind : uint8_t { Bytes, Rule };
  Kind kind;
  int32_t index; // into Grammar::byte_sets() or Grammar::rules()
  bool operator==(const Element &o) const { return kind == o.kind && index == o.index; }
};

struct Rule {
  // A rule of the text keeps its name; a generated one is named after the
  // rule it came from and a number ("string_3": '_' is not a GBNF name
  // character, so the names cannot clash).
  std::string name;
  std::vector<std::vector<Element>> alternatives; // an empty one matches ""
  // A counted repetition when max > 0: its one alternative, a single element
  // that cannot match "", matched min to max times, where min is 0 or max.
  uint32_t min = 0, max = 0;
  bool counted() const { return max > 0; }
};

// Parsed and checked GBNF. After parse, every rule is reachable from root and
// can complete (alternatives that never can are dropped), and no rule is left
// recursive.
class Grammar {
public:
  // Throws GrammarError.
  static Grammar parse(std::string_view gbnf);

  const std::vector<Rule> &rules() const { return rules_; }
  const std::vector<ByteSet> &byte_sets() const { return byte_sets_; }
  int32_t root() const { return root_; }
  // The lowered rules as GBNF-like text, byte sets as ranges of bytes.
  std::string to_string() const;

  // For the parts of the library that build one.
  Grammar(std::vector<Rule> rules, std::vector<ByteSet> byte_sets, int32_t root)
      : rules_(std::move(rules)), byte_sets_(std::move(byte_sets)), root_(root) {}

private:
  std::vector<Rule> rules_;
  std::vector<ByteSet> byte_sets_;
  int32_t root_ = 0;
};

} // namespace llmserve::grammar

#endif
