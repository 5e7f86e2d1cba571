#include "grammar/grammar.h"

#include "grammar/lower.h"
#include "grammar/parser.h"
#include "grammar/rule_analysis.h"

#include <cstdio>

namespace llmserve::grammar {
namespace {

std::string byte_name(int b) {
  char buf[8];
  if (b >= 0x21 && b <= 0x7E && b != '\\' && b != ']' && b != '-' && b != '^')
    std::snprintf(buf, sizeof buf, "%c", b);
  else
    std::snprintf(buf, sizeof buf, "\\x%02X", b);
  return buf;
}

std::string byte_set_text(const ByteSet &set) {
  std::string out = "[";
  for (int b = 0; b < 256;) {
    if (!set.test(b)) {
      ++b;
      continue;
    }
    int last = b;
    while (last + 1 < 256 && set.test(last + 1))
      ++last;
    out += byte_name(b);
    if (last > b)
      out += "-" + byte_name(last);
    b = last + 1;
  }
  return out + "]";
}

} // namespace

Grammar Grammar::parse(std::string_view gbnf) {
  Grammar lowered = lower(gbnf::parse(gbnf), gbnf);
  reject_left_recursion(lowered);
  return prune(lowered);
}

std::string Grammar::to_string() const {
  std::string out;
  for (const Rule &rule : rules_) {
    out += rule.name + " ::=";
    for (size_t a = 0; a < rule.alternatives.size(); ++a) {
      out += a ? " |" : "";
      for (const Element &e : rule.alternatives[a])
        out += " " + (e.kind == Element::Bytes ? byte_set_text(byte_sets_[e.index])
                                               : rules_[e.index].name);
    }
    if (rule.counted())
      out += "{" + std::to_string(rule.min) + "," + std::to_string(rule.max) + "}";
    out += "\n";
  }
  return out;
}

} // namespace llmserve::grammar
