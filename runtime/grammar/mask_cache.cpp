#include "grammar/mask_cache.h"

#include "grammar/stack.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace llmserve::grammar {
namespace {

// Cached matching states before they are dropped between positions, and the
// most one position may build.
constexpr size_t kStatesKept = 1 << 15;
constexpr size_t kMaxStates = 1 << 18;
// Work (tokens visited, bytes stepped, stack nodes visited) a compile may
// take: about 1.5 s at 151k tokens. Each position walks the vocabulary, so
// long bounded repetitions ({0,1000} of a character class) reach it.
constexpr size_t kMaxWork = size_t{1} << 36;

// Matches tokens from positions with the rest of the stack unknown. The
// unknown rest is a sentinel node (at a position past the automaton's, so
// the Expander hands its pops back here). Exact sentinels stand for the real
// stack node depth + 1 below the top; an approximate one for "some return
// site", tagged with the exit it came from.
//
// Matching states are determinized lazily, as regex engines do (a DFA
// state is a set of stack tops), so walking the vocabulary's tokens in byte
// order costs a table lookup per trie node.
class Classifier {
public:
  Classifier(const Automaton &automaton, const Vocabulary &vocabulary)
      : automaton_(automaton), vocabulary_(vocabulary), expander_(automaton, pool_) {
    // Bytes no byte set tells apart share a class, and so a transition.
    std::fill(std::begin(byte_class_), std::end(byte_class_), 0);
    classes_ = 1;
    for (const ByteSet &set : automaton.byte_sets) {
      std::map<std::pair<int, bool>, int> refined;
      for (int b = 0; b < 256; ++b)
        byte_class_[b] = refined.emplace(std::make_pair(byte_class_[b], set.test(b)),
                                         static_cast<int>(refined.size()))
                             .first->second;
      classes_ = static_cast<int>(refined.size());
    }
  }

  PositionMask classify(int32_t pos) {
    if (states_.size() > kStatesKept)
      reset();
    State start;
    start.tops = {node(pos, sentinel(automaton_.positions[pos].rule, 0, -1))};
    start.exact = true;
    std::vector<int32_t> path = {intern(std::move(start))}; // states by depth

    std::vector<int32_t> accepted;
    std::vector<std::pair<int32_t, std::vector<uint32_t>>> uncertain; // id, exits
    std::map<std::pair<int32_t, std::string>, uint32_t> exit_index;
    PositionMask mask;
    const ByteSet &first = automaton_.bytes(pos);
    for (int b = 0; b < 256; ++b) {
      if (!first.test(b))
        continue;
      size_t dead_at = SIZE_MAX; // depth at which the last token's path died
      for (size_t i = vocabulary_.first_with(b); i < vocabulary_.end_with(b); ++i) {
        const std::string_view bytes = vocabulary_.sorted_bytes(i);
        size_t shared = i == vocabulary_.first_with(b) ? 0 : vocabulary_.shared_prefix(i);
        charge(1);
        if (shared >= dead_at)
          continue; // its prefix died already
        dead_at = SIZE_MAX;
        path.resize(bytes.size() + 1);
        charge(bytes.size() - shared);
        for (size_t j = shared; j < bytes.size(); ++j) {
          path[j + 1] = step(path[j], static_cast<uint8_t>(bytes[j]));
          if (path[j + 1] == kDead) {
            dead_at = j + 1;
            break;
          }
        }
        if (dead_at != SIZE_MAX)
          continue;
        const int32_t id = vocabulary_.sorted()[i];
        const State &end = states_[path[bytes.size()]];
        if (end.exact) {
          accepted.push_back(id);
          continue;
        }
        std::vector<uint32_t> exits;
        for (int32_t tag : end.exits) {
          auto [depth, offset] = tags_[tag];
          auto key = std::make_pair(depth, std::string(bytes.substr(offset)));
          auto [it, inserted] = exit_index.emplace(key, static_cast<uint32_t>(mask.exits.size()));
          if (inserted)
            mask.exits.push_back({depth, std::move(key.second)});
          exits.push_back(it->second);
        }
        uncertain.emplace_back(id, std::move(exits));
      }
    }
    mask.accepted = TokenSet(accepted, vocabulary_.size());
    std::sort(uncertain.begin(), uncertain.end());
    mask.exit_begin.push_back(0);
    for (auto &[id, exits] : uncertain) {
      mask.uncertain.push_back(id);
      mask.exit_ids.insert(mask.exit_ids.end(), exits.begin(), exits.end());
      mask.exit_begin.push_back(static_cast<uint32_t>(mask.exit_ids.size()));
    }
    return mask;
  }

private:
  static constexpr int32_t kDead = -1, kUnknown = -2;

