// Gives each call of a rule that is not recursive its own copy of the rule
// (recursively, up to 4 * kMaxElements elements in all). A copy called from one place returns
// to one place, so the token mask cache can follow a token past the copy's
// end exactly (mask_cache.h): `ws` in the JSON grammar, called after "{",
// ":" and ",", is then followed by what follows it there.
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
