#include "grammar/choice.h"

#include "grammar/gbnf_text.h"

namespace llmserve::grammar {

std::string choices_to_gbnf(const std::vector<std::string> &choices) {
  if (choices.empty())
    throw GrammarError("choice: the list of choices is empty");
  std::vector<std::string> literals;
  for (size_t i = 0; i < choices.size(); ++i) {
    try {
      literals.push_back(gbnf_literal(choices[i]));
    } catch (const GrammarError &) {
      throw GrammarError("choice: choice " + std::to_string(i) + " is not valid UTF-8");
    }
  }
  return "root ::= " + gbnf_alternatives(literals) + "\n";
}

} // namespace llmserve::grammar
