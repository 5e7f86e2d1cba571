#include "tokenizer/known_patterns.h"

#include "tokenizer/unicode.h"

namespace llmserve {
namespace {

// What the patterns distinguish about a character.
enum CharClass : uint8_t {
  kLetter,  // \p{L}
  kNumber,  // \p{N}
  kSpace,   // \s other than \r and \n
  kNewline, // \r or \n
  kOther,   // [^\s\p{L}\p{N}]
};

struct AsciiClasses {
  CharClass of[128];
  constexpr AsciiClasses() : of() {
    for (int c = 0; c < 128; ++c) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        of[c] = kLetter;
      else if (c >= '0' && c <= '9')
        of[c] = kNumber;
      else if (c == '\r' || c == '\n')
        of[c] = kNewline;
      else if (c == ' ' || (c >= '\t' && c <= '\f'))
        of[c] = kSpace;
      else
        of[c] = kOther;
    }
  }
};
constexpr AsciiClasses kAscii;

// The text being split, read one code point at a time.
class Text {
public:
  explicit Text(std::string_view s) : s_(s) {}
  size_t size() const { return s_.size(); }
  std::string_view view() const { return s_; }
  char byte(size_t pos) const { return s_[pos]; }

  // Class of the character at pos (< size()); its length goes to *len.
  CharClass at(size_t pos, size_t *len) const {
    auto b = static_cast<unsigned char>(s_[pos]);
    if (b < 0x80) {
      *len = 1;
      return kAscii.of[b];
    }
    uint32_t cp = unicode::decode_at(s_, pos, len);
    if (unicode::is_letter(cp))
      return kLetter;
    if (unicode::is_number(cp))
      return kNumber;
    if (unicode::is_white_space(cp))
      return kSpace;
    return kOther;
  }
  bool is(size_t pos, CharClass c) const {
    size_t len;
    return pos < size() && at(pos, &len) == c;
  }
  // End of the run of characters of class c (or, with `any_space`, of either
  // whitespace class) starting at pos, at most `max_chars` long.
  size_t run(size_t pos, CharClass c, size_t max_chars = SIZE_MAX) const {
    size_t len;
    for (size_t n = 0; n < max_chars && pos < size() && at(pos, &len) == c; ++n)
      pos += len;
    return pos;
  }
  size_t whitespace_run(size_t pos) const {
    size_t len;
    while (pos < size()) {
      CharClass c = at(pos, &len);
      if (c != kSpace && c != kNewline)
        break;
      pos += len;
    }
    return pos;
  }
  // Start of the last character before end.
  size_t previous(size_t end) const {
    size_t p = end - 1;
    while ((static_cast<unsigned char>(s_[p]) & 0xC0) == 0x80)
      --p;
    return p;
  }

private:
  std::string_view s_;
};

bool is_ascii_letter_ci(char c, char lower) { return (c | 0x20) == lower; }

// 's 't 're 've 'm 'll 'd at pos (an apostrophe); 0 if none. Case-insensitive
// matching follows Unicode case folding, under which U+017F (long s) is 's'.
size_t match_contraction(const Text &t, size_t pos, bool ignore_case) {
  auto is = [&](size_t p, char lower) {
    if (p >= t.size())
      return false;
    return ignore_case ? is_ascii_letter_ci(t.byte(p), lower)
                       : t.byte(p) == lower;
  };
  if (is(pos + 1, 's') || is(pos + 1, 't') || is(pos + 1, 'm') ||
      is(pos + 1, 'd'))
    return pos + 2;
  if ((is(pos + 1, 'r') || is(pos + 1, 'v')) && is(pos + 2, 'e'))
    return pos + 3;
  if (is(pos + 1, 'l') && is(pos + 2, 'l'))
    return pos + 3;
  if (ignore_case && pos + 2 < t.size() && t.byte(pos + 1) == '\xC5' &&
      t.byte(pos + 2) == '\xBF')
    return pos + 3;
  return 0;
}

// \s+(?!\S)|\s+ at pos, a whitespace character: the run, less its last
// character when a non-space follows and that leaves something.
size_t match_whitespace_tail(const Text &t, size_t pos) {
  size_t end = t.whitespace_run(pos);
  if (end == t.size())
    return end;
  size_t last = t.previous(end);
  return last > pos ? last : end;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t match_gpt2(const Text &t, size_t pos) {
  if (t.byte(pos) == '\'') {
    if (size_t end = match_contraction(t, pos, false))
      return end;
  }
  size_t start = t.byte(pos) == ' ' && pos + 1 < t.size() ? pos + 1 : pos;
  size_t len;
  CharClass c = t.at(start, &len);
  if (c == kLetter || c == kNumber || c == kOther)
    return t.run(start, c);
  return match_whitespace_tail(t, pos);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,N}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with N = max_digits (3 for cl100k, 1 for Qwen2).
size_t match_cl100k(const Text &t, size_t pos, size_t max_digits) {
  if (t.byte(pos) == '\'') {
    if (size_t end = match_contraction(t, pos, true))
      return end;
  }
  size_t len;
  CharClass c = t.at(pos, &len);
  if (c == kLetter)
    return t.run(pos, kLetter);
  if ((c == kSpace || c == kOther) && t.is(pos + len, kLetter))
    return t.run(pos + len, kLetter);
  if (c == kNumber)
    return t.run(pos, kNumber, max_digits);
  size_t start = t.byte(pos) == ' ' && t.is(pos + 1, kOther) ? pos + 1 : pos;
  if (t.is(start, kOther))
    return t.run(t.run(start, kOther), kNewline);
  // Whitespace: through its last newline if it has one.
  size_t end = t.whitespace_run(pos);
  for (size_t p = end; p > pos;) {
    p = t.previous(p);
    if (t.byte(p) == '\n' || t.byte(p) == '\r')
      return p + 1;
  }
  return match_whitespace_tail(t, pos);
}

// o200k (GPT-4o) distinguishes letter case: its words are
// [^\r\n\p{L}\p{N}]?U*L+C? or [^\r\n\p{L}\p{N}]?U+L*C? with U = [Lu Lt Lm Lo M],
// L = [Ll Lm Lo M] and C an optional case-insensitive contraction.
enum O200kFlags : uint8_t {
  kUpperSet = 1,  // U
  kLowerSet = 2,  // L
  kPrefix = 4,    // [^\r\n\p{L}\p{N}]
  kSymbol = 8,    // [^\s\p{L}\p{N}]
};

uint8_t o200k_flags(const Text &t, size_t pos, size_t *len) {
  auto b = static_cast<unsigned char>(t.byte(pos));
  uint32_t cp = b < 0x80 ? (*len = 1, b) : unicode::decode_at(t.view(), pos, len);
  switch (unicode::category(cp)) {
  case unicode::Lu: case unicode::Lt: return kUpperSet;
  case unicode::Ll: return kLowerSet;
  case unicode::Lm: case unicode::Lo: return kUpperSet | kLowerSet;
  case unicode::Mn: case unicode::Mc: case unicode::Me:
    return kUpperSet | kLowerSet | kPrefix | kSymbol;
  case unicode::Nd: case unicode::Nl: case unicode::No: return 0;
  default:
    if (cp == '\r' || cp == '\n')
      return 0;
    return unicode::is_white_space(cp) ? kPrefix : kPrefix | kSymbol;
  }
}

// End of the run of characters whose flags include `flag`, from pos.
size_t o200k_run(const Text &t, size_t pos, uint8_t flag) {
  size_t len;
  while (pos < t.size() && (o200k_flags(t, pos, &len) & flag))
    pos += len;
  return pos;
}

size_t with_contraction(const Text &t, size_t end) {
  if (end < t.size() && t.byte(end) == '\'') {
    if (size_t c = match_contraction(t, end, true))
      return c;
  }
  return end;
}

// U*L+C? from start; 0 if it does not match.
size_t match_o200k_lower_word(const Text &t, size_t start) {
  size_t upper_end = o200k_run(t, start, kUpperSet), len;
  if (upper_end < t.size() && (o200k_flags(t, upper_end, &len) & kLowerSet))
    return with_contraction(t, o200k_run(t, upper_end, kLowerSet));
  // Backtracking U*: L+ takes the last character of the run that is in both.
  for (size_t p = upper_end; p > start;) {
    p = t.previous(p);
    if (o200k_flags(t, p, &len) & kLowerSet)
      return with_contraction(t, p + len);
  }
  return 0;
}

// U+L*C? from start; 0 if it does not match.
size_t match_o200k_upper_word(const Text &t, size_t start) {
  size_t upper_end = o200k_run(t, start, kUpperSet);
  if (upper_end == start)
    return 0;
  return with_contraction(t, o200k_run(t, upper_end, kLowerSet));
}

//   [^\r\n\p{L}\p{N}]?U*L+C?|[^\r\n\p{L}\p{N}]?U+L*C?|\p{N}{1,3}|
//    ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t match_o200k(const Text &t, size_t pos) {
  size_t len;
  uint8_t flags = o200k_flags(t, pos, &len);
  for (auto word : {match_o200k_lower_word, match_o200k_upper_word}) {
    if ((flags & kPrefix) && pos + len < t.size())
      if (size_t end = word(t, pos + len))
        return end;
    if (size_t end = word(t, pos))
      return end;
  }
  if (t.is(pos, kNumber))
    return t.run(pos, kNumber, 3);
  size_t start = t.byte(pos) == ' ' && pos + 1 < t.size() &&
                         (o200k_flags(t, pos + 1, &len) & kSymbol)
                     ? pos + 1
                     : pos;
  if (o200k_flags(t, start, &len) & kSymbol) {
    size_t end = o200k_run(t, start, kSymbol);
    while (end < t.size() && (t.byte(end) == '\r' || t.byte(end) == '\n' || t.byte(end) == '/'))
      ++end;
    return end;
  }
  size_t end = t.whitespace_run(pos);
  for (size_t p = end; p > pos;) {
    p = t.previous(p);
    if (t.byte(p) == '\n' || t.byte(p) == '\r')
      return p + 1;
  }
  return match_whitespace_tail(t, pos);
}

constexpr const char *kRegexes[] = {
    // Gpt2
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
    // Cl100k
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    // Qwen2
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    // O200k
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
};

} // namespace

std::optional<KnownPattern> known_pattern(std::string_view regex) {
  for (KnownPattern p : kKnownPatterns)
    if (regex == known_pattern_regex(p))
      return p;
  return std::nullopt;
}

const char *known_pattern_regex(KnownPattern pattern) {
  return kRegexes[static_cast<int>(pattern)];
}

void match_known(KnownPattern pattern, std::string_view text, std::vector<Span> &out) {
  Text t(text);
  for (size_t pos = 0; pos < text.size();) {
    size_t end = pattern == KnownPattern::Gpt2     ? match_gpt2(t, pos)
                 : pattern == KnownPattern::Cl100k ? match_cl100k(t, pos, 3)
                 : pattern == KnownPattern::Qwen2  ? match_cl100k(t, pos, 1)
                                                   : match_o200k(t, pos);
    out.push_back({pos, end});
    pos = end;
  }
}

} // namespace llmserve
