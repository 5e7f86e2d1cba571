#include "grammar/lower.h"

#include "grammar/rule_analysis.h"
#include "grammar/utf8_ranges.h"
#include "tokenizer/unicode.h"

#include <unordered_map>

namespace llmserve::grammar {
namespace {

using gbnf::Expr;
using gbnf::Sequence;
using Alternatives = std::vector<std::vector<Element>>;

int32_t add_rule(std::vector<Rule> &rules, const std::string &origin, Alternatives alternatives) {
  int32_t index = static_cast<int32_t>(rules.size());
  rules.push_back({origin + "_" + std::to_string(index), std::move(alternatives)});
  return index;
}

// The elements that match unit{min,max} with plain rules: min copies of
// unit, then the head of a chain `o_k ::= unit o_k-1 | ""` of max - min rules
// appended to `rules`.
std::vector<Element> written_out(std::vector<Rule> &rules, Element unit, uint32_t min, uint32_t max,
                                 const std::string &origin) {
  std::vector<Element> out(min, unit);
  int32_t optional = -1;
  for (uint32_t i = min; i < max; ++i) {
    Alternatives alternatives(2);
    alternatives[0].push_back(unit);
    if (optional >= 0)
      alternatives[0].push_back({Element::Rule, optional});
    optional = add_rule(rules, origin, std::move(alternatives));
  }
  if (optional >= 0)
    out.push_back({Element::Rule, optional});
  return out;
}

// Elements written_out adds, counted as the lowering counts them.
size_t written_out_size(uint32_t min, uint32_t max) { return min + 4 * size_t{max - min}; }

// Makes counted rule r a plain one.
void write_out(std::vector<Rule> &rules, int32_t r) {
  const Element unit = rules[r].alternatives[0][0];
  const std::string origin = rules[r].name.substr(0, rules[r].name.find('_'));
  std::vector<Element> elements = written_out(rules, unit, rules[r].min, rules[r].max, origin);
  rules[r].alternatives = {std::move(elements)};
  rules[r].min = rules[r].max = 0;
}

class Lowering {
public:
  explicit Lowering(std::string_view text) : text_(text) {}

  Grammar run(const std::vector<gbnf::RuleDef> &defs) {
    for (const auto &def : defs) {
      auto [it, inserted] = rule_index_.emplace(def.name, static_cast<int32_t>(rules_.size()));
      if (!inserted)
        throw GrammarError(gbnf::position(text_, def.offset) + ": rule '" + def.name +
                           "' is defined twice (first at " +
                           gbnf::position(text_, defs[it->second].offset) + ")");
      rules_.push_back({def.name, {}});
    }
    auto root = rule_index_.find("root");
    if (root == rule_index_.end())
      throw GrammarError("the grammar has no rule 'root' (where it starts)");
    for (size_t i = 0; i < defs.size(); ++i) {
      Alternatives alternatives = lower_alternatives(defs[i].alternatives, defs[i].name);
      rules_[i].alternatives = std::move(alternatives);
    }
    write_out_nullable_units();
    return Grammar(std::move(rules_), std::move(byte_sets_), root->second);
  }

private:
  Alternatives lower_alternatives(const std::vector<Sequence> &sequences, const std::string &origin) {
    Alternatives out;
    for (const Sequence &sequence : sequences) {
      out.emplace_back();
      count(1); // the end of the alternative
      for (const Expr &item : sequence)
        lower_item(item, origin, out.back());
    }
    return out;
  }

  void lower_item(const Expr &item, const std::string &origin, std::vector<Element> &out) {
    switch (item.kind) {
    case Expr::Literal:
      for (uint32_t cp : item.literal) {
        std::string bytes;
        unicode::append_utf8(bytes, cp);
        for (unsigned char b : bytes) {
          ByteSet set;
          set.set(b);
          emit(out, bytes_element(set));
        }
      }
      break;
    case Expr::Class: {
      auto sequences = utf8_sequences(class_code_points(item.ranges, item.negated));
      if (sequences.empty()) {
        emit(out, bytes_element(ByteSet())); // matches nothing
      } else if (sequences.size() == 1) {
        for (const ByteSet &set : sequences[0])
          emit(out, bytes_element(set));
      } else {
        Alternatives alternatives;
        for (const auto &sequence : sequences) {
          alternatives.emplace_back();
          count(1);
          for (const ByteSet &set : sequence)
            emit(alternatives.back(), bytes_element(set));
        }
        emit(out, {Element::Rule, new_rule(origin, std::move(alternatives))});
      }
      break;
    }
    case Expr::RuleRef: {
      auto it = rule_index_.find(item.name);
      if (it == rule_index_.end())
        throw GrammarError(gbnf::position(text_, item.offset) + ": undefined rule '" +
                           item.name + "'");
      emit(out, {Element::Rule, it->second});
      break;
    }
    case Expr::Group:
      lower_group(item, origin, out);
      break;
    }
  }

