// Added tokens (tokenizer.json "added_tokens"): found in the input before any
// other processing, leftmost-longest first, as Hugging Face's AddedVocabulary
// finds them.
#ifndef LLMSERVE_TOKENIZER_ADDED_TOKENS_H
#define LLMSERVE_TOKENIZER_ADDED_TOKENS_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;     // the match takes the whitespace before it
  bool rstrip = false;     // and after it
  bool normalized = false; // matched in normalized text rather than raw text
};

// A stretch of input: ordinary text (token < 0) or one added token.
struct Segment {
  std::string_view text;
  int32_t token = -1;
};

class AddedTokenMatcher {
public:
  // `patterns[i]` is how tokens[i] is spelled in the text it is matched in.
  AddedTokenMatcher(std::vector<AddedToken> tokens,
                    std::vector<std::string> patterns);

  bool empty() const { return tokens_.empty(); }
  // Appends the segments of text to out; empty ordinary stretches are left
  // out.
  void split(std::string_view text, std::vector<Segment> &out) const;

private:
  std::vector<AddedToken> tokens_;
  std::vector<std::string> patterns_;
  // Indices of the tokens whose pattern starts with each byte, longest first.
  std::vector<int32_t> by_first_byte_[256];
};

} // namespace llmserve

#endif
