// The rules laid out flat for matching: each alternative's elements, then an
// End, so that a position is one int and the next element is position + 1. A
// counted rule is its element then a Loop, where its frame starts: each time
// the frame is there it may repeat the element or end, as its count says
// (stack.h).
#ifndef LLMSERVE_GRAMMAR_AUTOMATON_H
#define LLMSERVE_GRAMMAR_AUTOMATON_H

#include "grammar/grammar.h"

#include <cstdint>
#include <vector>

namespace llmserve::grammar {

// Return sites listed per rule; beyond this a rule's frame may return to
// "anywhere" (ReturnSites::unknown).
inline constexpr size_t kMaxReturnSites = 256;

struct Automaton {
  enum Kind : uint8_t { Bytes, Call, End, Loop };
  struct Position {
    Kind kind;
    int32_t arg;  // Bytes: index into byte_sets; Call: the rule called; Loop: the element's position
    int32_t rule; // the rule the position is in
  };
  // Per rule: a counted one's bounds (grammar.h), and the fewest bytes one
  // repetition matches; max 0 for other rules.
  struct Count {
    uint32_t min = 0, max = 0, unit_length = 0;
  };
  // Where a frame of a rule can return to: the positions after its non-tail
  // calls, and those of the rules that tail-call it (a tail call returns
  // where its caller would have).
  struct ReturnSites {
    std::vector<int32_t> sites; // sorted
    bool bottom = false;        // it can be the bottom frame (root's)
    bool unknown = false;       // over kMaxReturnSites: sites is empty
  };

  // With common prefixes of alternatives factored out (common_prefixes.h),
  // then a copy of each non-recursive rule per call site (call_site_copies.h).
  explicit Automaton(const Grammar &grammar);

  bool is_tail(int32_t pos) const { return positions[pos + 1].kind == End; }
  const ByteSet &bytes(int32_t pos) const { return byte_sets[positions[pos].arg]; }
  bool counted(int32_t rule) const { return counts[rule].max > 0; }
  // The place a frame of the rule returns to, standing for all where there
  // are several that continue alike: the same positions to the ends of
  // their alternatives, in frames that continue alike in turn. -1 where
  // frames of the rule may continue apart.
  int32_t single_return(int32_t rule) const { return single_returns_[rule]; }

  std::vector<Position> positions;
  std::vector<std::vector<int32_t>> starts; // per rule: where its alternatives start
  std::vector<ByteSet> byte_sets;
  std::vector<ReturnSites> returns;         // per rule
  std::vector<Count> counts;                // per rule
  int32_t root = 0;

private:
  std::vector<int32_t> single_returns_; // per rule
};

} // namespace llmserve::grammar

#endif
