#include "grammar/call_site_copies.h"

#include "grammar/rule_analysis.h"

#include <map>
#include <tuple>

namespace llmserve::grammar {
namespace {

size_t rule_size(const Rule &rule) {
  size_t n = 0;
  for (const auto &alternative : rule.alternatives)
    n += alternative.size() + 1;
  return n;
}

// What follows a frame, as an id: the end of the text (0), a rule that is
// not copied (an id of its own), or the rest of an alternative, element by
// element, to its end (or to the next repetition, in a counted rule), then
// what follows that frame in turn. Rules are named by their original, so
// that copies compare equal.
class Continuations {
public:
  int32_t fresh() { return next_id_++; }

  // What follows each element of `alternative`, in a frame that `follows`;
  // `repeated`: the original of the counted rule it is the alternative of,
  // or -1. A tail call's frame replaces the caller's.
  std::vector<int32_t> of_calls(const std::vector<Element> &alternative, int32_t follows, int32_t repeated,
                                const std::vector<int32_t> &origin) {
    std::vector<int32_t> after(alternative.size());
    int32_t rest = repeated >= 0 ? then(kRepetition, repeated, follows) : then(kEnd, 0, follows);
    for (size_t k = alternative.size(); k-- > 0;) {
      after[k] = k + 1 == alternative.size() && repeated < 0 ? follows : rest;
      const Element &e = alternative[k];
      rest = e.kind == Element::Bytes ? then(kBytes, e.index, rest) : then(kRule, origin[e.index], rest);
    }
    return after;
  }

private:
  enum Kind { kRule, kBytes, kEnd, kRepetition };

  int32_t then(Kind kind, int32_t what, int32_t next) {
    auto [it, inserted] = ids_.emplace(std::make_tuple(kind, what, next), next_id_);
    if (inserted)
      ++next_id_;
    return it->second;
  }

  std::map<std::tuple<Kind, int32_t, int32_t>, int32_t> ids_;
  int32_t next_id_ = 1;
};

// A rule recursive only through itself is copied whole (its calls of itself
// stay within the copy); rules recursive through others are not.
std::vector<bool> copyable_rules(const Grammar &grammar) {
  const std::vector<Rule> &rules = grammar.rules();
  std::vector<std::vector<int32_t>> edges(rules.size());
  for (size_t r = 0; r < rules.size(); ++r)
    for (const auto &alternative : rules[r].alternatives)
      for (const Element &e : alternative)
        if (e.kind == Element::Rule)
          edges[r].push_back(e.index);
  const std::vector<int32_t> component = strongly_connected_components(edges);
  std::vector<size_t> component_size(rules.size(), 0);
  for (int32_t c : component)
    ++component_size[c];
  std::vector<bool> copyable(rules.size());
  for (size_t r = 0; r < rules.size(); ++r)
    copyable[r] = static_cast<int32_t>(r) != grammar.root() && component_size[component[r]] == 1;
  return copyable;
}

} // namespace

std::vector<Rule> copy_rules_per_call_site(const Grammar &grammar) {
  const std::vector<Rule> &original = grammar.rules(); // copies start from these
  std::vector<Rule> rules = original;
  const std::vector<bool> copyable = copyable_rules(grammar);
  size_t size = 0;
  for (const Rule &rule : rules)
    size += rule_size(rule);
  // Generous: past it, calls that continue apart share a rule, whose end is
  // then an exit the stack decides at run time, one check per token. What
  // the copies cost to compile is bounded where it is paid (mask_cache.cpp).
  const size_t budget = 4 * kMaxElements;

  Continuations continuations;
  std::vector<int32_t> follows(rules.size(), -1); // per rule: what follows its frames
  std::vector<int32_t> origin(rules.size());      // per rule: the original it copies
  for (size_t r = 0; r < rules.size(); ++r)
    origin[r] = static_cast<int32_t>(r);
  std::map<std::pair<int32_t, int32_t>, int32_t> copy_for; // (original, what follows) -> rule
  // The rule for a call of `callee` that `next` follows, and whether it is
  // new: the original on its first call, else a copy (within the budget).
  auto rule_for = [&](int32_t callee, int32_t next) -> std::pair<int32_t, bool> {
    auto [it, inserted] = copy_for.emplace(std::make_pair(callee, next), callee);
    if (!inserted)
      return {it->second, false};
    if (follows[callee] < 0) {
      follows[callee] = next;
      return {callee, true};
    }
    if (size + rule_size(original[callee]) > budget)
      return {callee, false};
    const auto copy = static_cast<int32_t>(rules.size());
    Rule duplicate = original[callee];
    for (auto &alternative : duplicate.alternatives)
      for (Element &inner : alternative)
        if (inner.kind == Element::Rule && inner.index == callee)
          inner.index = copy;
    rules.push_back(std::move(duplicate));
    follows.push_back(next);
    origin.push_back(callee);
    size += rule_size(original[callee]);
    it->second = copy;
    return {copy, true};
  };

  std::vector<int32_t> order = {grammar.root()}; // rules whose calls are to be given copies
  follows[grammar.root()] = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const int32_t r = order[i];
    for (size_t a = 0; a < rules[r].alternatives.size(); ++a) {
      const int32_t repeated = rules[r].counted() ? origin[r] : -1;
      const std::vector<int32_t> after = continuations.of_calls(rules[r].alternatives[a], follows[r], repeated, origin);
      for (size_t k = 0; k < rules[r].alternatives[a].size(); ++k) {
        const Element e = rules[r].alternatives[a][k];
        if (e.kind != Element::Rule || e.index == r)
          continue;
        if (!copyable[e.index]) {
          if (follows[e.index] < 0) {
            follows[e.index] = continuations.fresh();
            order.push_back(e.index);
          }
          continue;
        }
        auto [callee, is_new] = rule_for(e.index, after[k]);
        if (is_new)
          order.push_back(callee);
        rules[r].alternatives[a][k].index = callee;
      }
    }
  }
  return rules;
}

} // namespace llmserve::grammar