  struct Sentinel {
    int32_t rule, depth, exit; // exit -1: exact, else the tag of the exit
  };
  struct State {
    int32_t depth = 0;
    bool exact = false;          // an exact path is live after the last byte
    std::vector<int32_t> tops;   // sorted
    std::vector<int32_t> exits;  // exit tags live after the last byte, sorted
    std::vector<int32_t> sticky; // exit tags with unknown return sites: live whatever follows
    std::vector<int32_t> next;   // per byte class: a state, kDead or kUnknown
  };

  void charge(size_t work) {
    work_ += work;
    if (work_ > kMaxWork)
      throw GrammarError("the grammar is too large to compile against a vocabulary of " +
                         std::to_string(vocabulary_.size()) +
                         " tokens (long bounded repetitions, {m,n} with a large n, are the usual cause)");
  }

  void reset() {
    pool_ = StackPool();
    node_exit_.clear();
    sentinels_.clear();
    sentinel_nodes_.clear();
    states_.clear();
    state_index_.clear();
  }

  int32_t end_of_positions() const { return static_cast<int32_t>(automaton_.positions.size()); }

  int32_t node(int32_t pos, int32_t parent) { return pool_.get(pos, parent); }

  // -1 when the node's stack ends in an exact sentinel, else the tag of the
  // exit its approximate one came from.
  int32_t exit_of(int32_t id) {
    // A node is made after the one below it, so ids in order see them first.
    for (size_t n = node_exit_.size(); n < pool_.size(); ++n) {
      const StackNode &node = pool_[static_cast<int32_t>(n)];
      node_exit_.push_back(node.pos >= end_of_positions() ? sentinels_[node.pos - end_of_positions()].exit
                                                          : node_exit_[node.parent]);
    }
    return node_exit_[id];
  }

  int32_t sentinel(int32_t rule, int32_t depth, int32_t exit) {
    auto [it, inserted] = sentinel_nodes_.emplace(std::make_tuple(rule, depth, exit), 0);
    if (inserted) {
      it->second = pool_.get(end_of_positions() + static_cast<int32_t>(sentinels_.size()), -1);
      sentinels_.push_back({rule, depth, exit});
    }
    return it->second;
  }

  int32_t exit_tag(int32_t depth, int32_t offset) {
    auto [it, inserted] = tag_index_.emplace(std::make_pair(depth, offset), static_cast<int32_t>(tags_.size()));
    if (inserted)
      tags_.push_back({depth, offset});
    return it->second;
  }

