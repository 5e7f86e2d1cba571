#include "tokenizer/incremental_detokenizer.h"

namespace llmserve {
namespace {

// Prompt tokens before the first generated one that serve as its context
// (vLLM's INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET).
constexpr size_t kInitialContext = 5;

bool ends_with_replacement_char(const std::string &s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

// The new part of `text` after the already emitted `prefix`. A byte-fallback
// token can change how the bytes before it decode (an invalid sequence turns
// every one of its bytes into U+FFFD), so `prefix` is not always a prefix of
// `text`: start at the next character boundary rather than inside one.
std::string after(const std::string &text, const std::string &prefix) {
  size_t start = prefix.size();
  while (start < text.size() &&
         (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
    ++start;
  return text.substr(start);
}

} // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer &tokenizer,
                                               bool skip_special_tokens,
                                               std::vector<int32_t> prompt)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens),
      ids_(std::move(prompt)),
      prefix_offset_(ids_.size() > kInitialContext ? ids_.size() - kInitialContext : 0),
      read_offset_(ids_.size()) {}

std::string IncrementalDetokenizer::decode(size_t begin, size_t end) const {
  return tokenizer_.decode(std::vector<int32_t>(ids_.begin() + begin, ids_.begin() + end),
                           skip_special_tokens_);
}

std::string IncrementalDetokenizer::push(int32_t token) {
  tokenizer_.id_to_token(token); // throws for an id that is no token
  ids_.push_back(token);
  std::string prefix = decode(prefix_offset_, read_offset_);
  std::string text = decode(prefix_offset_, ids_.size());
  // A trailing U+FFFD is an unfinished UTF-8 sequence the next token may
  // complete; hold it back.
  if (text.size() <= prefix.size() || ends_with_replacement_char(text))
    return "";
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  return after(text, prefix);
}

std::string IncrementalDetokenizer::flush() {
  if (read_offset_ == ids_.size())
    return "";
  std::string prefix = decode(prefix_offset_, read_offset_);
  std::string text = decode(prefix_offset_, ids_.size());
  prefix_offset_ = read_offset_ = ids_.size();
  return text.size() > prefix.size() ? after(text, prefix) : "";
}

} // namespace llmserve
