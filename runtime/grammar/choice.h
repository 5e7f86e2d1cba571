// vLLM's `choice` structured output: the text is exactly one of the strings.
#ifndef LLMSERVE_GRAMMAR_CHOICE_H
#define LLMSERVE_GRAMMAR_CHOICE_H

#include "grammar/grammar.h" // GrammarError

#include <string>
#include <vector>

namespace llmserve::grammar {

// A grammar whose `root` accepts exactly the given strings (any UTF-8 text).
// Throws GrammarError when there are none or one is not valid UTF-8.
std::string choices_to_gbnf(const std::vector<std::string> &choices);

} // namespace llmserve::grammar

#endif
