#include "grammar/mask_cache.h"

#include "grammar/stack.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>
#include <unordered_map>

namespace llmserve::grammar {
namespace {

// Cached matching states before they are dropped between positions, and the
// most one position may build.
constexpr size_t kStatesKept = 1 << 15;
constexpr size_t kMaxStates = 1 << 18;
// Work (tokens walked, bytes stepped, stack nodes visited, mask words and
// tokens stored) a compile may take: about 1.5 s. Each position walks the
// vocabulary, so thousands of distinct places in a grammar reach it.
constexpr size_t kMaxWork = size_t{1} << 28;

// A position's tokens, each accepted, or uncertain with its exits (as tags).
struct Classified {
  std::vector<int32_t> accepted;
  std::vector<std::pair<int32_t, std::vector<int32_t>>> uncertain;
};

// Matches tokens from positions with the rest of the stack unknown. The
// unknown rest is a sentinel node (at a position past the automaton's, so
// the Expander hands its pops back here). Exact sentinels stand for the real
// stack node depth + 1 below the top; an approximate one for "some return
// site", tagged with the exit it came from. Counts are known in frames the
// token starts; the counted frame a mask is for gets the count it is
// classified with; any other met below is an exit, and then both repeats and
// ends (kAnyCount).
//
// Matching states are determinized lazily, as regex engines do (a DFA
// state is a set of stack tops), so walking the vocabulary's tokens in byte
// order costs a table lookup per trie node, and the tokens under a prefix
// that died are skipped by a binary search.
class Classifier {
public:
  Classifier(const Automaton &automaton, const Vocabulary &vocabulary)
      : automaton_(automaton), vocabulary_(vocabulary), expander_(automaton, pool_),
        matched_(vocabulary.sorted().size()) {
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

  // Classifies the tokens that may start at `pos`, with the counted frame
  // `counted_depth` nodes below the top at `count` (counted_depth -1: none).
  Classified classify(int32_t pos, int32_t counted_depth, uint32_t count) {
    std::vector<int32_t> path = {start(pos, counted_depth, count)}; // states by bytes matched
    Classified out;
    const ByteSet &first = automaton_.bytes(pos);
    for (int b = 0; b < 256; ++b) {
      if (!first.test(b))
        continue;
      const size_t begin = vocabulary_.first_with(b), end = vocabulary_.end_with(b);
      size_t matched = 0; // of the last token walked
      for (size_t i = begin; i < end;) {
        const size_t from = i == begin ? 0 : std::min<size_t>(vocabulary_.shared_prefix(i), matched);
        matched = walk(i, from, path);
        if (matched < vocabulary_.sorted_bytes(i).size()) {
          // The tokens sharing the prefix that died, sorted together.
          const size_t next = prefix_end(i, matched + 1, end);
          std::fill(matched_.begin() + i, matched_.begin() + next, matched);
          i = next;
          continue;
        }
        matched_[i] = static_cast<uint32_t>(matched);
        record(out, i, path[matched]);
        ++i;
      }
    }
    return out;
  }

  // The masks of `pos` with 0 to cap repetitions left in the counted frame
  // `counted_depth` nodes below, as `intern` numbers them. With `left` left,
  // only a path that matches over left * unit bytes can find the count
  // spent: tokens whose paths stop short of that do as with cap left, and
  // only the others are matched again.
  template <typename Intern>
  std::vector<int32_t> classify_counted(int32_t pos, int32_t counted_depth, uint32_t max, uint32_t cap,
                                        size_t unit, Intern &&intern) {
    Classified many_left = classify(pos, counted_depth, max - cap);
    std::vector<int32_t> by_left(cap + 1);
    by_left[cap] = intern(mask_of(many_left));
    auto length = [&](int32_t id) { return vocabulary_.token_bytes(id).size(); };
    std::sort(many_left.accepted.begin(), many_left.accepted.end(),
              [&](int32_t a, int32_t b) { return length(a) < length(b); });
    std::sort(many_left.uncertain.begin(), many_left.uncertain.end(),
              [&](const auto &a, const auto &b) { return length(a.first) < length(b.first); });
    const std::vector<uint32_t> &matched = matched_; // the other walks leave it
    std::vector<uint32_t> deeper; // sorted tokens whose paths went past `within`
    for (int b = 0; b < 256; ++b)
      if (automaton_.bytes(pos).test(b))
        for (size_t i = vocabulary_.first_with(b); i < vocabulary_.end_with(b); ++i)
          deeper.push_back(static_cast<uint32_t>(i));
    for (uint32_t left = 0; left < cap; ++left) {
      const size_t within = left * unit;
      deeper.erase(std::remove_if(deeper.begin(), deeper.end(), [&](uint32_t i) { return matched[i] <= within; }),
                   deeper.end());
      if (deeper.empty()) {
        by_left[left] = by_left[cap];
        continue;
      }
      Classified tokens = classify(pos, counted_depth, max - left, deeper);
      auto accepted_short = std::partition_point(many_left.accepted.begin(), many_left.accepted.end(),
                                                 [&](int32_t id) { return length(id) <= within; });
      auto uncertain_short = std::partition_point(many_left.uncertain.begin(), many_left.uncertain.end(),
                                                  [&](const auto &u) { return length(u.first) <= within; });
      tokens.accepted.insert(tokens.accepted.end(), many_left.accepted.begin(), accepted_short);
      tokens.uncertain.insert(tokens.uncertain.end(), many_left.uncertain.begin(), uncertain_short);
      by_left[left] = intern(mask_of(std::move(tokens)));
    }
    return by_left;
  }

  PositionMask mask_of(Classified tokens) {
    charge(vocabulary_.mask_words() / 4 + tokens.accepted.size() + tokens.uncertain.size());
    PositionMask mask;
    mask.accepted = TokenSet(tokens.accepted, vocabulary_.size());
    std::sort(tokens.uncertain.begin(), tokens.uncertain.end());
    std::map<std::pair<int32_t, std::string_view>, uint32_t> exit_index;
    mask.exit_begin.push_back(0);
    for (const auto &[id, tags] : tokens.uncertain) {
      mask.uncertain.push_back(id);
      for (int32_t tag : tags) {
        auto [depth, offset] = tags_[tag];
        const auto suffix = std::string_view(vocabulary_.token_bytes(id)).substr(offset);
        const auto next = static_cast<uint32_t>(mask.exits.size());
        auto [it, inserted] = exit_index.emplace(std::make_pair(depth, suffix), next);
        if (inserted)
          mask.exits.push_back({depth, std::string(suffix)});
        mask.exit_ids.push_back(it->second);
      }
      mask.exit_begin.push_back(static_cast<uint32_t>(mask.exit_ids.size()));
    }
    return mask;
  }

private:
  static constexpr int32_t kDead = -1, kUnknown = -2;

  // classify(pos, counted_depth, count) for the tokens `sorted` lists
  // (ascending sorted indices) only.
  Classified classify(int32_t pos, int32_t counted_depth, uint32_t count, const std::vector<uint32_t> &sorted) {
    std::vector<int32_t> path = {start(pos, counted_depth, count)};
    Classified out;
    size_t matched = 0; // of the last token listed
    bool died = false;
    for (size_t k = 0; k < sorted.size(); ++k) {
      const size_t i = sorted[k];
      size_t shared = 0; // with the last token listed: the least of those between
      if (k > 0) {
        shared = SIZE_MAX;
        for (size_t j = sorted[k - 1] + 1; j <= i && shared > 0; ++j)
          shared = std::min<size_t>(shared, vocabulary_.shared_prefix(j));
      }
      if (died && shared > matched)
        continue; // its prefix died already
      matched = walk(i, std::min(shared, matched), path);
      died = matched < vocabulary_.sorted_bytes(i).size();
      if (!died)
        record(out, i, path[matched]);
    }
    return out;
  }

  int32_t start(int32_t pos, int32_t counted_depth, uint32_t count) {
    if (states_.size() > kStatesKept)
      reset();
    const int32_t rule = automaton_.positions[pos].rule;
    State start;
    start.tops = {counted_depth == 0
                      ? node(pos, sentinel(rule, 0, -1, -1), count)
                      : node(pos, sentinel(rule, 0, -1, counted_depth > 0 ? static_cast<int32_t>(count) : -1))};
    start.exact = true;
    return intern(std::move(start));
  }

  // Steps `path`, right for the first `from` bytes of sorted token i, over
  // the rest of them; returns how many bytes a path matched.
  size_t walk(size_t i, size_t from, std::vector<int32_t> &path) {
    const std::string_view bytes = vocabulary_.sorted_bytes(i);
    path.resize(bytes.size() + 1);
    charge(1 + bytes.size() - from);
    for (size_t j = from; j < bytes.size(); ++j) {
      const int32_t next = step(path[j], static_cast<uint8_t>(bytes[j]));
      if (next == kDead)
        return j;
      path[j + 1] = next;
    }
    return bytes.size();
  }

  // The first sorted token past i, before `end`, that does not start with
  // i's first `length` bytes.
  size_t prefix_end(size_t i, size_t length, size_t end) const {
    const std::string_view prefix = vocabulary_.sorted_bytes(i).substr(0, length);
    size_t low = i + 1, high = end;
    if (low < high && vocabulary_.shared_prefix(low) < length)
      return low;
    while (low < high) {
      const size_t mid = low + (high - low) / 2;
      if (vocabulary_.sorted_bytes(mid).substr(0, length) == prefix)
        low = mid + 1;
      else
        high = mid;
    }
    return low;
  }

  void record(Classified &out, size_t i, int32_t state) const {
    const int32_t id = vocabulary_.sorted()[i];
    const State &end = states_[state];
    if (end.exact)
      out.accepted.push_back(id);
    else
      out.uncertain.emplace_back(id, end.exits);
  }

  struct Sentinel {
    int32_t rule, depth, exit; // exit -1: exact, else the tag of the exit
    int32_t ahead;             // the count of the counted frame further down, or -1
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
                         std::to_string(vocabulary_.size()) + " tokens: too many places for a token to start");
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

  int32_t node(int32_t pos, int32_t parent, uint32_t count = 0) { return pool_.get(pos, parent, count); }

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

  int32_t sentinel(int32_t rule, int32_t depth, int32_t exit, int32_t ahead) {
    auto [it, inserted] = sentinel_nodes_.emplace(std::make_tuple(rule, depth, exit, ahead), 0);
    if (inserted) {
      it->second = pool_.get(end_of_positions() + static_cast<int32_t>(sentinels_.size()), -1);
      sentinels_.push_back({rule, depth, exit, ahead});
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
        const int32_t site = automaton_.single_return(s.rule);
        const int32_t caller = site >= 0 ? automaton_.positions[site].rule : -1;
        if (site >= 0 && !automaton_.counted(caller)) {
          push(node(site, sentinel(caller, s.depth + 1, -1, s.ahead)));
          return;
        }
        if (site >= 0 && s.ahead >= 0) { // the counted frame of the mask
          push(node(site, sentinel(caller, s.depth + 1, -1, -1), static_cast<uint32_t>(s.ahead)));
          return;
        }
        tag = exit_tag(s.depth, next.depth);
      }
      if (returns.unknown)
        next.sticky.push_back(tag);
      for (int32_t site : returns.sites) {
        const int32_t caller = automaton_.positions[site].rule;
        push(node(site, sentinel(caller, 0, tag, -1), automaton_.counted(caller) ? kAnyCount : 0));
      }
    };
    expander_.begin_step();
    for (int32_t top : tops) {
      const StackNode t = pool_[top];
      if (!automaton_.bytes(t.pos).test(byte))
        continue;
      int32_t advanced = node(t.pos + 1, t.parent, t.count);
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
  std::map<std::tuple<int32_t, int32_t, int32_t, int32_t>, int32_t> sentinel_nodes_;
  std::vector<std::pair<int32_t, int32_t>> tags_; // exit tag: depth, bytes matched before it
  std::map<std::pair<int32_t, int32_t>, int32_t> tag_index_;
  std::vector<State> states_;
  std::unordered_map<std::string, int32_t> state_index_;
  int byte_class_[256];
  int classes_ = 1;
  size_t work_ = 0;
  std::vector<uint32_t> matched_; // per sorted token: the bytes a path of it matched in the last walk of all
};

// Per rule: the counted frame its frames return into through single return
// sites, as the nodes from the frame's down to it and its rule; -1 for none.
struct CountedFrame {
  int32_t depth = -1, rule = -1;
};

std::vector<CountedFrame> counted_frames(const Automaton &automaton) {
  const auto rules = static_cast<int32_t>(automaton.starts.size());
  std::vector<CountedFrame> frames(rules);
  std::vector<uint8_t> known(rules, 0); // 1: on the path being followed, 2: known
  for (int32_t r = 0; r < rules; ++r) {
    if (automaton.counted(r)) {
      frames[r] = {0, r};
      known[r] = 2;
    }
  }
  std::vector<int32_t> path;
  for (int32_t r = 0; r < rules; ++r) {
    CountedFrame found;
    for (int32_t at = r; known[at] != 1;) { // 1 again: a cycle of single returns
      if (known[at] == 2) {
        found = frames[at];
        break;
      }
      known[at] = 1;
      path.push_back(at);
      const int32_t site = automaton.single_return(at);
      if (site < 0)
        break;
      at = automaton.positions[site].rule;
    }
    for (; !path.empty(); path.pop_back()) {
      if (found.depth >= 0)
        ++found.depth;
      frames[path.back()] = found;
      known[path.back()] = 2;
    }
  }
  return frames;
}

size_t longest_token(const Vocabulary &vocabulary) {
  size_t longest = 1;
  for (size_t i = 0; i < vocabulary.sorted().size(); ++i)
    longest = std::max(longest, vocabulary.sorted_bytes(i).size());
  return longest;
}

} // namespace

MaskCache::MaskCache(const Automaton &automaton, const Vocabulary &vocabulary)
    : slots_(automaton.positions.size()) {
  Classifier classifier(automaton, vocabulary);
  const std::vector<CountedFrame> frames = counted_frames(automaton);
  const size_t longest = longest_token(vocabulary);
  std::unordered_multimap<uint64_t, int32_t> by_hash;
  auto intern = [&](PositionMask mask) {
    uint64_t hash = mask.accepted.hash() ^ mask.uncertain.size() ^ mask.exits.size() << 32;
    auto [first, last] = by_hash.equal_range(hash);
    auto same = std::find_if(first, last, [&](const auto &entry) { return masks_[entry.second] == mask; });
    if (same != last)
      return same->second;
    by_hash.emplace(hash, static_cast<int32_t>(masks_.size()));
    masks_.push_back(std::move(mask));
    return static_cast<int32_t>(masks_.size() - 1);
  };
  for (size_t p = 0; p < automaton.positions.size(); ++p) {
    const auto pos = static_cast<int32_t>(p);
    if (automaton.positions[pos].kind != Automaton::Bytes)
      continue;
    ++positions_;
    Slot &slot = slots_[pos];
    slot.first = static_cast<int32_t>(index_.size());
    const CountedFrame &frame = frames[automaton.positions[pos].rule];
    if (frame.depth < 0) {
      index_.push_back(intern(classifier.mask_of(classifier.classify(pos, -1, 0))));
      continue;
    }
    // A top here is inside a repetition begun, so at most max - 1 are left.
    // A token's path meets the count first on ending that repetition, after
    // a byte at least, then after each next one: unit_length bytes at least.
    const Automaton::Count &count = automaton.counts[frame.rule];
    const size_t unit = std::max<uint32_t>(count.unit_length, 1);
    slot.depth = frame.depth;
    slot.max = count.max;
    slot.cap = static_cast<uint32_t>(std::min<size_t>(count.max - 1, 1 + (longest - 1) / unit));
    const std::vector<int32_t> by_left =
        classifier.classify_counted(pos, frame.depth, count.max, slot.cap, unit, intern);
    index_.insert(index_.end(), by_left.begin(), by_left.end());
  }
}

size_t MaskCache::uncertain_tokens() const {
  size_t n = 0;
  for (const auto &m : masks_)
    n += m.uncertain.size();
  return n;
}

size_t MaskCache::memory_bytes() const {
  size_t n = slots_.size() * sizeof(Slot) + index_.size() * sizeof(int32_t);
  for (const auto &m : masks_) {
    n += sizeof m + m.accepted.memory_bytes() + m.uncertain.size() * 4 + m.exit_begin.size() * 4 +
         m.exit_ids.size() * 4;
    for (const Exit &e : m.exits)
      n += sizeof e + e.suffix.size();
  }
  return n;
}

} // namespace llmserve::grammar
