// Alternatives of a rule that start alike share their start:
// `a ::= "ab" | "ac"` becomes `a ::= "a" a_1` with `a_1 ::= "b" | "c"`, and so
// on down. A choice of many literals then matches as a trie: a state holds a
// stack top per distinct next byte, not one per literal.
#ifndef LLMSERVE_GRAMMAR_COMMON_PREFIXES_H
#define LLMSERVE_GRAMMAR_COMMON_PREFIXES_H

#include "grammar/grammar.h"

namespace llmserve::grammar {

Grammar factor_common_prefixes(const Grammar &grammar);

} // namespace llmserve::grammar

#endif
