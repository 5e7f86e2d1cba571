#include "grammar/stack.h"

namespace llmserve::grammar {

size_t StackPool::slot_of(const StackNode &node) const {
  uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(node.pos)) << 32 | static_cast<uint32_t>(node.parent);
  key = (key ^ node.count) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(key >> 32) & (slots_.size() - 1);
}

int32_t StackPool::get(int32_t pos, int32_t parent, uint32_t count) {
  const StackNode node{pos, parent, count};
  for (size_t s = slot_of(node);; s = (s + 1) & (slots_.size() - 1)) {
    int32_t id = slots_[s];
    if (id < 0) {
      id = static_cast<int32_t>(nodes_.size());
      nodes_.push_back(node);
      slots_[s] = id;
      if (nodes_.size() * 2 > slots_.size())
        rehash(slots_.size() * 2);
      return id;
    }
    const StackNode &n = nodes_[id];
    if (n.pos == pos && n.parent == parent && n.count == count)
      return id;
  }
}

void StackPool::truncate(size_t size) {
  while (nodes_.size() > size) {
    int32_t id = static_cast<int32_t>(nodes_.size() - 1);
    size_t s = slot_of(nodes_[id]);
    while (slots_[s] != id)
      s = (s + 1) & (slots_.size() - 1);
    slots_[s] = -1;
    nodes_.pop_back();
  }
}

void StackPool::rehash(size_t capacity) {
  // In id order, as if the nodes had been added to this table: truncate
  // relies on it.
  slots_.assign(capacity, -1);
  for (size_t id = 0; id < nodes_.size(); ++id) {
    size_t s = slot_of(nodes_[id]);
    while (slots_[s] >= 0)
      s = (s + 1) & (slots_.size() - 1);
    slots_[s] = static_cast<int32_t>(id);
  }
}

void Expander::begin_step() {
  if (++step_ == 0) { // wrapped: old marks could read as this step's
    seen_.assign(seen_.size(), 0);
    step_ = 1;
  }
  visits_ = 0;
}

bool Expander::first_visit(int32_t node) {
  if (static_cast<size_t>(node) >= seen_.size())
    seen_.resize(std::max(seen_.size() * 2, static_cast<size_t>(node) + 1024), 0);
  if (seen_[node] == step_)
    return false;
  seen_[node] = step_;
  if (++visits_ > kMaxStepNodes)
    throw GrammarError("the grammar is too ambiguous: one step of matching visits over " +
                       std::to_string(kMaxStepNodes) + " stack nodes");
  return true;
}

} // namespace llmserve::grammar
