#include "grammar/rule_analysis.h"

#include <algorithm>
#include <queue>

namespace llmserve::grammar {
namespace {

// Rules with an alternative whose elements all hold: a byte set when
// `bytes_hold` says so, a rule when it holds itself; and counted rules that
// may repeat 0 times. Linear: each alternative counts its elements not yet
// known to hold.
template <typename BytesHold>
std::vector<bool> least_fixpoint(const std::vector<Rule> &rules, BytesHold bytes_hold) {
  struct Alt {
    int32_t rule;
    size_t pending;
  };
  std::vector<Alt> alts;
  std::vector<std::vector<size_t>> uses(rules.size()); // rule -> alternatives using it
  std::vector<bool> holds(rules.size(), false);
  std::vector<int32_t> ready;
  for (size_t r = 0; r < rules.size(); ++r) {
    if (rules[r].counted() && rules[r].min == 0)
      ready.push_back(static_cast<int32_t>(r));
    for (const auto &alternative : rules[r].alternatives) {
      size_t pending = 0;
      bool possible = true;
      for (const Element &e : alternative) {
        if (e.kind == Element::Bytes) {
          possible = possible && bytes_hold(e.index);
        } else {
          ++pending;
          uses[e.index].push_back(alts.size());
        }
      }
      alts.push_back({static_cast<int32_t>(r), possible ? pending : SIZE_MAX});
      if (possible && pending == 0)
        ready.push_back(static_cast<int32_t>(r));
    }
  }
  while (!ready.empty()) {
    int32_t r = ready.back();
    ready.pop_back();
    if (holds[r])
      continue;
    holds[r] = true;
    for (size_t a : uses[r])
      if (alts[a].pending != SIZE_MAX && --alts[a].pending == 0)
        ready.push_back(alts[a].rule);
  }
  return holds;
}

// The rule of the text a generated rule ("name_12") came from.
std::string origin(const std::string &name) { return name.substr(0, name.find('_')); }

} // namespace

std::vector<bool> nullable_rules(const std::vector<Rule> &rules) {
  return least_fixpoint(rules, [](int32_t) { return false; });
}

std::vector<uint32_t> min_lengths(const std::vector<Rule> &rules) {
  // Knuth's generalization of Dijkstra's algorithm: the least length offered
  // is final, as no rule is shorter than a rule it needs (a counted one that
  // may repeat 0 times needs none).
  struct Alt {
    int32_t rule;
    size_t pending;  // rules not yet final
    uint64_t length; // so far, at most 2^32
  };
  std::vector<Alt> alts;
  std::vector<std::vector<size_t>> uses(rules.size()); // rule -> alternatives using it
  using Offer = std::pair<uint64_t, int32_t>;
  std::priority_queue<Offer, std::vector<Offer>, std::greater<>> offers;
  auto offer = [&](const Alt &a) {
    const Rule &rule = rules[a.rule];
    offers.push({rule.counted() ? a.length * rule.min : a.length, a.rule});
  };
  for (size_t r = 0; r < rules.size(); ++r) {
    if (rules[r].counted() && rules[r].min == 0)
      offers.push({0, static_cast<int32_t>(r)});
    for (const auto &alternative : rules[r].alternatives) {
      Alt a{static_cast<int32_t>(r), 0, 0};
      for (const Element &e : alternative) {
        if (e.kind == Element::Bytes) {
          ++a.length;
        } else {
          ++a.pending;
          uses[e.index].push_back(alts.size());
        }
      }
      alts.push_back(a);
      if (a.pending == 0)
        offer(a);
    }
  }
  std::vector<uint32_t> length(rules.size(), UINT32_MAX);
  while (!offers.empty()) {
    auto [n, r] = offers.top();
    offers.pop();
    if (length[r] != UINT32_MAX)
      continue;
    length[r] = static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX - 1));
    for (size_t a : uses[r]) {
      alts[a].length = std::min<uint64_t>(alts[a].length + length[r], uint64_t{1} << 32);
      if (--alts[a].pending == 0)
        offer(alts[a]);
    }
  }
  return length;
}

