// Pre-tokenizer: splits normalized text into the pieces BPE runs on, with the
// exact match semantics (Oniguruma, as the Rust `tokenizers` crate uses it) of
// the split patterns of the supported model families. Each pattern is a
// hand-written matcher rather than a regex engine: the patterns are few and
// fixed, and a matcher is several times faster.
#ifndef LLMSERVE_TOKENIZER_PRETOKENIZER_H
#define LLMSERVE_TOKENIZER_PRETOKENIZER_H

#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

enum class SplitPattern {
  None,   // the whole text is one piece (SentencePiece-style BPE)
  Gpt2,   // GPT-2's pattern (ByteLevel with use_regex)
  Cl100k, // Llama 3 (cl100k-style: \p{N}{1,3})
  Qwen2,  // Qwen2/Qwen3 (cl100k-style with single digits)
  O200k,  // GPT-4o (o200k: letter case decides word boundaries)
};

// The pattern of a `Split` pre-tokenizer's regex source; throws
// std::invalid_argument naming the regex when it is not one of the above.
SplitPattern split_pattern_from_regex(const std::string &regex);

// Appends the pieces of `text` (valid UTF-8) to `pieces`, in order; together
// they cover the text exactly.
void split_text(SplitPattern pattern, std::string_view text,
                std::vector<std::string_view> &pieces);

// The Metaspace pre-tokenizer (SentencePiece-style tokenizers converted by
// recent transformers): spaces become the replacement ("▁"), which is also
// prepended to the text's first section ("first") or to every section
// ("always"); with `split`, each replacement starts a new piece.
struct Metaspace {
  enum class Prepend { Always, First, Never };
  std::string replacement;
  Prepend prepend = Prepend::Always;
  bool split = false;

  // `section` is a stretch of text between added tokens; `at_start` says it
  // begins the input.
  std::string apply(std::string_view section, bool at_start) const;
  void split_pieces(std::string_view text, std::vector<std::string_view> &pieces) const;
};

} // namespace llmserve

#endif
