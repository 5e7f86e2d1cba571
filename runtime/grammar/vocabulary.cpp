#include "grammar/vocabulary.h"

#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

#include <algorithm>

namespace llmserve::grammar {

Vocabulary::Vocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> stop_tokens)
    : bytes_(std::move(token_bytes)), is_stop_(bytes_.size(), false) {
  for (int32_t id : stop_tokens) {
    if (id < 0 || static_cast<size_t>(id) >= bytes_.size())
      throw GrammarError("stop token " + std::to_string(id) + " is not in the vocabulary of " +
                         std::to_string(bytes_.size()));
    if (!is_stop_[id])
      stop_tokens_.push_back(id);
    is_stop_[id] = true;
  }
  for (size_t id = 0; id < bytes_.size(); ++id)
    if (!bytes_[id].empty() && !is_stop_[id])
      sorted_.push_back(static_cast<int32_t>(id));
  std::sort(sorted_.begin(), sorted_.end(),
            [&](int32_t a, int32_t b) { return bytes_[a] < bytes_[b] || (bytes_[a] == bytes_[b] && a < b); });
  sorted_offsets_.push_back(0);
  for (int32_t id : sorted_) {
    sorted_text_ += bytes_[id];
    sorted_offsets_.push_back(sorted_text_.size());
  }
  shared_prefix_.resize(sorted_.size(), 0);
  for (size_t i = 1; i < sorted_.size(); ++i) {
    const std::string &a = bytes_[sorted_[i - 1]], &b = bytes_[sorted_[i]];
    size_t n = std::min(a.size(), b.size()), k = 0;
    while (k < n && a[k] == b[k])
      ++k;
    shared_prefix_[i] = static_cast<uint32_t>(k);
  }
  size_t i = 0;
  for (int b = 0; b < 256; ++b) {
    first_with_[b] = i;
    while (i < sorted_.size() && static_cast<uint8_t>(bytes_[sorted_[i]][0]) == b)
      ++i;
  }
  first_with_[256] = i;
}

std::shared_ptr<const Vocabulary> Vocabulary::from_tokenizer(const Tokenizer &tokenizer,
                                                             size_t size) {
  std::vector<std::string> bytes(std::max(size, tokenizer.vocab_size()));
  for (size_t id = 0; id < tokenizer.vocab_size(); ++id)
    bytes[id] = tokenizer.token_bytes(static_cast<int32_t>(id));
  return std::make_shared<const Vocabulary>(std::move(bytes), tokenizer.eos_token_ids());
}

} // namespace llmserve::grammar
