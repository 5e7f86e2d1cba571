// The normalizer of tokenizer.json, as Hugging Face's normalizers: NFC, NFD,
// NFKC, NFKD, Lowercase, Strip, StripAccents, Replace (a literal or an
// Oniguruma regex), Prepend, and Sequences of them.
#ifndef LLMSERVE_TOKENIZER_NORMALIZER_H
#define LLMSERVE_TOKENIZER_NORMALIZER_H

#include "tokenizer/pattern.h"
#include "tokenizer/unicode.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

class Normalizer {
public:
  // From tokenizer.json's "normalizer" (null: the identity). Throws
  // std::invalid_argument naming the field of a bad or unsupported part.
  static Normalizer from_json(const nlohmann::json &config);

  bool is_identity() const { return steps_.empty(); }
  // Throws std::invalid_argument when a regex exceeds its backtracking limits.
  std::string normalize(std::string_view text) const;

private:
  struct Step {
    enum Kind { Unicode, Lowercase, Strip, StripAccents, Prepend, Replace } kind;
    unicode::NormalForm form = unicode::NormalForm::C; // Unicode
    bool left = false, right = false;                    // Strip
    std::optional<Pattern> pattern;                      // Replace
    std::string content; // Prepend: the prefix; Replace: the replacement
  };
  static void append_steps(const nlohmann::json &config, const std::string &where,
                           std::vector<Step> &steps);
  static std::string apply(const Step &step, std::string s);

  std::vector<Step> steps_;
};

} // namespace llmserve

#endif
