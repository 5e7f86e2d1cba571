// One request's position in a compiled grammar: the set of stack tops of the
// pushdown automaton after the text so far, with every earlier state kept
// for rollback (stacks are persistent, so that is cheap).
#ifndef LLMSERVE_GRAMMAR_MATCHER_H
#define LLMSERVE_GRAMMAR_MATCHER_H

#include "grammar/compiled_grammar.h"
#include "grammar/stack.h"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace llmserve::grammar {

// Not thread-safe: one thread at a time per matcher (fill_next_token_mask
// uses scratch space). Matching throws GrammarError where the grammar is too
// ambiguous (stack.h's bounds); the state is then unchanged.
class Matcher {
public:
  explicit Matcher(std::shared_ptr<const CompiledGrammar> grammar);
  Matcher(const Matcher &other);
  Matcher &operator=(const Matcher &other);

  // Writes vocabulary().mask_words() 32-bit words, bit (v % 32) of word
  // (v / 32) set when token v may come next. Returns the number of allowed
  // tokens (0: the grammar dead-ends, nothing may follow).
  size_t fill_next_token_mask(uint32_t *words) const;
  // Advances over token id; returns false (state unchanged) when the token is
  // not allowed. A stop token is allowed where the grammar may end, and
  // finishes the matcher.
  bool accept_token(int32_t id);
  // Advances over raw bytes (for tests, and text the server forces); false
  // (state unchanged) if they are not a valid continuation.
  bool accept_bytes(std::string_view bytes);
  // The text so far is a complete sentence of the grammar.
  bool can_end() const { return history_.back().can_end; }
  // A stop token was accepted.
  bool is_finished() const { return history_.back().finished; }

  // Tokens and byte strings accepted so far (a failed accept adds none).
  size_t accepted() const { return history_.size() - 1; }
  // Undoes the last n of them; n <= accepted().
  void rollback(size_t n);

  const CompiledGrammar &grammar() const { return *grammar_; }

private:
  struct State {
    std::vector<int32_t> tops;
    bool can_end = false;
    bool finished = false;
    size_t pool_size = 0; // the stack nodes the states up to this one use
  };

  // Advances `tops` over `bytes`; false when some byte has nothing to match.
  bool advance(std::vector<int32_t> &tops, std::string_view bytes, bool &can_end) const;
  // Whether the rest of a token matches from where its exit leaves `top`.
  bool exit_matches(int32_t top, const Exit &exit) const;

  std::shared_ptr<const CompiledGrammar> grammar_;
  mutable StackPool pool_; // exits checked in fill_next_token_mask add nodes, then drop them
  mutable Expander expander_;
  std::vector<State> history_;
  mutable std::vector<int32_t> scratch_tops_, exit_tops_;
  mutable std::vector<const PositionMask *> masks_, distinct_masks_; // per top, and without repeats
  mutable std::vector<uint8_t> exit_results_;
};

} // namespace llmserve::grammar

#endif
