#include "grammar/automaton.h"

#include "grammar/call_site_copies.h"
#include "grammar/common_prefixes.h"
#include "grammar/rule_analysis.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <set>

namespace llmserve::grammar {
namespace {

// Per position, an id of what a frame does from there to the end of its
// alternative: equal ids, equal positions (byte sets, callees, counts).
std::vector<int32_t> rest_ids(const Automaton &automaton) {
  std::vector<int32_t> ids(automaton.positions.size());
  std::map<std::array<int32_t, 5>, int32_t> interned;
  for (size_t pos = automaton.positions.size(); pos-- > 0;) {
    const Automaton::Position &p = automaton.positions[pos];
    std::array<int32_t, 5> key = {p.kind, 0, 0, 0, 0};
    if (p.kind == Automaton::Loop) { // it repeats its element, or ends
      const Automaton::Count &count = automaton.counts[p.rule];
      const Automaton::Position &element = automaton.positions[p.arg];
      key = {p.kind, static_cast<int32_t>(count.min), static_cast<int32_t>(count.max), element.kind, element.arg};
    } else if (p.kind != Automaton::End) {
      key = {p.kind, p.arg, ids[pos + 1], 0, 0};
    }
    ids[pos] = interned.emplace(key, static_cast<int32_t>(interned.size())).first->second;
  }
  return ids;
}

// Automaton::single_return, per rule. What follows a rule's frames is an id:
// the rule's own where they may continue apart, else that of (the rest of a
// return site, what follows the site's frame); settled for the rules a rule
// returns into first.
std::vector<int32_t> single_returns(const Automaton &automaton) {
  const auto rules = static_cast<int32_t>(automaton.starts.size());
  std::vector<std::vector<int32_t>> returns_into(rules);
  for (int32_t r = 0; r < rules; ++r)
    for (int32_t site : automaton.returns[r].sites)
      returns_into[r].push_back(automaton.positions[site].rule);
  // Tarjan numbers a component after the components it reaches.
  const std::vector<int32_t> component = strongly_connected_components(returns_into);
  std::vector<std::vector<int32_t>> by_component(rules);
  for (int32_t r = 0; r < rules; ++r)
    by_component[component[r]].push_back(r);

  const std::vector<int32_t> rest = rest_ids(automaton);
  std::vector<int32_t> follows(rules), single(rules, -1);
  std::map<std::pair<int32_t, int32_t>, int32_t> ids; // past the rules'
  for (const auto &members : by_component) {
    for (int32_t r : members) {
      follows[r] = r;
      const Automaton::ReturnSites &returns = automaton.returns[r];
      const auto &into = returns_into[r];
      if (returns.bottom || returns.unknown || returns.sites.empty())
        continue;
      if (returns.sites.size() == 1)
        single[r] = returns.sites[0];
      if (members.size() > 1 || std::find(into.begin(), into.end(), r) != into.end())
        continue; // recursive: what follows the site's frame is not known yet
      std::set<int32_t> continuations;
      for (int32_t site : returns.sites) {
        auto key = std::make_pair(rest[site], follows[automaton.positions[site].rule]);
        continuations.insert(ids.emplace(key, rules + static_cast<int32_t>(ids.size())).first->second);
      }
      if (continuations.size() == 1) {
        follows[r] = *continuations.begin();
        single[r] = returns.sites[0];
      }
    }
  }
  return single;
}

} // namespace

Automaton::Automaton(const Grammar &grammar) : byte_sets(grammar.byte_sets()), root(grammar.root()) {
  const std::vector<Rule> rules = copy_rules_per_call_site(factor_common_prefixes(grammar));
  starts.resize(rules.size());
  counts.resize(rules.size());
  std::vector<uint32_t> lengths;
  for (size_t r = 0; r < rules.size(); ++r) {
    const auto rule = static_cast<int32_t>(r);
    auto element = [&](const Element &e) {
      positions.push_back({e.kind == Element::Bytes ? Bytes : Call, e.index, rule});
    };
    if (rules[r].counted()) {
      if (lengths.empty())
        lengths = min_lengths(rules);
      const Element &unit = rules[r].alternatives[0][0];
      counts[r] = {rules[r].min, rules[r].max, unit.kind == Element::Bytes ? 1 : lengths[unit.index]};
      const auto at = static_cast<int32_t>(positions.size());
      element(unit);
      starts[r].push_back(static_cast<int32_t>(positions.size()));
      positions.push_back({Loop, at, rule});
      continue;
    }
    for (const auto &alternative : rules[r].alternatives) {
      starts[r].push_back(static_cast<int32_t>(positions.size()));
      for (const Element &e : alternative)
        element(e);
      positions.push_back({End, 0, rule});
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
  single_returns_ = single_returns(*this);
}

} // namespace llmserve::grammar
