// A compiled Oniguruma regular expression, as Hugging Face's tokenizers
// compiles them (the `onig` crate: Oniguruma syntax, no options, UTF-8), so a
// tokenizer.json regex means here what it means there.
#ifndef LLMSERVE_TOKENIZER_REGEX_H
#define LLMSERVE_TOKENIZER_REGEX_H

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct re_pattern_buffer; // Oniguruma's compiled pattern (OnigRegexType)

namespace llmserve {

// A stretch [start, end) of text, in bytes.
struct Span {
  size_t start, end;
};

class Regex {
public:
  // Throws std::invalid_argument with Oniguruma's message when the pattern
  // does not compile.
  explicit Regex(const std::string &pattern);

  const std::string &pattern() const { return pattern_; }

  // Appends the successive non-overlapping matches in valid UTF-8 text, in the
  // onig crate's find_iter order: each search starts where the last match
  // ended, and an empty match right after a match is skipped. Throws
  // std::invalid_argument when a search exceeds Oniguruma's backtracking
  // limits or the whole takes over 10 s (a pathological pattern fails rather
  // than hangs).
  void find_all(std::string_view text, std::vector<Span> &out) const;

private:
  struct Free {
    void operator()(re_pattern_buffer *regex) const;
  };
  std::string pattern_;
  std::unique_ptr<re_pattern_buffer, Free> regex_;
};

} // namespace llmserve

#endif
