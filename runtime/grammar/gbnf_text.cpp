#include "grammar/gbnf_text.h"

#include "tokenizer/unicode.h"

#include <algorithm>
#include <cstdio>

namespace llmserve::grammar {

namespace {

constexpr char32_t kSurrogateFirst = 0xD800, kSurrogateLast = 0xDFFF;

// `cp` as it appears inside a literal ("...") or a class ([...]): ASCII
// controls, the syntax characters and non-ASCII in classes escaped, the rest
// as UTF-8.
void append_char(std::string &out, char32_t cp, bool in_class) {
  switch (cp) {
  case '\n': out += "\\n"; return;
  case '\r': out += "\\r"; return;
  case '\t': out += "\\t"; return;
  case '\\': out += "\\\\"; return;
  case '"': out += "\\\""; return;
  default: break;
  }
  if (in_class && (cp == ']' || cp == '[')) {
    out += '\\';
    out += static_cast<char>(cp);
    return;
  }
  // In a class '-' and '^' are written as escapes so that no position makes
  // them a range or a negation.
  if (cp < 0x20 || cp == 0x7F || (in_class && (cp == '-' || cp == '^'))) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned>(cp));
    out += hex;
    return;
  }
  // Ranges of a class often start or end at invisible code points.
  if (in_class && cp >= 0x80) {
    char hex[16];
    if (cp > 0xFFFF)
      std::snprintf(hex, sizeof hex, "\\U%08X", static_cast<unsigned>(cp));
    else
      std::snprintf(hex, sizeof hex, "\\u%04X", static_cast<unsigned>(cp));
    out += hex;
    return;
  }
  unicode::append_utf8(out, cp);
}

} // namespace

CodepointSet normalized(CodepointSet ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodepointRange &a, const CodepointRange &b) { return a.first < b.first; });
  CodepointSet out;
  for (const CodepointRange &r : ranges) {
    if (!out.empty() && r.first <= out.back().last + 1)
      out.back().last = std::max(out.back().last, r.last);
    else
      out.push_back(r);
  }
  return out;
}

CodepointSet complement(const CodepointSet &set) {
  CodepointSet out;
  char32_t next = 0;
  auto add = [&](char32_t first, char32_t last) {
    // Surrogates are not scalar values: no UTF-8 text contains them.
    if (first < kSurrogateFirst && last >= kSurrogateFirst) {
      out.push_back({first, kSurrogateFirst - 1});
      first = kSurrogateLast + 1;
    }
    if (first >= kSurrogateFirst && first <= kSurrogateLast)
      first = kSurrogateLast + 1;
    if (first <= last)
      out.push_back({first, last});
  };
  for (const CodepointRange &r : set) {
    if (r.first > next)
      add(next, r.first - 1);
    next = r.last + 1;
  }
  if (next <= kMaxCodepoint)
    add(next, kMaxCodepoint);
  return out;
}

CodepointSet intersection(const CodepointSet &a, const CodepointSet &b) {
  CodepointSet out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    char32_t first = std::max(a[i].first, b[j].first);
    char32_t last = std::min(a[i].last, b[j].last);
    if (first <= last)
      out.push_back({first, last});
    if (a[i].last < b[j].last)
      ++i;
    else
      ++j;
  }
  return out;
}

std::string gbnf_literal(std::string_view text) {
  if (unicode::valid_utf8_prefix(text) != text.size())
    throw GrammarError("gbnf: a literal is not valid UTF-8");
  std::string out = "\"";
  for (size_t pos = 0, len = 0; pos < text.size(); pos += len)
    append_char(out, unicode::decode_at(text, pos, &len), false);
  out += '"';
  return out;
}

std::string gbnf_class(const CodepointSet &set) {
  std::string out = "[";
  for (const CodepointRange &r : set) {
    append_char(out, r.first, true);
    if (r.last != r.first) {
      if (r.last != r.first + 1)
        out += '-';
      append_char(out, r.last, true);
    }
  }
  out += ']';
  return out;
}

std::string gbnf_repetition(uint64_t min, std::optional<uint64_t> max) {
  if (max && *max == min)
    return min == 1 ? "" : "{" + std::to_string(min) + "}";
  if (!max)
    return min == 0 ? "*" : min == 1 ? "+" : "{" + std::to_string(min) + ",}";
  if (min == 0 && *max == 1)
    return "?";
  return "{" + std::to_string(min) + "," + std::to_string(*max) + "}";
}

std::string gbnf_alternatives(const std::vector<std::string> &expressions) {
  std::string out;
  for (const std::string &e : expressions)
    out += (out.empty() ? "" : " | ") + e;
  return out;
}

std::string gbnf_rule_name(std::string_view name) {
  std::string out(name);
  for (char &c : out) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok)
      c = '-';
  }
  return out;
}

} // namespace llmserve::grammar
