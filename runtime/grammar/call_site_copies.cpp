#include "grammar/call_site_copies.h"

#include "grammar/rule_analysis.h"

#include <algorithm>

namespace llmserve::grammar {
namespace {

size_t rule_size(const Rule &rule) {
  size_t n = 0;
  for (const auto &alternative : rule.alternatives)
    n += alternative.size() + 1;
  return n;
}

} // namespace

std::vector<Rule> copy_rules_per_call_site(const Grammar &grammar) {
  const std::vector<Rule> &original = grammar.rules(); // copies start from these
  std::vector<Rule> rules = original;
  const int32_t root = grammar.root();
  std::vector<std::vector<int32_t>> edges(rules.size());
  size_t size = 0;
  for (size_t r = 0; r < rules.size(); ++r) {
    size += rule_size(rules[r]);
    for (const auto &alternative : rules[r].alternatives)
      for (const Element &e : alternative)
        if (e.kind == Element::Rule)
          edges[r].push_back(e.index);
  }
  // A rule recursive only through itself is copied whole (its calls of
  // itself stay within the copy); rules recursive through others are not.
  std::vector<int32_t> component = strongly_connected_components(edges);
  std::vector<size_t> component_size(rules.size(), 0);
  for (int32_t c : component)
    ++component_size[c];
  auto copyable = [&](int32_t r) { return r != root && component_size[component[r]] == 1; };

  // Generous: a shared rule's callers make its end an exit the stack decides
  // at run time, one check per token. What the copies cost to compile is
  // bounded where it is paid (mask_cache.cpp).
  const size_t budget = 4 * kMaxElements;
  std::vector<bool> used(rules.size(), false); // called from somewhere already
  std::vector<int32_t> order = {root};
  used[root] = true;
  for (size_t i = 0; i < order.size(); ++i) {
    const int32_t r = order[i];
    for (size_t a = 0; a < rules[r].alternatives.size(); ++a) {
      for (size_t k = 0; k < rules[r].alternatives[a].size(); ++k) {
        Element e = rules[r].alternatives[a][k];
        if (e.kind != Element::Rule || e.index == r)
          continue;
        if (!used[e.index]) {
          used[e.index] = true;
          order.push_back(e.index);
          continue;
        }
        const size_t copy_size = rule_size(original[e.index]);
        if (!copyable(e.index) || size + copy_size > budget)
          continue;
        const int32_t copy = static_cast<int32_t>(rules.size());
        Rule duplicate = original[e.index];
        for (auto &alternative : duplicate.alternatives)
          for (Element &inner : alternative)
            if (inner.kind == Element::Rule && inner.index == e.index)
              inner.index = copy;
        rules.push_back(std::move(duplicate));
        used.push_back(true);
        size += copy_size;
        rules[r].alternatives[a][k].index = copy;
        order.push_back(copy);
      }
    }
  }
  return rules;
}

} // namespace llmserve::grammar
