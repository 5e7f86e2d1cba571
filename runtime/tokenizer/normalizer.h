// The normalizer of tokenizer.json: NFC (Qwen2), and the Prepend + Replace
// sequence of SentencePiece-style tokenizers (Llama 2, Mistral).
#ifndef LLMSERVE_TOKENIZER_NORMALIZER_H
#define LLMSERVE_TOKENIZER_NORMALIZER_H

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

class Normalizer {
public:
  // From tokenizer.json's "normalizer" (null: the identity). Throws
  // std::invalid_argument naming an unsupported type.
  static Normalizer from_json(const nlohmann::json &config);

  bool is_identity() const { return steps_.empty(); }
  std::string normalize(std::string_view text) const;

private:
  struct Step {
    enum Kind { Nfc, Prepend, Replace } kind;
    std::string pattern; // Replace: what is replaced
    std::string content; // Prepend: the prefix; Replace: the replacement
  };
  static void append_steps(const nlohmann::json &config, std::vector<Step> &steps);

  std::vector<Step> steps_;
};

} // namespace llmserve

#endif
