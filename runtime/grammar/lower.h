// The syntax tree to rules over bytes: literals become byte sequences,
// classes UTF-8 byte-range sequences (utf8_ranges.h), and groups and
// repetitions generated rules. Repetitions recurse on the right, so a
// matcher's stack stays flat however long the repetition runs: x* is
// `s ::= x s | ""`. A bounded x{m,n} is x{m} then x{0,n-m}; a part up to
// kMaxUnrolled long is written out, x{m} as m copies of x and x{0,n} as a
// chain of n rules `o_k ::= x o_k-1 | ""`, and a longer one is a counted rule
// (grammar.h): one frame that counts its repetitions on the stack (stack.h),
// so that neither the automaton nor its token masks grow with the bound
// (mask_cache.h). A counted rule only repeats what cannot match "" (else its
// count could run on without a byte): other long repetitions are written out.
#ifndef LLMSERVE_GRAMMAR_LOWER_H
#define LLMSERVE_GRAMMAR_LOWER_H

#include "grammar/grammar.h"
#include "grammar/parser.h"

#include <string_view>
#include <vector>

namespace llmserve::grammar {

// Parts of bounded repetitions up to this long are written out.
inline constexpr uint32_t kMaxUnrolled = 8;

// Throws GrammarError for a rule defined twice, an undefined rule, no rule
// "root", or more than kMaxElements elements. `text` is what `defs` was
// parsed from, for positions in messages.
Grammar lower(const std::vector<gbnf::RuleDef> &defs, std::string_view text);

// `grammar` with its counted rules written out as plain ones: the same
// sentences, in the rules a reader that knows no counting takes (the tests'
// Earley reference).
Grammar write_out_counted_rules(const Grammar &grammar);

} // namespace llmserve::grammar

#endif
