// Properties of a grammar's rules, and the checks and clean-up Grammar::parse
// applies to the rules lowered from the text.
#ifndef LLMSERVE_GRAMMAR_RULE_ANALYSIS_H
#define LLMSERVE_GRAMMAR_RULE_ANALYSIS_H

#include "grammar/grammar.h"

#include <vector>

namespace llmserve::grammar {

// Per rule: whether it matches the empty string.
std::vector<bool> nullable_rules(const std::vector<Rule> &rules);

// Per rule: the fewest bytes it matches (at most UINT32_MAX - 1), or
// UINT32_MAX when it can never complete.
std::vector<uint32_t> min_lengths(const std::vector<Rule> &rules);

// Component ids of a directed graph's strongly connected components.
std::vector<int32_t> strongly_connected_components(const std::vector<std::vector<int32_t>> &edges);

// Throws GrammarError naming a rule that can call itself again before matching
// a byte, unless every such call is a tail call (the last element of its
// alternative): a matcher's stack would grow without end, while tail calls
// replace the caller's frame.
void reject_left_recursion(const Grammar &grammar);

// Without the alternatives that can never complete (an empty character
// class, a rule that only ever recurses) and the rules root cannot reach.
// Throws GrammarError when root itself can never complete.
Grammar prune(const Grammar &grammar);

} // namespace llmserve::grammar

#endif
