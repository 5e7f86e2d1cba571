#include "grammar/automaton.h"

#include "grammar/call_site_copies.h"
#include "grammar/common_prefixes.h"

#include <algorithm>
#include <iterator>

namespace llmserve::grammar {

Automaton::Automaton(const Grammar &grammar) : byte_sets(grammar.byte_sets()), root(grammar.root()) {
  const std::vector<Rule> rules = copy_rules_per_call_site(factor_common_prefixes(grammar));
  starts.resize(rules.size());
  for (size_t r = 0; r < rules.size(); ++r) {
    for (const auto &alternative : rules[r].alternatives) {
      starts[r].push_back(static_cast<int32_t>(positions.size()));
      for (const Element &e : alternative)
        positions.push_back({e.kind == Element::Bytes ? Bytes : Call, e.index, static_cast<int32_t>(r)});
      positions.push_back({End, 0, static_cast<int32_t>(r)});
    }
  }

  // Non-tail calls give sites; tail calls pass the caller's on, to a fixpoint.
  returns.resize(rules.size());
  std::vector<std::vector<int32_t>> tail_callees(rules.size());
  for (size_t pos = 0; pos < positions.size(); ++pos) {
    const Position &p = positions[pos];
    if (p.kind != Call)
      continue;
    if (is_tail(static_cast<int32_t>(pos)))
      tail_callees[p.rule].push_back(p.arg);
    else
      returns[p.arg].sites.push_back(static_cast<int32_t>(pos + 1));
  }
  returns[root].bottom = true;
  std::vector<int32_t> changed;
  for (size_t r = 0; r < rules.size(); ++r) {
    auto &sites = returns[r].sites;
    std::sort(sites.begin(), sites.end());
    sites.erase(std::unique(sites.begin(), sites.end()), sites.end());
    if (sites.size() > kMaxReturnSites) {
      sites.clear();
      returns[r].unknown = true;
    }
    changed.push_back(static_cast<int32_t>(r));
  }
  while (!changed.empty()) {
    int32_t caller = changed.back();
    changed.pop_back();
    const ReturnSites from = returns[caller];
    for (int32_t callee : tail_callees[caller]) {
      ReturnSites &to = returns[callee];
      ReturnSites merged;
      merged.bottom = to.bottom || from.bottom;
      merged.unknown = to.unknown || from.unknown;
      if (!merged.unknown)
        std::set_union(to.sites.begin(), to.sites.end(), from.sites.begin(), from.sites.end(),
                       std::back_inserter(merged.sites));
      if (merged.sites.size() > kMaxReturnSites) {
        merged.sites.clear();
        merged.unknown = true;
      }
      if (merged.bottom != to.bottom || merged.unknown != to.unknown ||
          merged.sites.size() != to.sites.size()) {
        to = std::move(merged);
        changed.push_back(callee);
      }
    }
  }
}

} // namespace llmserve::grammar
