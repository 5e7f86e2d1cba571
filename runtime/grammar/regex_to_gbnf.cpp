#include "grammar/regex_to_gbnf.h"

#include "grammar/regex_syntax.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

namespace llmserve::grammar {

namespace {

using Kind = RegexNode::Kind;

// A GBNF expression with the lengths of the texts it matches.
struct Piece {
  enum Precedence { Atom, Sequence, Alternation };
  std::string gbnf; // empty: matches only the empty text
  Precedence precedence = Atom;
  size_t min_chars = 0, max_chars = 0;
};

size_t add_lengths(size_t a, size_t b) {
  return a == RegexBody::kUnbounded || b == RegexBody::kUnbounded ? RegexBody::kUnbounded : a + b;
}

size_t multiply_length(size_t length, uint32_t times) {
  if (length == 0)
    return 0;
  if (length == RegexBody::kUnbounded || times == RegexNode::kUnbounded)
    return RegexBody::kUnbounded;
  return length * times;
}

std::string parenthesized(const Piece &piece, Piece::Precedence needed) {
  return piece.precedence > needed ? "(" + piece.gbnf + ")" : piece.gbnf;
}

// How one code point is written inside a JSON string.
std::string json_escaped(char32_t cp) {
  switch (cp) {
  case '"': return "\\\"";
  case '\\': return "\\\\";
  case '\b': return "\\b";
  case '\f': return "\\f";
  case '\n': return "\\n";
  case '\r': return "\\r";
  case '\t': return "\\t";
  default: break;
  }
  std::string out;
  if (cp < 0x20) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(cp));
    out = hex;
  } else {
    unicode::append_utf8(out, cp);
  }
  return out;
}

std::string encoded(char32_t cp, RegexText text) {
  if (text == RegexText::JsonString)
    return json_escaped(cp);
  std::string out;
  unicode::append_utf8(out, cp);
  return out;
}

