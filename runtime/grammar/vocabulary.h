// The vocabulary as constrained decoding sees it: the bytes each token adds
// to the text, and the tokens that end generation.
#ifndef LLMSERVE_GRAMMAR_VOCABULARY_H
#define LLMSERVE_GRAMMAR_VOCABULARY_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {
class Tokenizer;
}

namespace llmserve::grammar {

class Vocabulary {
public:
  // token_bytes[id] is what token id adds to the text mid-sequence (empty for
  // special tokens, which are never allowed); stop_tokens the ids that end
  // generation (EOS etc.), allowed only where the grammar may end. Throws
  // GrammarError for a stop token out of range.
  Vocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> stop_tokens);
  // Through Tokenizer::token_bytes, the EOS ids as stop tokens. `size`, when
  // larger than the tokenizer's, pads with tokens that are never allowed
  // (models often have more logits than their tokenizer has tokens).
  static std::shared_ptr<const Vocabulary> from_tokenizer(const Tokenizer &tokenizer,
                                                          size_t size = 0);

  size_t size() const { return bytes_.size(); }
  // 32-bit words in a token mask.
  size_t mask_words() const { return (bytes_.size() + 31) / 32; }
  const std::string &token_bytes(int32_t id) const { return bytes_[id]; }
  const std::vector<int32_t> &stop_tokens() const { return stop_tokens_; }
  bool is_stop(int32_t id) const { return is_stop_[id]; }

  // The tokens a grammar can match (bytes, not a stop token), sorted by their
  // bytes: a trie walked in order. sorted_bytes(i) are sorted()[i]'s bytes,
  // stored in this order so walks read memory in order; shared_prefix(i) is
  // the length of the prefix they share with sorted_bytes(i - 1).
  const std::vector<int32_t> &sorted() const { return sorted_; }
  std::string_view sorted_bytes(size_t i) const {
    return std::string_view(sorted_text_).substr(sorted_offsets_[i], sorted_offsets_[i + 1] - sorted_offsets_[i]);
  }
  uint32_t shared_prefix(size_t i) const { return shared_prefix_[i]; }
  // The range of sorted() whose tokens start with byte b.
  size_t first_with(uint8_t b) const { return first_with_[b]; }
  size_t end_with(uint8_t b) const { return first_with_[b + 1]; }

private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> stop_tokens_;
  std::vector<bool> is_stop_;
  std::vector<int32_t> sorted_;
  std::string sorted_text_;
  std::vector<size_t> sorted_offsets_;
  std::vector<uint32_t> shared_prefix_;
  size_t first_with_[257] = {};
};

} // namespace llmserve::grammar

#endif