  int32_t step(int32_t from, uint8_t byte) {
    const int cls = byte_class_[byte];
    if (states_[from].next[cls] != kUnknown)
      return states_[from].next[cls];
    const std::vector<int32_t> tops = states_[from].tops;
    State next;
    next.depth = states_[from].depth + 1;
    next.sticky = states_[from].sticky;
    auto bottom = [&](int32_t below, auto &&push) {
      const Sentinel s = sentinels_[pool_[below].pos - end_of_positions()];
      const Automaton::ReturnSites &returns = automaton_.returns[s.rule];
      int32_t tag = s.exit;
      if (tag < 0) {
        if (!returns.unknown && !returns.bottom && returns.sites.size() == 1) {
          int32_t site = returns.sites[0];
          push(node(site, sentinel(automaton_.positions[site].rule, s.depth + 1, -1)));
          return;
        }
        tag = exit_tag(s.depth, next.depth);
      }
      if (returns.unknown)
        next.sticky.push_back(tag);
      for (int32_t site : returns.sites)
        push(node(site, sentinel(automaton_.positions[site].rule, 0, tag)));
    };
    expander_.begin_step();
    for (int32_t top : tops) {
      const StackNode t = pool_[top];
      if (!automaton_.bytes(t.pos).test(byte))
        continue;
      int32_t advanced = node(t.pos + 1, t.parent);
      if (exit_of(advanced) < 0)
        next.exact = true;
      else
        next.exits.push_back(exit_of(advanced));
      expander_.expand(advanced, next.tops, bottom);
    }
    charge(16 * (expander_.visits() + 1));
    for (auto *v : {&next.tops, &next.sticky}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    next.exits.insert(next.exits.end(), next.sticky.begin(), next.sticky.end());
    std::sort(next.exits.begin(), next.exits.end());
    next.exits.erase(std::unique(next.exits.begin(), next.exits.end()), next.exits.end());
    int32_t to = !next.exact && next.exits.empty() ? kDead : intern(std::move(next));
    states_[from].next[cls] = to;
    return to;
  }

  int32_t intern(State state) {
    std::string key;
    auto append = [&](const std::vector<int32_t> &v) {
      key.append(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(int32_t));
      key.push_back('|');
    };
    key.append(reinterpret_cast<const char *>(&state.depth), sizeof state.depth);
    key.push_back(state.exact ? '1' : '0');
    append(state.tops);
    append(state.exits);
    append(state.sticky);
    auto [it, inserted] = state_index_.emplace(std::move(key), static_cast<int32_t>(states_.size()));
    if (inserted) {
      if (states_.size() >= kMaxStates)
        throw GrammarError("the grammar is too complex to compile against a vocabulary of " +
                           std::to_string(vocabulary_.size()) + " tokens");
      state.next.assign(classes_, kUnknown);
      states_.push_back(std::move(state));
    }
    return it->second;
  }

  const Automaton &automaton_;
  const Vocabulary &vocabulary_;
  StackPool pool_;
  Expander expander_;
  std::vector<int32_t> node_exit_; // exit_of, per node
  std::vector<Sentinel> sentinels_;
  std::map<std::tuple<int32_t, int32_t, int32_t>, int32_t> sentinel_nodes_;
  std::vector<std::pair<int32_t, int32_t>> tags_; // exit tag: depth, bytes matched before it
  std::map<std::pair<int32_t, int32_t>, int32_t> tag_index_;
  std::vector<State> states_;
  std::unordered_map<std::string, int32_t> state_index_;
  int byte_class_[256];
  int classes_ = 1;
  size_t work_ = 0;
};

} // namespace

MaskCache::MaskCache(const Automaton &automaton, const Vocabulary &vocabulary)
    : index_(automaton.positions.size(), -1) {
  Classifier classifier(automaton, vocabulary);
  std::unordered_multimap<uint64_t, int32_t> by_hash;
  for (size_t pos = 0; pos < automaton.positions.size(); ++pos) {
    if (automaton.positions[pos].kind != Automaton::Bytes)
      continue;
    ++positions_;
    PositionMask mask = classifier.classify(static_cast<int32_t>(pos));
    uint64_t hash = mask.accepted.hash() ^ mask.uncertain.size() ^ mask.exits.size() << 32;
    auto [first, last] = by_hash.equal_range(hash);
    auto same = std::find_if(first, last, [&](const auto &entry) { return masks_[entry.second] == mask; });
    if (same != last) {
      index_[pos] = same->second;
    } else {
      index_[pos] = static_cast<int32_t>(masks_.size());
      by_hash.emplace(hash, index_[pos]);
      masks_.push_back(std::move(mask));
    }
  }
}

size_t MaskCache::uncertain_tokens() const {
  size_t n = 0;
  for (const auto &m : masks_)
    n += m.uncertain.size();
  return n;
}

size_t MaskCache::memory_bytes() const {
  size_t n = index_.size() * sizeof(int32_t);
  for (const auto &m : masks_) {
    n += sizeof m + m.accepted.memory_bytes() + m.uncertain.size() * 4 + m.exit_begin.size() * 4 +
         m.exit_ids.size() * 4;
    for (const Exit &e : m.exits)
      n += sizeof e + e.suffix.size();
  }
  return n;
}

} // namespace llmserve::grammar
