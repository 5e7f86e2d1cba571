// A grammar compiled against one vocabulary: the pushdown automaton and its
// token mask cache (mask_cache.h). Immutable, so one is shared by every
// request with the same grammar and used from many threads at once.
#ifndef LLMSERVE_GRAMMAR_COMPILED_GRAMMAR_H
#define LLMSERVE_GRAMMAR_COMPILED_GRAMMAR_H

#include "grammar/automaton.h"
#include "grammar/grammar.h"
#include "grammar/mask_cache.h"
#include "grammar/vocabulary.h"

#include <memory>

namespace llmserve::grammar {

class CompiledGrammar {
public:
  // Throws GrammarError when the grammar is too complex to compile.
  CompiledGrammar(const Grammar &grammar, std::shared_ptr<const Vocabulary> vocabulary);

  const Vocabulary &vocabulary() const { return *vocabulary_; }
  const Automaton &automaton() const { return automaton_; }
  const MaskCache &mask_cache() const { return mask_cache_; }

private:
  std::shared_ptr<const Vocabulary> vocabulary_;
  Automaton automaton_;
  MaskCache mask_cache_;
};

std::shared_ptr<const CompiledGrammar> compile(const Grammar &grammar,
                                               std::shared_ptr<const Vocabulary> vocabulary);

} // namespace llmserve::grammar

#endif
