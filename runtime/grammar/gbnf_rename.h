// Rule names of GBNF text with a prefix, so that grammars made apart (one per
// tool's JSON schema) can be joined into one without their rules clashing.
#ifndef LLMSERVE_GRAMMAR_GBNF_RENAME_H
#define LLMSERVE_GRAMMAR_GBNF_RENAME_H

#include <string>
#include <string_view>

namespace llmserve::grammar {

// `gbnf` with `prefix` before every rule name, where rules are defined and
// where they are referred to; literals, character classes and comments are
// left as they are. `prefix` must itself be a valid start of a rule name
// ([a-zA-Z0-9-]).
std::string gbnf_with_rule_prefix(std::string_view gbnf, std::string_view prefix);

} // namespace llmserve::grammar

#endif // LLMSERVE_GRAMMAR_GBNF_RENAME_H
