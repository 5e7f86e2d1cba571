#include "tokenizer/pattern.h"

#include "tokenizer/json_fields.h"

#include <stdexcept>

namespace llmserve {
namespace {

// Calls on_match for each occurrence of a non-empty literal, leftmost first.
template <typename F>
void each_occurrence(std::string_view text, std::string_view literal, F on_match) {
  for (size_t hit = text.find(literal); hit != std::string_view::npos;
       hit = text.find(literal, hit + literal.size()))
    on_match(Span{hit, hit + literal.size()});
}

} // namespace

Pattern Pattern::literal(std::string text) {
  // Hugging Face compiles a literal as an escaped regex; the empty one matches
  // (emptily) at every character boundary, which Oniguruma does as well.
  if (text.empty())
    return regex("");
  Pattern p;
  p.literal_ = std::move(text);
  return p;
}

Pattern Pattern::regex(const std::string &source) {
  Pattern p;
  p.known_ = known_pattern(source);
  if (!p.known_)
    p.regex_.emplace(source);
  return p;
}

Pattern Pattern::from_json(const nlohmann::json &pattern, const std::string &where) {
  if (pattern.is_object() && pattern.size() == 1) {
    if (pattern.contains("String"))
      return literal(json_string(pattern, "String", where));
    if (pattern.contains("Regex")) {
      std::string source = json_string(pattern, "Regex", where);
      try {
        return regex(source);
      } catch (const std::invalid_argument &e) {
        throw std::invalid_argument(where + ".Regex: " + e.what());
      }
    }
  }
  throw std::invalid_argument(where + ": expected {\"String\": ...} or {\"Regex\": ...}, got " +
                              pattern.dump());
}

void Pattern::find(std::string_view text, std::vector<Span> &out) const {
  // Hugging Face looks for no match in an empty text, even an empty one.
  if (text.empty())
    return;
  if (known_)
    match_known(*known_, text, out);
  else if (regex_)
    regex_->find_all(text, out);
  else
    each_occurrence(text, literal_, [&](Span m) { out.push_back(m); });
}

std::string Pattern::replace(std::string_view text, std::string_view content) const {
  std::string out;
  size_t pos = 0;
  auto replace_match = [&](Span m) {
    out.append(text.data() + pos, m.start - pos).append(content);
    pos = m.end;
  };
  if (!literal_.empty()) {
    each_occurrence(text, literal_, replace_match);
  } else {
    std::vector<Span> matches;
    find(text, matches);
    for (const Span &m : matches)
      replace_match(m);
  }
  return out.append(text.data() + pos, text.size() - pos);
}

} // namespace llmserve
