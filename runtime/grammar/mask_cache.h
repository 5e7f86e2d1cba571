// The adaptive token mask cache (xgrammar's idea). For each position that can
// be a stack top, every token is classified once, at compile time, by
// matching its bytes from the position while the stack below the position's
// frame is unknown:
//  - accepted: some path matches all its bytes without the stack below, so
//    it is allowed whatever the stack holds;
//  - uncertain: no such path, but one reaches the end of the frame with bytes
//    left over (an "exit"), which only the stack below can decide;
//  - rejected: otherwise.
// Two refinements keep uncertain tokens few. The end of a frame whose rule
// returns to one place only (call_site_copies.h) is no exit: matching goes on
// there, the stack below it still unknown. And an exit's bytes must be
// matchable by something that can follow the rule somewhere in the grammar
// (its return sites, to any depth), or the exit is dropped.
// A state's mask is then the union of its tops' accepted sets, plus the
// uncertain tokens with an exit that the real stack matches (matcher.h).
#ifndef LLMSERVE_GRAMMAR_MASK_CACHE_H
#define LLMSERVE_GRAMMAR_MASK_CACHE_H

#include "grammar/automaton.h"
#include "grammar/token_set.h"
#include "grammar/vocabulary.h"

#include <string>
#include <vector>

namespace llmserve::grammar {

struct Exit {
  // The frame that ends sits on the stack node depth + 1 below the top; the
  // rest of the token must match from there.
  int32_t depth;
  std::string suffix;
  bool operator==(const Exit &o) const { return depth == o.depth && suffix == o.suffix; }
};

struct PositionMask {
  TokenSet accepted;
  std::vector<int32_t> uncertain;   // ascending
  std::vector<uint32_t> exit_begin; // uncertain.size() + 1 offsets into exit_ids
  std::vector<uint32_t> exit_ids;   // into exits
  std::vector<Exit> exits;
  bool operator==(const PositionMask &o) const {
    return accepted == o.accepted && uncertain == o.uncertain && exit_begin == o.exit_begin &&
           exit_ids == o.exit_ids && exits == o.exits;
  }
};

class MaskCache {
public:
  // Throws GrammarError when the grammar is too complex to classify.
  MaskCache(const Automaton &automaton, const Vocabulary &vocabulary);

  // For a Bytes position.
  const PositionMask &at(int32_t pos) const { return masks_[index_[pos]]; }
  // Bytes positions, and the distinct masks they share (positions deep in
  // a long repetition have equal ones).
  size_t positions() const { return positions_; }
  size_t distinct_masks() const { return masks_.size(); }
  size_t uncertain_tokens() const;
  size_t memory_bytes() const;

private:
  std::vector<int32_t> index_; // per position: into masks_, or -1
  std::vector<PositionMask> masks_;
  size_t positions_ = 0;
};

} // namespace llmserve::grammar

#endif
