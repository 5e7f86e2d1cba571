// The decoder of tokenizer.json: turns token spellings back into text, step by
// step as Hugging Face's decoders chain does (ByteLevel for byte-level BPE;
// Replace, ByteFallback, Fuse, Strip or Metaspace for SentencePiece-style BPE).
#ifndef LLMSERVE_TOKENIZER_DECODER_H
#define LLMSERVE_TOKENIZER_DECODER_H

#include "tokenizer/pattern.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace llmserve {

class Decoder {
public:
  // From tokenizer.json's "decoder" (null: spellings joined with spaces).
  // Throws std::invalid_argument naming an unsupported type.
  static Decoder from_json(const nlohmann::json &config);

  std::string decode(std::vector<std::string> tokens) const;
  // The raw bytes one token adds to the text in the middle of a sequence:
  // the chain applied to it alone, without what only applies at the ends of a
  // sequence (Strip, Metaspace dropping the first replacement) and without
  // the U+FFFD replacement of invalid UTF-8 (a byte token is its byte).
  std::string token_bytes(std::string spelling) const;

private:
  struct Step {
    enum Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind;
    std::optional<Pattern> pattern; // Replace: what is replaced; Metaspace:
                                    // the replacement character
    std::string content;            // Replace: the replacement; Strip: what
                                    // is stripped
    size_t start = 0, stop = 0;     // Strip: how many to strip at each end;
                                    // Metaspace: start = 1 to drop the
                                    // replacement from the first token
  };
  static void append_steps(const nlohmann::json &config, std::vector<Step> &steps);
  static void apply(const Step &step, std::vector<std::string> &tokens);

  bool none_ = true;
  std::vector<Step> steps_;
};

} // namespace llmserve

#endif