// One code point of `set` as written inside a JSON string, as alternatives:
// the ones that need no escape as a class, each other one as its escape.
std::vector<std::string> json_chars(const CodepointSet &set) {
  const CodepointSet plain = complement({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  std::vector<std::string> alternatives;
  CodepointSet unescaped = intersection(set, plain);
  if (!unescaped.empty())
    alternatives.push_back(gbnf_class(unescaped));
  // Controls without a short escape are \u00XX: grouped by the first X.
  CodepointSet last_digits[2];
  for (const CodepointRange &r : intersection(set, complement(plain)))
    for (char32_t cp = r.first; cp <= r.last; ++cp) {
      std::string escape = json_escaped(cp);
      if (escape.size() == 2) {
        alternatives.push_back(gbnf_literal(escape));
      } else {
        char32_t digit = static_cast<unsigned char>("0123456789abcdef"[cp & 0xF]);
        last_digits[cp >> 4].push_back({digit, digit});
      }
    }
  for (int first = 0; first < 2; ++first)
    if (!last_digits[first].empty())
      alternatives.push_back(gbnf_literal(first ? "\\u001" : "\\u000") + " " +
                             gbnf_class(normalized(last_digits[first])));
  return alternatives;
}

bool single(const RegexNode &node) {
  return node.kind == Kind::Chars && node.chars.size() == 1 && node.chars[0].first == node.chars[0].last;
}

class Emitter {
public:
  // `caps`, when given: the upper bounds given to the repetitions that have
  // none, in the order they appear.
  Emitter(RegexText text, const std::vector<uint32_t> *caps) : text_(text), caps_(caps) {}

  // The repetitions without an upper bound met by emit().
  size_t open_repetitions() const { return open_; }

  // nullopt: the node matches no text at all.
  std::optional<Piece> emit(const RegexNode &node) {
    switch (node.kind) {
    case Kind::Chars: return chars(node.chars);
    case Kind::Sequence: return sequence(node.children);
    case Kind::Alternation: return alternation(node.children);
    case Kind::Repeat: return repeat(node);
    }
    return std::nullopt;
  }

private:
  std::optional<Piece> chars(const CodepointSet &set) const {
    if (set.empty())
      return std::nullopt;
    Piece piece;
    piece.min_chars = piece.max_chars = 1;
    if (set.size() == 1 && set[0].first == set[0].last) {
      piece.gbnf = gbnf_literal(encoded(set[0].first, text_));
    } else if (text_ == RegexText::Raw) {
      piece.gbnf = gbnf_class(set);
    } else {
      std::vector<std::string> alternatives = json_chars(set);
      piece.gbnf = gbnf_alternatives(alternatives);
      if (alternatives.size() > 1)
        piece.precedence = Piece::Alternation;
    }
    return piece;
  }

  std::optional<Piece> sequence(const std::vector<RegexNode> &children) {
    Piece out;
    std::string literal; // consecutive single characters, merged
    size_t parts = 0;
    auto append = [&](const std::string &gbnf, Piece::Precedence precedence) {
      out.gbnf += (out.gbnf.empty() ? "" : " ") + gbnf;
      out.precedence = ++parts > 1 ? Piece::Sequence : precedence;
    };
    auto flush = [&]() {
      if (!literal.empty())
        append(gbnf_literal(literal), Piece::Atom); // a quantifier repeats a whole literal
      literal.clear();
    };
    for (const RegexNode &child : children) {
      if (single(child)) {
        literal += encoded(child.chars[0].first, text_);
        out.min_chars = add_lengths(out.min_chars, 1);
        out.max_chars = add_lengths(out.max_chars, 1);
        continue;
      }
      std::optional<Piece> piece = emit(child);
      if (!piece)
        return std::nullopt;
      out.min_chars = add_lengths(out.min_chars, piece->min_chars);
      out.max_chars = add_lengths(out.max_chars, piece->max_chars);
      if (piece->gbnf.empty())
        continue;
      flush();
      append(parenthesized(*piece, Piece::Sequence),
             piece->precedence == Piece::Alternation ? Piece::Atom : piece->precedence);
    }
    flush();
    return out;
  }

  std::optional<Piece> alternation(const std::vector<RegexNode> &children) {
    std::vector<Piece> pieces;
    bool empty = false;
    Piece out;
    for (const RegexNode &child : children) {
      std::optional<Piece> piece = emit(child);
      if (!piece)
        continue;
      bool first = !empty && pieces.empty();
      out.min_chars = first ? piece->min_chars : std::min(out.min_chars, piece->min_chars);
      out.max_chars = first ? piece->max_chars : std::max(out.max_chars, piece->max_chars);
      if (piece->gbnf.empty())
        empty = true;
      else
        pieces.push_back(std::move(*piece));
    }
    if (pieces.empty())
      return empty ? std::optional<Piece>(out) : std::nullopt;
    if (pieces.size() == 1 && !empty)
      return pieces[0];
    std::vector<std::string> texts;
    for (const Piece &piece : pieces)
      texts.push_back(piece.gbnf);
    out.gbnf = gbnf_alternatives(texts);
    out.precedence = Piece::Alternation;
    if (empty) { // an empty alternative makes the rest optional
      out.gbnf = "(" + out.gbnf + ")?";
      out.precedence = Piece::Atom;
    }
    return out;
  }

  std::optional<Piece> repeat(const RegexNode &node) {
    uint32_t min = node.min, max = node.max;
    if (max == RegexNode::kUnbounded) {
      if (caps_)
        max = std::max(min, (*caps_)[open_]);
      ++open_;
    }
    std::optional<Piece> child = emit(node.children[0]);
    Piece out;
    if (!child)
      return min == 0 ? std::optional<Piece>(out) : std::nullopt;
    out.min_chars = multiply_length(child->min_chars, min);
    out.max_chars = multiply_length(child->max_chars, max);
    if (child->gbnf.empty() || max == 0)
      return out;
    if (min == 1 && max == 1)
      return child;
    std::optional<uint64_t> bound;
    if (max != RegexNode::kUnbounded)
      bound = max;
    std::string suffix = gbnf_repetition(min, bound);
    out.gbnf = parenthesized(*child, Piece::Atom) + suffix;
    out.precedence = Piece::Sequence; // repeated again, it needs parentheses
    return out;
  }

  RegexText text_;
  const std::vector<uint32_t> *caps_;
  size_t open_ = 0;
};

// Upper bounds for the open-ended repetitions of `tree` that keep every
// match within max_chars: the largest bound all can share, then more for
// each in turn, by steps that double while it fits and halve when not.
std::vector<uint32_t> caps_within(const RegexNode &tree, RegexText text, size_t max_chars, size_t repetitions) {
  std::vector<uint32_t> caps(repetitions, 0), steps(repetitions, 1);
  auto longest = [&]() { return Emitter(text, &caps).emit(tree)->max_chars; };
  if (longest() > max_chars)
    throw GrammarError("regex: the pattern has matches longer than " + std::to_string(max_chars) + " characters");
  uint32_t low = 0, high = static_cast<uint32_t>(std::min<size_t>(max_chars, kMaxRepetition));
  while (low < high) { // lengths only grow with the bound
    uint32_t middle = low + (high - low + 1) / 2;
    caps.assign(repetitions, middle);
    if (longest() <= max_chars)
      low = middle;
    else
      high = middle - 1;
  }
  caps.assign(repetitions, low);
  size_t length = longest();
  for (bool growing = true; growing;) {
    growing = false;
    for (size_t i = 0; i < repetitions; ++i) {
      if (steps[i] == 0)
        continue;
      growing = true;
      caps[i] += steps[i];
      size_t grown = longest();
      if (grown <= max_chars && grown > length) {
        length = grown;
        steps[i] = std::min<uint32_t>(steps[i] * 2, kMaxRepetition);
      } else {
        caps[i] -= steps[i];
        steps[i] /= 2;
      }
    }
  }
  return caps;
}

} // namespace

RegexBody regex_rule_body(std::string_view pattern, RegexText text, size_t max_chars) {
  RegexNode tree = parse_regex(pattern);
  Emitter uncapped(text, nullptr);
  std::optional<Piece> piece = uncapped.emit(tree);
  if (!piece)
    throw GrammarError("regex: the pattern matches nothing");
  if (piece->max_chars > max_chars) {
    std::vector<uint32_t> caps = caps_within(tree, text, max_chars, uncapped.open_repetitions());
    piece = Emitter(text, &caps).emit(tree);
  }
  RegexBody body;
  body.gbnf = piece->gbnf.empty() ? "\"\"" : piece->gbnf;
  body.min_chars = piece->min_chars;
  body.max_chars = piece->max_chars;
  return body;
}

std::string regex_to_gbnf(std::string_view pattern) {
  return "root ::= " + regex_rule_body(pattern, RegexText::Raw).gbnf + "\n";
}

} // namespace llmserve::grammar
