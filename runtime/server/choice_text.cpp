#include "server/choice_text.h"

namespace llmserve {

ChoiceText::ChoiceText(const Tokenizer &tokenizer,
                       const std::vector<int32_t> &prompt,
                       std::vector<std::string> stop_strings)
    : detokenizer_(tokenizer, /*skip_special_tokens=*/true, prompt),
      stops_(std::move(stop_strings)) {}

std::string ChoiceText::push(int32_t token) {
  if (stops_.stopped())
    return "";
  ++num_tokens_;
  return stops_.push(detokenizer_.push(token));
}

std::string ChoiceText::finish() {
  std::string text = stops_.push(detokenizer_.flush());
  return text + stops_.flush();
}

} // namespace llmserve
