// The persistent stack of the pushdown automaton. A node is a position and
// the node below it, and in a counted rule's frame the repetitions begun;
// nodes are hash-consed, so equal stacks are one node, a state is a small set
// of top nodes, and pushing, popping and keeping old states (rollback) cost
// nothing.
#ifndef LLMSERVE_GRAMMAR_STACK_H
#define LLMSERVE_GRAMMAR_STACK_H

#include "grammar/automaton.h"
#include "grammar/grammar.h"

#include <cstdint>
#include <vector>

namespace llmserve::grammar {

// Bounds on ambiguity: stack tops in one state, and nodes one step visits
// (a grammar can call exponentially many ways before matching a byte).
inline constexpr size_t kMaxStackTops = 2048;
inline constexpr size_t kMaxStepNodes = 1 << 16;

// The count of a frame whose count the mask cache leaves open: its Loop both
// repeats and ends.
inline constexpr uint32_t kAnyCount = UINT32_MAX;

struct StackNode {
  int32_t pos;
  int32_t parent; // -1: the bottom
  uint32_t count; // in a counted rule's frame: the repetitions begun; else 0
};

class StackPool {
public:
  StackPool() { rehash(64); }
  // The node for (pos, parent, count), made if new.
  int32_t get(int32_t pos, int32_t parent, uint32_t count = 0);
  const StackNode &operator[](int32_t id) const { return nodes_[id]; }
  size_t size() const { return nodes_.size(); }
  // Forgets the nodes made since size() was `size`.
  void truncate(size_t size);

private:
  size_t slot_of(const StackNode &node) const;
  void rehash(size_t capacity);

  std::vector<StackNode> nodes_;
  // Open addressing over node ids (-1: empty). Nodes are forgotten newest
  // first, which leaves the table as it was before they were added.
  std::vector<int32_t> slots_;
};

// Expands nodes into the tops of a state: follows calls (a tail call
// replaces the caller's frame, so right recursion keeps the stack flat), the
// ends of frames and the Loops of counted ones, until each path waits on a
// byte.
class Expander {
public:
  Expander(const Automaton &automaton, StackPool &pool) : automaton_(&automaton), pool_(&pool) {}

  // Starts a step: nodes seen since are not expanded twice, so tops from
  // several nodes merge.
  void begin_step();
  // Adds the tops reachable from `node` to `tops`. When a frame ends on the
  // bottom (-1) or on a node at a position past the automaton's (the mask
  // cache marks the unknown rest of a stack so), calls `bottom(node below,
  // push)` instead, where push(n) expands n too. Throws GrammarError beyond
  // kMaxStepNodes or kMaxStackTops.
  template <typename Bottom>
  void expand(int32_t node, std::vector<int32_t> &tops, Bottom &&bottom);
  // Nodes visited since begin_step.
  size_t visits() const { return visits_; }

private:
  bool first_visit(int32_t node);

  const Automaton *automaton_;
  StackPool *pool_;
  std::vector<uint32_t> seen_; // per node: the step that saw it
  uint32_t step_ = 0;
  size_t visits_ = 0;
  std::vector<int32_t> work_;
};

template <typename Bottom>
void Expander::expand(int32_t start, std::vector<int32_t> &tops, Bottom &&bottom) {
  const int32_t end_of_positions = static_cast<int32_t>(automaton_->positions.size());
  auto push = [&](int32_t n) { work_.push_back(n); };
  work_.push_back(start);
  while (!work_.empty()) {
    int32_t id = work_.back();
    work_.pop_back();
    if (!first_visit(id))
      continue;
    const StackNode node = (*pool_)[id];
    const Automaton::Position &p = automaton_->positions[node.pos];
    switch (p.kind) {
    case Automaton::Bytes:
      if (tops.size() >= kMaxStackTops)
        throw GrammarError("the grammar is too ambiguous: over " + std::to_string(kMaxStackTops) +
                           " ways to parse the text at once");
      tops.push_back(id);
      break;
    case Automaton::Call: {
      int32_t ret = automaton_->is_tail(node.pos) ? node.parent
                                                  : pool_->get(node.pos + 1, node.parent, node.count);
      for (int32_t s : automaton_->starts[p.arg])
        work_.push_back(pool_->get(s, ret));
      break;
    }
    case Automaton::Loop: {
      const Automaton::Count &count = automaton_->counts[p.rule];
      const bool any = node.count == kAnyCount;
      if (any || node.count < count.max)
        work_.push_back(pool_->get(p.arg, node.parent, any ? kAnyCount : node.count + 1));
      if (!any && node.count < count.min)
        break;
      [[fallthrough]]; // the frame may end
    }
    case Automaton::End:
      if (node.parent >= 0 && (*pool_)[node.parent].pos < end_of_positions)
        work_.push_back(node.parent);
      else
        bottom(node.parent, push);
      break;
    }
  }
}

} // namespace llmserve::grammar

#endif
