// Gives each call of a rule that is not recursive a copy of the rule for
// what follows the call (recursively, up to 4 * kMaxElements elements in
// all). A copy's frames then return to one place, or to places that continue
// alike (Automaton::single_return), so the token mask cache can follow a
// token past the copy's end exactly (mask_cache.h): `ws` in the JSON grammar,
// called after "{", ":" and ",", is then followed by what follows it there.
// Calls followed by the same elements in frames that continue alike share a
// copy: the two calls of `item` in `item ("," item)*` do, so that lists in
// lists do not double the grammar at each level.
#ifndef LLMSERVE_GRAMMAR_CALL_SITE_COPIES_H
#define LLMSERVE_GRAMMAR_CALL_SITE_COPIES_H

#include "grammar/grammar.h"

#include <vector>

namespace llmserve::grammar {

// The rules of `grammar` with copies added and calls redirected to them;
// root keeps its index.
std::vector<Rule> copy_rules_per_call_site(const Grammar &grammar);

} // namespace llmserve::grammar

#endif
