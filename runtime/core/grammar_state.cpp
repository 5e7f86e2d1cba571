#include "core/grammar_state.h"

#include "grammar/compiled_grammar.h"
#include "grammar/vocabulary.h"

#include <string>

namespace llmserve {

GrammarState::GrammarState(std::shared_ptr<const grammar::CompiledGrammar> grammar)
    : matcher_(std::move(grammar)),
      mask_(matcher_.grammar().vocabulary().mask_words()) {
  fill_mask();
}

std::string GrammarState::accept(int32_t token) {
  if (!matcher_.accept_token(token))
    return "structured output: token " + std::to_string(token) +
           " was sampled but the grammar does not allow it";
  if (matcher_.is_finished())
    return "";
  fill_mask();
  if (dead_end())
    return "structured output: the grammar allows no token after the " +
           std::to_string(matcher_.accepted()) + " generated so far (a dead end)";
  return "";
}

void GrammarState::fill_mask() {
  // int32_t and uint32_t words may alias: the contract's words are bits.
  num_allowed_ = matcher_.fill_next_token_mask(reinterpret_cast<uint32_t *>(mask_.data()));
}

} // namespace llmserve
