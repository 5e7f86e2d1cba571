#include "grammar/parser.h"

#include "grammar/grammar.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace llmserve::grammar::gbnf {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string code_point_name(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", cp);
  return buf;
}

// Line and column (counted in characters) of byte offset `at`, from 1.
std::pair<int, int> location(std::string_view text, size_t at) {
  int line = 1, column = 1;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return {line, column};
}

[[noreturn]] void fail_at(std::string_view text, size_t at, const std::string &what) {
  throw GrammarError(position(text, at) + ": " + what);
}

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::vector<RuleDef> parse_grammar() {
    std::vector<RuleDef> rules;
    skip_space(true);
    while (!at_end()) {
      rules.push_back(parse_rule());
      skip_space(true);
    }
    return rules;
  }

private:
  [[noreturn]] void fail(size_t at, const std::string &what) const { fail_at(text_, at, what); }

  bool at_end(size_t ahead = 0) const { return pos_ + ahead >= text_.size(); }
  char peek(size_t ahead = 0) const { return at_end(ahead) ? '\0' : text_[pos_ + ahead]; }

  // Spaces, tabs and comments; newlines too where a rule cannot end.
  void skip_space(bool newlines) {
    while (!at_end()) {
      char c = peek();
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r')
          ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    size_t start = pos_;
    while (is_name_char(peek()))
      ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  RuleDef parse_rule() {
    RuleDef rule;
    size_t start = pos_;
    rule.offset = start;
    rule.name = parse_name();
    if (rule.name.empty())
      fail(start, "expected a rule name");
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=")
      fail(pos_, "expected '::=' after rule name '" + rule.name + "'");
    pos_ += 3;
    skip_space(true);
    size_t height = 0;
    rule.alternatives = parse_alternatives(false, 0, height);
    if (peek() == '\r' || peek() == '\n')
      ++pos_;
    else if (!at_end())
      fail(pos_, "expected the end of rule '" + rule.name + "' (a newline)");
    return rule;
  }

  // `depth`: the parentheses around; `height` gets the most groups nested
  // in what is parsed (repetitions count: each wraps its item in a group).
  std::vector<Sequence> parse_alternatives(bool nested, size_t depth, size_t &height) {
    std::vector<Sequence> alternatives;
    alternatives.push_back(parse_sequence(nested, depth, height));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(nested, depth, height));
    }
    return alternatives;
  }

  Sequence parse_sequence(bool nested, size_t depth, size_t &height) {
    Sequence items;
    size_t item_height = 0;
    auto deepen = [&](size_t to, size_t at) {
      item_height = to;
      if (item_height > kMaxNesting)
        fail(at, "nesting deeper than " + std::to_string(kMaxNesting));
      height = std::max(height, item_height);
    };
    for (;;) {
      size_t start = pos_;
      char c = peek();
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (items.empty())
          fail(start, std::string("expected an item before '") + c + "'");
        deepen(item_height + 1, start);
        Expr group = make(Expr::Group, start);
        std::tie(group.min, group.max) = parse_repetition();
        group.alternatives.push_back({std::move(items.back())});
        items.back() = std::move(group);
      } else {
        Expr item;
        size_t inner = 0;
        if (c == '"') {
          item = parse_literal();
        } else if (c == '[') {
          item = parse_class();
        } else if (c == '.') {
          ++pos_;
          item.kind = Expr::Class;
          item.ranges.push_back({0, 0x10FFFF});
        } else if (is_name_char(c)) {
          item.kind = Expr::RuleRef;
          item.name = parse_name();
        } else if (c == '(') {
          if (depth + 1 > kMaxNesting)
            fail(start, "nesting deeper than " + std::to_string(kMaxNesting));
          ++pos_;
          skip_space(true);
          item.kind = Expr::Group;
          item.alternatives = parse_alternatives(true, depth + 1, inner);
          if (peek() != ')')
            fail(pos_, "expected ')' to close the '(' at " + where(start));
          ++pos_;
          ++inner;
        } else {
          break;
        }
        item.offset = start;
        items.push_back(std::move(item));
        deepen(inner, start);
      }
      skip_space(nested);
    }
    return items;
  }

  static Expr make(Expr::Kind kind, size_t offset) {
    Expr e;
    e.kind = kind;
    e.offset = offset;
    return e;
  }

  std::string where(size_t at) const {
    auto [line, column] = location(text_, at);
    return std::to_string(line) + ":" + std::to_string(column);
  }

  // After the operator: * + ? {m} {m,} {m,n}.
  std::pair<uint32_t, uint32_t> parse_repetition() {
    char op = text_[pos_++];
    if (op == '*') return {0, kUnbounded};
    if (op == '+') return {1, kUnbounded};
    if (op == '?') return {0, 1};
    skip_space(true);
    uint32_t min = parse_bound(), max = min;
    skip_space(true);
    if (peek() == ',') {
      ++pos_;
      skip_space(true);
      max = (peek() >= '0' && peek() <= '9') ? parse_bound() : kUnbounded;
      skip_space(true);
    }
    if (peek() != '}')
      fail(pos_, "expected '}' to end the repetition");
    ++pos_;
    if (max < min)
      fail(pos_ - 1, "repetition {" + std::to_string(min) + "," + std::to_string(max) +
                         "}: the maximum is below the minimum");
    return {min, max};
  }

  uint32_t parse_bound() {
    size_t start = pos_;
    if (!(peek() >= '0' && peek() <= '9'))
      fail(start, "expected a number in the repetition");
    uint64_t n = 0;
    while (peek() >= '0' && peek() <= '9') {
      n = n * 10 + (peek() - '0');
      if (n > kMaxRepetition)
        fail(start, "repetition bound above the limit of " + std::to_string(kMaxRepetition));
      ++pos_;
    }
    return static_cast<uint32_t>(n);
  }

  Expr parse_literal() {
    Expr e = make(Expr::Literal, pos_++);
    for (;;) {
      if (at_end())
        fail(e.offset, "unterminated string literal");
      if (peek() == '"')
        break;
      e.literal.push_back(parse_char());
    }
    ++pos_;
    return e;
  }

  Expr parse_class() {
    Expr e = make(Expr::Class, pos_++);
    if (peek() == '^') {
      e.negated = true;
      ++pos_;
    }
    for (;;) {
      if (at_end())
        fail(e.offset, "unterminated character class");
      if (peek() == ']')
        break;
      size_t first_at = pos_;
      uint32_t first = parse_char(), last = first;
      if (peek() == '-' && !at_end(1) && peek(1) != ']') {
        ++pos_;
        last = parse_char();
        if (last < first)
          fail(first_at, "character range " + code_point_name(first) + "-" +
                             code_point_name(last) + " is backwards");
      }
      e.ranges.push_back({first, last});
    }
    ++pos_;
    return e;
  }

  // One character of a literal or class: an escape or a UTF-8 code point.
  uint32_t parse_char() {
    size_t start = pos_;
    if (peek() != '\\') {
      size_t len;
      uint32_t cp = unicode::decode_at(text_, pos_, &len);
      pos_ += len;
      return cp;
    }
    ++pos_;
    if (at_end())
      fail(start, "unterminated escape");
    char c = text_[pos_++];
    switch (c) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case '\\': case '"': case '[': case ']': return static_cast<uint32_t>(c);
    case 'x': return parse_hex(start, 2);
    case 'u': return parse_hex(start, 4);
    case 'U': return parse_hex(start, 8);
    default: break;
    }
    if ((static_cast<unsigned char>(c) & 0x80) != 0)
      fail(start, "unknown escape (expected one of \\n \\t \\r \\\\ \\\" \\[ \\] \\x \\u \\U)");
    fail(start, std::string("unknown escape '\\") + c +
                    "' (expected one of \\n \\t \\r \\\\ \\\" \\[ \\] \\x \\u \\U)");
  }

  uint32_t parse_hex(size_t start, int digits) {
    uint64_t cp = 0;
    for (int i = 0; i < digits; ++i) {
      int v = hex_value(peek());
      if (v < 0)
        fail(start, "expected " + std::to_string(digits) + " hex digits in the escape");
      cp = cp * 16 + v;
      ++pos_;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      fail(start, "escape of " + code_point_name(static_cast<uint32_t>(cp)) +
                      ", which is no Unicode scalar value");
    return static_cast<uint32_t>(cp);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

} // namespace

std::string position(std::string_view text, size_t offset) {
  auto [line, column] = location(text, offset);
  return "GBNF line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::vector<RuleDef> parse(std::string_view text) {
  if (text.size() > kMaxGrammarBytes)
    throw GrammarError("grammar text of " + std::to_string(text.size()) +
                       " bytes is over the limit of " + std::to_string(kMaxGrammarBytes));
  size_t valid = unicode::valid_utf8_prefix(text);
  if (valid != text.size())
    fail_at(text, valid, "invalid UTF-8");
  return Parser(text).parse_grammar();
}

} // namespace llmserve::grammar::gbnf
