#include "grammar/regex_syntax.h"

#include "tokenizer/unicode.h"

#include <string>

namespace llmserve::grammar {

namespace {

using Kind = RegexNode::Kind;

// Groups nested deeper than this are refused: the GBNF written for them
// nests up to twice as deep, and grammar.h bounds nesting at kMaxNesting.
constexpr int kMaxGroupDepth = static_cast<int>(kMaxNesting / 2);

// A shorthand class as both readings understand it: `narrow` is what
// ECMAScript and Python both match, `wide` what either of them matches. A
// class uses `narrow`, a negated class the complement of `wide`, so neither
// reading ever matches less than the grammar.
struct Shorthand {
  CodepointSet narrow, wide;
};

const CodepointSet kDigits = {{'0', '9'}};
// Python's \d also takes the non-ASCII decimal digits, the first at U+0660.
const CodepointSet kDigitsWide = {{'0', '9'}, {0x660, kMaxCodepoint}};
const CodepointSet kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// Python's \w also takes non-ASCII letters and digits.
const CodepointSet kWordWide = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}, {0x80, kMaxCodepoint}};
const CodepointSet kSpace = {{'\t', '\r'}, {' ', ' '}};
// ECMAScript's WhiteSpace and LineTerminator together with Python's
// str.isspace (which adds U+001C-U+001F and U+0085).
const CodepointSet kSpaceWide = {{'\t', '\r'}, {0x1C, 0x20},     {0x85, 0x85},     {0xA0, 0xA0},
                                 {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
                                 {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// `.`: ECMAScript stops at every line terminator, Python only at \n.
const CodepointSet kDot = complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});

Shorthand shorthand(char letter) {
  switch (letter) {
  case 'd': return {kDigits, kDigitsWide};
  case 'D': return {complement(kDigitsWide), complement(kDigits)};
  case 'w': return {kWord, kWordWide};
  case 'W': return {complement(kWordWide), complement(kWord)};
  case 's': return {kSpace, kSpaceWide};
  default: return {complement(kSpaceWide), complement(kSpace)}; // 'S'
  }
}

RegexNode chars_node(CodepointSet chars) {
  RegexNode node;
  node.kind = Kind::Chars;
  node.chars = std::move(chars);
  return node;
}

uint64_t expanded_size(const RegexNode &node) {
  switch (node.kind) {
  case Kind::Chars: return 1;
  case Kind::Repeat: {
    uint64_t times = node.max == RegexNode::kUnbounded ? node.min + 1 : node.max;
    return expanded_size(node.children[0]) * (times == 0 ? 1 : times);
  }
  default: {
    uint64_t total = 0;
    for (const RegexNode &child : node.children)
      total += expanded_size(child);
    return total;
  }
  }
}

// One escape or one character: a code point, or a shorthand class.
struct ClassItem {
  bool is_set = false;
  char32_t cp = 0;
  Shorthand set;
};

class Parser {
public:
  explicit Parser(std::string_view pattern) : p_(pattern) {}

  RegexNode parse() {
    if (unicode::valid_utf8_prefix(p_) != p_.size())
      fail("invalid UTF-8", unicode::valid_utf8_prefix(p_));
    RegexNode root = alternation(0);
    if (pos_ < p_.size())
      fail("unmatched ')'", pos_);
    if (expanded_size(root) > kMaxElements)
      throw GrammarError("regex: the pattern is too large once its repetitions are expanded (over " +
                         std::to_string(kMaxElements) + " characters)");
    return root;
  }

private:
  [[noreturn]] void fail(const std::string &what, size_t at) const {
    throw GrammarError("regex: " + what + " at offset " + std::to_string(at));
  }
  [[noreturn]] void unsupported(const std::string &what, size_t at) const {
    throw GrammarError("regex: " + what + " at offset " + std::to_string(at) + " is not supported");
  }

  bool more() const { return pos_ < p_.size(); }
  char peek() const { return p_[pos_]; }
  bool peek_is(std::string_view s) const { return p_.substr(pos_, s.size()) == s; }

  char32_t next_codepoint() {
    size_t len = 0;
    char32_t cp = unicode::decode_at(p_, pos_, &len);
    pos_ += len;
    return cp;
  }

  RegexNode alternation(int depth) {
    RegexNode first = sequence(depth);
    if (!more() || peek() != '|')
      return first;
    RegexNode alt;
    alt.kind = Kind::Alternation;
    alt.children.push_back(std::move(first));
    while (more() && peek() == '|') {
      ++pos_;
      alt.children.push_back(sequence(depth));
    }
    return alt;
  }

  RegexNode sequence(int depth) {
    RegexNode seq;
    seq.kind = Kind::Sequence;
    while (more() && peek() != '|' && peek() != ')') {
      size_t at = pos_;
      if (peek() == '^') {
        // Matching is over the whole text, so ^ can only open it.
        if (depth > 0 || !seq.children.empty())
          unsupported("'^' inside the pattern", at);
        ++pos_;
        continue;
      }
      if (peek() == '$') {
        ++pos_;
        if (depth > 0 || (more() && peek() != '|'))
          unsupported("'$' inside the pattern", at);
        break;
      }
      RegexNode node = atom(depth);
      quantifier(node);
      seq.children.push_back(std::move(node));
    }
    if (seq.children.size() == 1)
      return std::move(seq.children[0]);
    return seq;
  }

  RegexNode atom(int depth) {
    size_t at = pos_;
    char c = peek();
    switch (c) {
    case '(': return group(depth);
    case '[': return char_class();
    case '.': ++pos_; return chars_node(kDot);
    case '*': case '+': case '?': fail(std::string("nothing to repeat before '") + c + "'", at);
    case '{': fail("'{' must be escaped when it does not follow an atom", at);
    case '\\': {
      ClassItem item = escape(false);
      return item.is_set ? chars_node(item.set.narrow) : chars_node({{item.cp, item.cp}});
    }
    default: {
      char32_t cp = next_codepoint();
      return chars_node({{cp, cp}});
    }
    }
  }

  RegexNode group(int depth) {
    size_t at = pos_;
    if (depth + 1 > kMaxGroupDepth)
      fail("groups nested deeper than " + std::to_string(kMaxGroupDepth), at);
    ++pos_;
    if (peek_is("?:")) {
      pos_ += 2;
    } else if (peek_is("?=") || peek_is("?!") || peek_is("?<=") || peek_is("?<!")) {
      unsupported("lookaround", at);
    } else if (peek_is("?<")) {
      // A named group is a plain group here: its name only matters to
      // backreferences, which are refused.
      size_t close = p_.find('>', pos_);
      if (close == std::string_view::npos)
        fail("unterminated group name", at);
      pos_ = close + 1;
    } else if (peek_is("?")) {
      unsupported("group syntax '(?" + std::string(p_.substr(pos_ + 1, 1)) + "'", at);
    }
    RegexNode inner = alternation(depth + 1);
    if (!more() || peek() != ')')
      fail("unterminated group", at);
    ++pos_;
    return inner;
  }

  void quantifier(RegexNode &node) {
    if (!more())
      return;
    size_t at = pos_;
    uint32_t min = 0, max = 0;
    switch (peek()) {
    case '*': min = 0, max = RegexNode::kUnbounded; ++pos_; break;
    case '+': min = 1, max = RegexNode::kUnbounded; ++pos_; break;
    case '?': min = 0, max = 1; ++pos_; break;
    case '{':
      counted(min, max);
      break;
    default: return;
    }
    if (more() && peek() == '?') // lazy: the same language
      ++pos_;
    if (more() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{'))
      fail("a quantifier after a quantifier", pos_);
    if (max != RegexNode::kUnbounded && min > max)
      fail("repetition {" + std::to_string(min) + "," + std::to_string(max) + "} out of order", at);
    RegexNode repeat;
    repeat.kind = Kind::Repeat;
    repeat.min = min;
    repeat.max = max;
    repeat.children.push_back(std::move(node));
    node = std::move(repeat);
  }

  // {m}, {m,} or {m,n}.
  void counted(uint32_t &min, uint32_t &max) {
    size_t at = pos_;
    ++pos_;
    bool has_min = number(min, at);
    if (!has_min)
      fail("'{' must be escaped when it does not start a quantifier {m,n}", at);
    max = min;
    if (more() && peek() == ',') {
      ++pos_;
      max = RegexNode::kUnbounded;
      uint32_t n = 0;
      if (number(n, at))
        max = n;
    }
    if (!more() || peek() != '}')
      fail("'{' must be escaped when it does not start a quantifier {m,n}", at);
    ++pos_;
  }

  bool number(uint32_t &out, size_t quantifier_at) {
    size_t start = pos_;
    uint64_t value = 0;
    while (more() && peek() >= '0' && peek() <= '9') {
      value = value * 10 + static_cast<uint64_t>(peek() - '0');
      if (value > kMaxRepetition)
        fail("a repetition count over " + std::to_string(kMaxRepetition), quantifier_at);
      ++pos_;
    }
    out = static_cast<uint32_t>(value);
    return pos_ > start;
  }

  uint32_t hex_digits(int count, size_t at) {
    uint32_t value = 0;
    for (int i = 0; i < count; ++i, ++pos_) {
      char c = more() ? peek() : '\0';
      int digit = c >= '0' && c <= '9' ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0)
        fail("malformed hexadecimal escape", at);
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    return value;
  }

  // After a backslash, in a class or not (\b differs).
  ClassItem escape(bool in_class) {
    size_t at = pos_;
    ++pos_;
    if (!more())
      fail("trailing backslash", at);
    char c = peek();
    ClassItem item;
    if (c == 'd' || c == 'D' || c == 'w' || c == 'W' || c == 's' || c == 'S') {
      ++pos_;
      item.is_set = true;
      item.set = shorthand(c);
      return item;
    }
    switch (c) {
    case 'n': item.cp = '\n'; break;
    case 'r': item.cp = '\r'; break;
    case 't': item.cp = '\t'; break;
    case 'f': item.cp = '\f'; break;
    case 'v': item.cp = '\v'; break;
    case '0':
      if (pos_ + 1 < p_.size() && p_[pos_ + 1] >= '0' && p_[pos_ + 1] <= '9')
        unsupported("octal escape", at);
      item.cp = 0;
      break;
    case 'x': ++pos_; item.cp = hex_digits(2, at); return item;
    case 'u':
      ++pos_;
      if (more() && peek() == '{')
        unsupported("'\\u{...}' (a /u flag escape)", at);
      item.cp = hex_digits(4, at);
      if (item.cp >= 0xD800 && item.cp <= 0xDFFF)
        unsupported("surrogate escape", at);
      return item;
    case 'b':
      if (!in_class)
        unsupported("word boundary '\\b'", at);
      item.cp = '\b';
      break;
    case 'B': unsupported("word boundary '\\B'", at);
    case 'k': unsupported("backreference '\\k'", at);
    case 'p': case 'P': unsupported("Unicode property escape", at);
    case 'c': unsupported("control escape '\\c'", at);
    default:
      if (c >= '1' && c <= '9')
        unsupported(std::string("backreference '\\") + c + "'", at);
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        fail(std::string("unknown escape '\\") + c + "'", at);
      item.cp = next_codepoint(); // an escaped symbol stands for itself
      return item;
    }
    ++pos_;
    return item;
  }

  ClassItem class_item() {
    if (peek() == '\\')
      return escape(true);
    ClassItem item;
    item.cp = next_codepoint();
    return item;
  }

  RegexNode char_class() {
    size_t at = pos_;
    ++pos_;
    bool negated = more() && peek() == '^';
    if (negated)
      ++pos_;
    // ECMAScript reads "[]" and "[^]" as empty and full; Python as a ']'.
    if (more() && peek() == ']')
      unsupported(negated ? "'[^]'" : "'[]'", at);
    CodepointSet narrow, wide;
    auto add = [&](const CodepointSet &n, const CodepointSet &w) {
      narrow.insert(narrow.end(), n.begin(), n.end());
      wide.insert(wide.end(), w.begin(), w.end());
    };
    while (more() && peek() != ']') {
      size_t item_at = pos_;
      ClassItem first = class_item();
      bool range = more() && peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']';
      if (!range) {
        if (first.is_set)
          add(first.set.narrow, first.set.wide);
        else
          add({{first.cp, first.cp}}, {{first.cp, first.cp}});
        continue;
      }
      ++pos_;
      ClassItem last = class_item();
      if (first.is_set || last.is_set)
        unsupported("a range with a class shorthand as an end", item_at);
      if (first.cp > last.cp)
        fail("range out of order", item_at);
      add({{first.cp, last.cp}}, {{first.cp, last.cp}});
    }
    if (!more())
      fail("unterminated character class", at);
    ++pos_;
    return chars_node(negated ? complement(normalized(wide)) : normalized(narrow));
  }

  std::string_view p_;
  size_t pos_ = 0;
};

} // namespace

RegexNode parse_regex(std::string_view pattern) { return Parser(pattern).parse(); }

} // namespace llmserve::grammar
