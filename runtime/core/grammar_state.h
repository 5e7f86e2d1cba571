// A request's structured output: where its output stands in the grammar
// (SamplingParams::grammar), and the mask of the tokens that may come next,
// kept in the step contract's form (one token_mask row).
#ifndef LLMSERVE_CORE_GRAMMAR_STATE_H
#define LLMSERVE_CORE_GRAMMAR_STATE_H

#include "grammar/matcher.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmserve {

class GrammarState {
public:
  explicit GrammarState(std::shared_ptr<const grammar::CompiledGrammar> grammar);

  // Advances over a sampled token and computes the next mask. Returns why
  // the output cannot go on within the grammar (the token is not allowed,
  // or nothing may follow it: a dead end), or "" when it can.
  std::string accept(int32_t token);

  // A stop token ended the grammar: the output is complete.
  bool finished() const { return matcher_.is_finished(); }
  // Nothing may come next (nor end the output).
  bool dead_end() const { return num_allowed_ == 0; }
  // The mask row of the next token: ceil(V/32) words.
  const std::vector<int32_t> &next_token_mask() const { return mask_; }

private:
  void fill_mask();

  grammar::Matcher matcher_;
  std::vector<int32_t> mask_;
  size_t num_allowed_ = 0;
};

} // namespace llmserve

#endif // LLMSERVE_CORE_GRAMMAR_STATE_H
