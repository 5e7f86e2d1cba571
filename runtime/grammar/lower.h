// The syntax tree to rules over bytes: literals become byte sequences,
// classes UTF-8 byte-range sequences (utf8_ranges.h), and groups and
// repetitions generated rules. Repetitions recurse on the right, so a
// matcher's stack stays flat however long the repetition runs: x* is
// `s ::= x s | ""`, x{0,n} a chain of n rules `o_k ::= x o_k-1 | ""`.
#ifndef LLMSERVE_GRAMMAR_LOWER_H
#define LLMSERVE_GRAMMAR_LOWER_H

#include "grammar/grammar.h"
#include "grammar/parser.h"

#include <string_view>
#include <vector>

namespace llmserve::grammar {

// Throws GrammarError for a rule defined twice, an undefined rule, no rule
// "root", or more than kMaxElements elements. `text` is what `defs` was
// parsed from, for positions in messages.
Grammar lower(const std::vector<gbnf::RuleDef> &defs, std::string_view text);

} // namespace llmserve::grammar

#endif
