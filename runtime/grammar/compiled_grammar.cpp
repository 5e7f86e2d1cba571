#include "grammar/compiled_grammar.h"

namespace llmserve::grammar {

CompiledGrammar::CompiledGrammar(const Grammar &grammar, std::shared_ptr<const Vocabulary> vocabulary)
    : vocabulary_(std::move(vocabulary)), automaton_(grammar), mask_cache_(automaton_, *vocabulary_) {}

std::shared_ptr<const CompiledGrammar> compile(const Grammar &grammar,
                                               std::shared_ptr<const Vocabulary> vocabulary) {
  return std::make_shared<const CompiledGrammar>(grammar, std::move(vocabulary));
}

} // namespace llmserve::grammar
