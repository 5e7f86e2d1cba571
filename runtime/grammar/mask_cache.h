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
// returns to one place only, or to places that continue alike
// (call_site_copies.h, Automaton::single_return), is no exit: matching goes
// on there, the stack below it still unknown. And an exit's bytes must be
// matchable by something that can follow the rule somewhere in the grammar
// (its return sites, to any depth), or the exit is dropped.
// A state's mask is then the union of its tops' accepted sets, plus the
// uncertain tokens with an exit that the real stack matches (matcher.h).
//
// A counted repetition x{m,n} (lower.h) is one frame whose count says how
// many repetitions may still follow, which matters only near the bound: a
// token's path ends a repetition at most once per x's fewest bytes, so every
// count that leaves more repetitions than a token can end acts alike. A
// position that returns into a counted frame through single return sites (x,
// the rules x calls) thus has a mask per number left, from 0 to that cap,
// which stands for every larger one, and the matcher reads the count off the
// stack; a counted frame further down is an exit. With fewer left, only the
// tokens whose paths went far enough to find the count spent are matched
// again.
#ifndef LLMSERVE_GRAMMAR_MASK_CACHE_H
#define LLMSERVE_GRAMMAR_MASK_CACHE_H

#include "grammar/automaton.h"
#include "grammar/stack.h"
#include "grammar/token_set.h"
#include "grammar/vocabulary.h"

#include <algorithm>
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

  // The mask of a stack top (at a Bytes position) of `pool`.
  const PositionMask &at(const StackPool &pool, int32_t top) const {
    const Slot &slot = slots_[pool[top].pos];
    uint32_t left = 0;
    if (slot.depth >= 0) {
      int32_t frame = top;
      for (int32_t i = 0; i < slot.depth; ++i)
        frame = pool[frame].parent;
      left = std::min(slot.max - pool[frame].count, slot.cap);
    }
    return masks_[index_[slot.first + left]];
  }
  // Bytes positions, the masks classified for them (one each, or one per
  // count left), and the distinct masks among those.
  size_t positions() const { return positions_; }
  size_t classified() const { return index_.size(); }
  size_t distinct_masks() const { return masks_.size(); }
  size_t uncertain_tokens() const;
  size_t memory_bytes() const;

private:
  struct Slot {
    int32_t first = -1; // into index_: the mask, or with 0 repetitions left, then 1, ...
    int32_t depth = -1; // nodes from a top here down to the counted frame, or -1
    uint32_t max = 0;   // that frame's rule's
    uint32_t cap = 0;   // counts left past it share its mask
  };

  std::vector<Slot> slots_; // per position
  std::vector<int32_t> index_;
  std::vector<PositionMask> masks_;
  size_t positions_ = 0;
};

} // namespace llmserve::grammar

#endif
