#include "grammar/common_prefixes.h"

#include <algorithm>
#include <map>
#include <utility>

namespace llmserve::grammar {

Grammar factor_common_prefixes(const Grammar &grammar) {
  std::vector<Rule> rules = grammar.rules();
  for (size_t r = 0; r < rules.size(); ++r) { // factored rules are appended, and visited too
    auto alternatives = std::move(rules[r].alternatives);
    rules[r].alternatives.clear();
    // Alternatives by first element, in order of first appearance.
    std::map<std::pair<int, int32_t>, size_t> group_of;
    std::vector<std::vector<std::vector<Element>>> groups;
    for (auto &alternative : alternatives) {
      if (alternative.empty()) {
        groups.push_back({std::move(alternative)});
        continue;
      }
      auto key = std::make_pair(static_cast<int>(alternative[0].kind), alternative[0].index);
      auto [it, inserted] = group_of.emplace(key, groups.size());
      if (inserted)
        groups.emplace_back();
      groups[it->second].push_back(std::move(alternative));
    }
    for (auto &group : groups) {
      if (group.size() == 1) {
        rules[r].alternatives.push_back(std::move(group[0]));
        continue;
      }
      size_t shared = 1;
      auto all_share = [&](size_t i) {
        return std::all_of(group.begin(), group.end(),
                           [&](const auto &a) { return a.size() > i && a[i] == group[0][i]; });
      };
      while (all_share(shared))
        ++shared;
      Rule rest{rules[r].name.substr(0, rules[r].name.find('_')) + "_" + std::to_string(rules.size()), {}};
      for (auto &alternative : group)
        rest.alternatives.emplace_back(alternative.begin() + shared, alternative.end());
      std::vector<Element> factored(group[0].begin(), group[0].begin() + shared);
      factored.push_back({Element::Rule, static_cast<int32_t>(rules.size())});
      rules[r].alternatives.push_back(std::move(factored));
      rules.push_back(std::move(rest));
    }
  }
  return Grammar(std::move(rules), grammar.byte_sets(), grammar.root());
}

} // namespace llmserve::grammar
