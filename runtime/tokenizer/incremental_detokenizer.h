// Streaming detokenization: text for each generated token as it arrives,
// never splitting a UTF-8 sequence. Same method as vLLM's and TGI's
// detokenizers: decode a short window of recent tokens with and without the
// new one and emit the difference, so that decoders that depend on context
// (SentencePiece's leading-space strip, byte fallback, byte-level merges) give
// exactly the text the full decode gives.
#ifndef LLMSERVE_TOKENIZER_INCREMENTAL_DETOKENIZER_H
#define LLMSERVE_TOKENIZER_INCREMENTAL_DETOKENIZER_H

#include "tokenizer/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmserve {

class IncrementalDetokenizer {
public:
  // `prompt` is the context the generated tokens follow (its text is not
  // emitted); the tokenizer must outlive this object.
  IncrementalDetokenizer(const Tokenizer &tokenizer, bool skip_special_tokens,
                         std::vector<int32_t> prompt = {});

  // The text that token completes; "" while it ends inside a UTF-8 sequence.
  std::string push(int32_t token);
  // Whatever is held back at the end of generation (as U+FFFD).
  std::string flush();

private:
  std::string decode(size_t begin, size_t end) const;

  const Tokenizer &tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_; // start of the context window
  size_t read_offset_;   // end of what has been emitted
};

} // namespace llmserve

#endif
