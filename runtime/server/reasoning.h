// Models that think before they answer (Qwen3, DeepSeek-R1 and its
// distillations) write their thoughts between <think> and </think>: that
// text is the choice's `reasoning_content`, the rest its `content`, as
// vLLM's reasoning parsers split them.
#ifndef LLMSERVE_SERVER_REASONING_H
#define LLMSERVE_SERVER_REASONING_H

#include <string>
#include <string_view>

namespace llmserve {

// Whether a chat template's model thinks: the template handles </think>.
bool template_thinks(std::string_view chat_template);

// Whether a rendered chat prompt leaves a think block open, so the output
// begins inside it (DeepSeek-R1's templates end the prompt with <think>).
bool prompt_opens_thinking(std::string_view prompt);

// Splits an output that arrives in pieces; text that may be a marker is
// held back until the next piece tells.
class ReasoningSplitter {
public:
  struct Split {
    std::string reasoning;
    std::string content;
  };

  // `thinking`: the output begins inside a think block.
  explicit ReasoningSplitter(bool thinking)
      : state_(thinking ? State::kThinking : State::kStart) {}

  Split push(std::string_view text);
  // What is held back, at the end of the output.
  Split finish();

private:
  enum class State { kStart, kThinking, kAnswering };
  State state_;
  std::string held_;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_REASONING_H
