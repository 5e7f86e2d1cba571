// A deliberately simple recognizer to check the matcher against: Earley's
// algorithm over a parsed grammar's rules, one byte at a time. It knows
// nothing of stacks, tail calls or the mask cache. Since Grammar::parse
// leaves only rules that can complete, a text is a prefix of some sentence
// exactly when the chart after it is not empty.
#ifndef LLMSERVE_TEST_UNIT_GRAMMAR_REFERENCE_H
#define LLMSERVE_TEST_UNIT_GRAMMAR_REFERENCE_H

#include "grammar/grammar.h"

#include <set>
#include <string_view>
#include <tuple>
#include <vector>

namespace llmserve::grammar::testing {

class Reference {
public:
  explicit Reference(const Grammar &grammar) : g_(grammar), nullable_(grammar.rules().size(), false) {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < g_.rules().size(); ++r)
        for (const auto &alternative : g_.rules()[r].alternatives) {
          bool all = true;
          for (const Element &e : alternative)
            all = all && e.kind == Element::Rule && nullable_[e.index];
          if (all && !nullable_[r])
            nullable_[r] = changed = true;
        }
    }
    chart_.emplace_back();
    for (size_t a = 0; a < g_.rules()[g_.root()].alternatives.size(); ++a)
      chart_[0].insert({g_.root(), static_cast<int32_t>(a), 0, 0});
    close(0);
  }

  // Appends bytes to the text; false (text unchanged) if then no sentence
  // starts with it.
  bool push(std::string_view bytes) {
    size_t size = chart_.size();
    for (unsigned char b : bytes) {
      scan(b);
      if (chart_.back().empty()) {
        chart_.resize(size);
        return false;
      }
    }
    return true;
  }
  // Bytes pushed so far, and dropping those past the first n.
  size_t length() const { return chart_.size() - 1; }
  void truncate(size_t n) { chart_.resize(n + 1); }
  // Whether the text followed by `bytes` is a prefix / a sentence.
  bool prefix_with(std::string_view bytes) {
    size_t size = chart_.size();
    bool ok = push(bytes);
    chart_.resize(size);
    return ok;
  }
  bool complete_with(std::string_view bytes) {
    size_t size = chart_.size();
    bool ok = push(bytes) && complete();
    chart_.resize(size);
    return ok;
  }
  bool complete() const {
    for (const Item &item : chart_.back())
      if (item.rule == g_.root() && item.origin == 0 &&
          item.dot == static_cast<int32_t>(alternative(item).size()))
        return true;
    return false;
  }

private:
  struct Item {
    int32_t rule, alt, dot, origin;
    bool operator<(const Item &o) const {
      return std::tie(rule, alt, dot, origin) < std::tie(o.rule, o.alt, o.dot, o.origin);
    }
  };

  const std::vector<Element> &alternative(const Item &item) const {
    return g_.rules()[item.rule].alternatives[item.alt];
  }

  void scan(unsigned char b) {
    std::set<Item> next;
    for (const Item &item : chart_.back()) {
      const auto &alt = alternative(item);
      if (item.dot < static_cast<int32_t>(alt.size()) && alt[item.dot].kind == Element::Bytes &&
          g_.byte_sets()[alt[item.dot].index].test(b))
        next.insert({item.rule, item.alt, item.dot + 1, item.origin});
    }
    chart_.push_back(std::move(next));
    close(chart_.size() - 1);
  }

  // Predicts and completes in set i until nothing changes.
  void close(size_t i) {
    std::vector<Item> work(chart_[i].begin(), chart_[i].end());
    auto add = [&](Item item) {
      if (chart_[i].insert(item).second)
        work.push_back(item);
    };
    while (!work.empty()) {
      Item item = work.back();
      work.pop_back();
      const auto &alt = alternative(item);
      if (item.dot == static_cast<int32_t>(alt.size())) {
        std::vector<Item> waiting(chart_[item.origin].begin(), chart_[item.origin].end());
        for (const Item &w : waiting) {
          const auto &walt = alternative(w);
          if (w.dot < static_cast<int32_t>(walt.size()) && walt[w.dot].kind == Element::Rule &&
              walt[w.dot].index == item.rule)
            add({w.rule, w.alt, w.dot + 1, w.origin});
        }
      } else if (alt[item.dot].kind == Element::Rule) {
        int32_t callee = alt[item.dot].index;
        for (size_t a = 0; a < g_.rules()[callee].alternatives.size(); ++a)
          add({callee, static_cast<int32_t>(a), 0, static_cast<int32_t>(i)});
        if (nullable_[callee]) // Aycock and Horspool: complete what predicts a nullable rule
          add({item.rule, item.alt, item.dot + 1, item.origin});
      }
    }
  }

  const Grammar &g_;
  std::vector<bool> nullable_;
  std::vector<std::set<Item>> chart_;
};

} // namespace llmserve::grammar::testing

#endif