std::vector<int32_t> strongly_connected_components(const std::vector<std::vector<int32_t>> &edges) {
  // Tarjan's algorithm with an explicit stack: rules nest deeper than the
  // C++ stack allows.
  const int32_t n = static_cast<int32_t>(edges.size());
  std::vector<int32_t> index(n, -1), low(n, 0), component(n, -1), stack;
  std::vector<bool> on_stack(n, false);
  std::vector<std::pair<int32_t, size_t>> calls; // node, next edge
  int32_t next_index = 0, next_component = 0;
  for (int32_t start = 0; start < n; ++start) {
    if (index[start] >= 0)
      continue;
    calls.push_back({start, 0});
    while (!calls.empty()) {
      auto &[v, edge] = calls.back();
      if (edge == 0 && index[v] < 0) {
        index[v] = low[v] = next_index++;
        stack.push_back(v);
        on_stack[v] = true;
      }
      if (edge < edges[v].size()) {
        int32_t w = edges[v][edge++];
        if (index[w] < 0)
          calls.push_back({w, 0});
        else if (on_stack[w])
          low[v] = std::min(low[v], index[w]);
        continue;
      }
      if (low[v] == index[v]) {
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component[w] = next_component;
        } while (w != v);
        ++next_component;
      }
      int32_t done = v;
      calls.pop_back();
      if (!calls.empty())
        low[calls.back().first] = std::min(low[calls.back().first], low[done]);
    }
  }
  return component;
}

void reject_left_recursion(const Grammar &grammar) {
  const auto &rules = grammar.rules();
  std::vector<bool> nullable = nullable_rules(rules);
  // The calls a rule makes before matching a byte.
  struct Call {
    int32_t from, to;
    bool tail;
  };
  std::vector<Call> calls;
  std::vector<std::vector<int32_t>> edges(rules.size());
  for (size_t r = 0; r < rules.size(); ++r) {
    for (const auto &alternative : rules[r].alternatives) {
      for (size_t i = 0; i < alternative.size(); ++i) {
        const Element &e = alternative[i];
        if (e.kind == Element::Bytes)
          break;
        // A counted rule's element is followed by its next repetition.
        const bool tail = i + 1 == alternative.size() && !rules[r].counted();
        calls.push_back({static_cast<int32_t>(r), e.index, tail});
        edges[r].push_back(e.index);
        if (!nullable[e.index])
          break;
      }
    }
  }
  std::vector<int32_t> component = strongly_connected_components(edges);
  for (const Call &call : calls)
    if (!call.tail && component[call.from] == component[call.to])
      throw GrammarError("left recursion: rule '" + origin(rules[call.from].name) +
                         "' can reach itself again before matching any text");
}

Grammar prune(const Grammar &grammar) {
  const auto &rules = grammar.rules();
  const auto &sets = grammar.byte_sets();
  std::vector<bool> productive =
      least_fixpoint(rules, [&](int32_t set) { return sets[set].any(); });
  if (!productive[grammar.root()])
    throw GrammarError("the grammar matches no text: rule 'root' can never complete");

  auto completes = [&](const std::vector<Element> &alternative) {
    return std::all_of(alternative.begin(), alternative.end(), [&](const Element &e) {
      return e.kind == Element::Bytes ? sets[e.index].any() : productive[e.index];
    });
  };
  // Renumber the rules and byte sets root reaches, in order of discovery.
  std::vector<int32_t> new_rule(rules.size(), -1), new_set(sets.size(), -1);
  std::vector<int32_t> order = {grammar.root()};
  new_rule[grammar.root()] = 0;
  std::vector<Rule> out_rules;
  std::vector<ByteSet> out_sets;
  for (size_t i = 0; i < order.size(); ++i) {
    const Rule &rule = rules[order[i]];
    Rule kept{rule.name, {}};
    if (rule.counted()) {
      if (completes(rule.alternatives[0])) {
        kept.min = rule.min;
        kept.max = rule.max;
      } else {
        kept.alternatives.emplace_back(); // productive, so min is 0: it matches "" only
      }
    }
    for (const auto &alternative : rule.alternatives) {
      if (!completes(alternative))
        continue;
      kept.alternatives.push_back(alternative);
      for (Element &e : kept.alternatives.back()) {
        auto &mapped = e.kind == Element::Bytes ? new_set[e.index] : new_rule[e.index];
        if (mapped < 0) {
          if (e.kind == Element::Bytes) {
            mapped = static_cast<int32_t>(out_sets.size());
            out_sets.push_back(sets[e.index]);
          } else {
            mapped = static_cast<int32_t>(order.size());
            order.push_back(e.index);
          }
        }
        e.index = mapped;
      }
    }
    out_rules.push_back(std::move(kept));
  }
  return Grammar(std::move(out_rules), std::move(out_sets), 0);
}

} // namespace llmserve::grammar