  void lower_group(const Expr &group, const std::string &origin, std::vector<Element> &out) {
    Alternatives alternatives = lower_alternatives(group.alternatives, origin);
    if (group.min == 1 && group.max == 1 && alternatives.size() == 1) {
      for (const Element &e : alternatives[0])
        emit(out, e);
      return;
    }
    // What is repeated, as one element.
    Element unit = alternatives.size() == 1 && alternatives[0].size() == 1
                       ? alternatives[0][0]
                       : Element{Element::Rule, new_rule(origin, std::move(alternatives))};
    repeat(out, unit, group.min, group.min, origin);
    if (group.max == gbnf::kUnbounded) {
      int32_t star = new_rule(origin, {});
      Alternatives loop(2);
      count(2);
      emit(loop[0], unit);
      emit(loop[0], {Element::Rule, star});
      rules_[star].alternatives = std::move(loop);
      emit(out, {Element::Rule, star});
    } else {
      repeat(out, unit, 0, group.max - group.min, origin);
    }
  }

  // unit{min,max}, where min is 0 or max: written out, or when longer than
  // kMaxUnrolled a counted rule.
  void repeat(std::vector<Element> &out, Element unit, uint32_t min, uint32_t max,
              const std::string &origin) {
    if (max > kMaxUnrolled) {
      count(2);
      int32_t counted = new_rule(origin, {{unit}});
      rules_[counted].min = min;
      rules_[counted].max = max;
      emit(out, {Element::Rule, counted});
      return;
    }
    count(written_out_size(min, max));
    for (Element e : written_out(rules_, unit, min, max, origin))
      out.push_back(e);
  }

  // Counted rules repeat only what cannot match "" (lower.h), which is known
  // once every rule is lowered: a unit may call rules defined later.
  void write_out_nullable_units() {
    const std::vector<bool> nullable = nullable_rules(rules_);
    for (size_t r = 0; r < rules_.size(); ++r) {
      if (!rules_[r].counted())
        continue;
      const Element unit = rules_[r].alternatives[0][0];
      if (unit.kind == Element::Rule && nullable[unit.index]) {
        count(written_out_size(rules_[r].min, rules_[r].max));
        write_out(rules_, static_cast<int32_t>(r));
      }
    }
  }

  int32_t new_rule(const std::string &origin, Alternatives alternatives) {
    return add_rule(rules_, origin, std::move(alternatives));
  }

  Element bytes_element(const ByteSet &set) {
    auto [it, inserted] = byte_set_index_.emplace(set, static_cast<int32_t>(byte_sets_.size()));
    if (inserted)
      byte_sets_.push_back(set);
    return {Element::Bytes, it->second};
  }

  void emit(std::vector<Element> &out, Element e) {
    count(1);
    out.push_back(e);
  }

  void count(size_t n) {
    elements_ += n;
    if (elements_ > kMaxElements)
      throw GrammarError("the grammar is too large: over " + std::to_string(kMaxElements) +
                         " elements once its repetitions are expanded");
  }

  std::string_view text_;
  std::vector<Rule> rules_;
  std::unordered_map<std::string, int32_t> rule_index_;
  std::vector<ByteSet> byte_sets_;
  std::unordered_map<ByteSet, int32_t> byte_set_index_;
  size_t elements_ = 0;
};

} // namespace

Grammar lower(const std::vector<gbnf::RuleDef> &defs, std::string_view text) {
  return Lowering(text).run(defs);
}

Grammar write_out_counted_rules(const Grammar &grammar) {
  std::vector<Rule> rules = grammar.rules();
  for (size_t r = 0; r < rules.size(); ++r)
    if (rules[r].counted())
      write_out(rules, static_cast<int32_t>(r));
  return Grammar(std::move(rules), grammar.byte_sets(), grammar.root());
}

} // namespace llmserve::grammar
