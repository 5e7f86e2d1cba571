#include "grammar/gbnf_rename.h"

#include <algorithm>

namespace llmserve::grammar {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

// The end of the quoted literal or class that starts at `begin`, its closing
// character included (or the end of the text, for the parser to report).
size_t skip_quoted(std::string_view text, size_t begin, char close) {
  size_t i = begin + 1;
  while (i < text.size() && text[i] != close)
    i += text[i] == '\\' ? 2 : 1;
  return std::min(i + 1, text.size());
}

} // namespace

std::string gbnf_with_rule_prefix(std::string_view gbnf, std::string_view prefix) {
  std::string out;
  out.reserve(gbnf.size() * 2);
  size_t i = 0;
  while (i < gbnf.size()) {
    const char c = gbnf[i];
    size_t end = i + 1;
    if (c == '"' || c == '[') {
      end = skip_quoted(gbnf, i, c == '"' ? '"' : ']');
    } else if (c == '#' || c == '{') {
      // A comment to the end of its line; a repetition's bounds, {2,5}.
      end = gbnf.find(c == '#' ? '\n' : '}', i);
      end = end == std::string_view::npos ? gbnf.size() : end;
    } else if (is_name_char(c)) {
      while (end < gbnf.size() && is_name_char(gbnf[end]))
        ++end;
      out += prefix;
    }
    out.append(gbnf.substr(i, end - i));
    i = end;
  }
  return out;
}

} // namespace llmserve::grammar
