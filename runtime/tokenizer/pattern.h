// What a Split pre-tokenizer or a Replace normalizer or decoder looks for
// (tokenizer.json's {"String": ...} or {"Regex": ...}): a literal string or an
// Oniguruma regex, found as Hugging Face finds them; a known model family's
// regex takes its hand-written matcher (known_patterns.h).
#ifndef LLMSERVE_TOKENIZER_PATTERN_H
#define LLMSERVE_TOKENIZER_PATTERN_H

#include "tokenizer/known_patterns.h"
#include "tokenizer/regex.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

class Pattern {
public:
  static Pattern literal(std::string text);
  // Throws std::invalid_argument when Oniguruma cannot compile it.
  static Pattern regex(const std::string &source);
  // From {"String": text} or {"Regex": source}; errors name `where`.
  static Pattern from_json(const nlohmann::json &pattern, const std::string &where);

  // Appends the non-overlapping matches in valid UTF-8 text, in order.
  void find(std::string_view text, std::vector<Span> &out) const;
  // The text with each match replaced by `content`.
  std::string replace(std::string_view text, std::string_view content) const;

private:
  Pattern() = default;

  std::string literal_;              // when neither of these is set
  std::optional<KnownPattern> known_;
  std::optional<Regex> regex_;
};

} // namespace llmserve

#endif
