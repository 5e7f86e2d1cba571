#include "grammar/matcher.h"

#include <algorithm>

namespace llmserve::grammar {
namespace {

// Drops the stack nodes made after it was created, unless kept.
class PoolMark {
public:
  explicit PoolMark(StackPool &pool) : pool_(pool), size_(pool.size()) {}
  ~PoolMark() {
    if (!kept_)
      pool_.truncate(size_);
  }
  void keep() { kept_ = true; }

private:
  StackPool &pool_;
  size_t size_;
  bool kept_ = false;
};

} // namespace

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), expander_(grammar_->automaton(), pool_) {
  // The start: a call of root on an empty stack.
  State start;
  expander_.begin_step();
  for (int32_t s : grammar_->automaton().starts[grammar_->automaton().root])
    expander_.expand(pool_.get(s, -1), start.tops, [&](int32_t, auto &&) { start.can_end = true; });
  start.pool_size = pool_.size();
  history_.push_back(std::move(start));
}

Matcher::Matcher(const Matcher &other)
    : grammar_(other.grammar_), pool_(other.pool_), expander_(grammar_->automaton(), pool_),
      history_(other.history_) {}

Matcher &Matcher::operator=(const Matcher &other) {
  if (this != &other) {
    grammar_ = other.grammar_;
    pool_ = other.pool_;
    expander_ = Expander(grammar_->automaton(), pool_);
    history_ = other.history_;
  }
  return *this;
}

bool Matcher::advance(std::vector<int32_t> &tops, std::string_view bytes, bool &can_end) const {
  const Automaton &automaton = grammar_->automaton();
  for (char c : bytes) {
    const auto byte = static_cast<uint8_t>(c);
    scratch_tops_.clear();
    can_end = false;
    expander_.begin_step();
    for (int32_t top : tops) {
      const StackNode t = pool_[top];
      if (automaton.bytes(t.pos).test(byte))
        expander_.expand(pool_.get(t.pos + 1, t.parent, t.count), scratch_tops_,
                         [&](int32_t, auto &&) { can_end = true; });
    }
    tops.swap(scratch_tops_);
    if (tops.empty() && !can_end)
      return false;
  }
  return true;
}

bool Matcher::accept_bytes(std::string_view bytes) {
  if (is_finished())
    return false;
  PoolMark mark(pool_);
  State next{history_.back().tops, history_.back().can_end, false, 0};
  if (!advance(next.tops, bytes, next.can_end))
    return false;
  std::sort(next.tops.begin(), next.tops.end());
  next.pool_size = pool_.size();
  history_.push_back(std::move(next));
  mark.keep();
  return true;
}

bool Matcher::accept_token(int32_t id) {
  const Vocabulary &vocabulary = grammar_->vocabulary();
  if (id < 0 || static_cast<size_t>(id) >= vocabulary.size() || is_finished())
    return false;
  if (vocabulary.is_stop(id)) {
    if (!can_end())
      return false;
    history_.push_back({{}, true, true, pool_.size()});
    return true;
  }
  const std::string &bytes = vocabulary.token_bytes(id);
  return !bytes.empty() && accept_bytes(bytes);
}

void Matcher::rollback(size_t n) {
  if (n > accepted())
    throw std::out_of_range("rollback of " + std::to_string(n) + " with " +
                            std::to_string(accepted()) + " accepted");
  history_.resize(history_.size() - n);
  pool_.truncate(history_.back().pool_size);
}

bool Matcher::exit_matches(int32_t top, const Exit &exit) const {
  int32_t below = top;
  for (int32_t i = 0; i <= exit.depth; ++i)
    below = pool_[below].parent;
  if (below < 0)
    return false; // the frame that ended was the bottom one: nothing follows
  exit_tops_.clear();
  bool can_end = false;
  expander_.begin_step();
  expander_.expand(below, exit_tops_, [&](int32_t, auto &&) { can_end = true; });
  return advance(exit_tops_, exit.suffix, can_end);
}

size_t Matcher::fill_next_token_mask(uint32_t *words) const {
  const Vocabulary &vocabulary = grammar_->vocabulary();
  const MaskCache &cache = grammar_->mask_cache();
  std::fill(words, words + vocabulary.mask_words(), 0u);
  const State &state = history_.back();
  if (state.finished)
    return 0;
  PoolMark mark(pool_);

  masks_.clear();
  for (int32_t top : state.tops)
    masks_.push_back(&cache.at(pool_, top));
  distinct_masks_ = masks_;
  std::sort(distinct_masks_.begin(), distinct_masks_.end());
  distinct_masks_.erase(std::unique(distinct_masks_.begin(), distinct_masks_.end()), distinct_masks_.end());
  for (const PositionMask *mask : distinct_masks_)
    mask->accepted.add_to(words);

  for (size_t t = 0; t < state.tops.size(); ++t) {
    const int32_t top = state.tops[t];
    const PositionMask &mask = *masks_[t];
    if (mask.uncertain.empty())
      continue;
    exit_results_.assign(mask.exits.size(), 0); // 0 unknown, 1 matches, 2 does not
    for (size_t i = 0; i < mask.uncertain.size(); ++i) {
      const int32_t id = mask.uncertain[i];
      if (words[id / 32] >> (id % 32) & 1)
        continue;
      for (uint32_t k = mask.exit_begin[i]; k < mask.exit_begin[i + 1]; ++k) {
        uint8_t &result = exit_results_[mask.exit_ids[k]];
        if (result == 0)
          result = exit_matches(top, mask.exits[mask.exit_ids[k]]) ? 1 : 2;
        if (result == 1) {
          words[id / 32] |= 1u << (id % 32);
          break;
        }
      }
    }
  }
  if (state.can_end)
    for (int32_t id : vocabulary.stop_tokens())
      words[id / 32] |= 1u << (id % 32);

  size_t allowed = 0;
  for (size_t w = 0; w < vocabulary.mask_words(); ++w)
    allowed += static_cast<size_t>(__builtin_popcount(words[w]));
  return allowed;
}

} // namespace llmserve::grammar
