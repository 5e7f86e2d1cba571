// The text of one generated sequence as its tokens arrive: incremental,
// UTF-8 safe detokenization followed by stop-string matching.
#ifndef LLMSERVE_SERVER_CHOICE_TEXT_H
#define LLMSERVE_SERVER_CHOICE_TEXT_H

#include "server/stop_strings.h"
#include "tokenizer/incremental_detokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmserve {

class ChoiceText {
public:
  // `prompt` is the context the tokens follow; the tokenizer must outlive
  // this object.
  ChoiceText(const Tokenizer &tokenizer, const std::vector<int32_t> &prompt,
             std::vector<std::string> stop_strings);

  // The new text `token` makes final ("" while it is held back). Once a stop
  // string has appeared, stopped() is true and further tokens are ignored.
  std::string push(int32_t token);
  // Everything still held back, at the end of generation.
  std::string finish();
  bool stopped() const { return stops_.stopped(); }
  // Tokens that contributed to the text: all pushed before the stop.
  int32_t num_tokens() const { return num_tokens_; }

private:
  IncrementalDetokenizer detokenizer_;
  StopStrings stops_;
  int32_t num_tokens_ = 0;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_CHOICE_TEXT_H
