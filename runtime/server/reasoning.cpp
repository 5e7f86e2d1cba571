#include "server/reasoning.h"

#include <algorithm>

namespace llmserve {
namespace {

constexpr std::string_view kOpen = "<think>", kClose = "</think>";

// The length of the longest end of `text` that begins `marker`.
size_t partial_marker(std::string_view text, std::string_view marker) {
  size_t keep = std::min(text.size(), marker.size() - 1);
  while (keep > 0 && text.substr(text.size() - keep) != marker.substr(0, keep))
    --keep;
  return keep;
}

} // namespace

bool template_thinks(std::string_view chat_template) {
  return chat_template.find(kClose) != std::string_view::npos;
}

bool prompt_opens_thinking(std::string_view prompt) {
  const size_t open = prompt.rfind(kOpen);
  return open != std::string_view::npos && prompt.find(kClose, open) == std::string_view::npos;
}

ReasoningSplitter::Split ReasoningSplitter::push(std::string_view text) {
  held_ += text;
  Split out;
  if (state_ == State::kStart) {
    // The output thinks only if it opens with <think> (after blank space).
    const size_t first = held_.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
      return out;
    const std::string_view rest = std::string_view(held_).substr(first);
    if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest)
      return out;
    if (rest.substr(0, kOpen.size()) == kOpen) {
      held_.erase(0, first + kOpen.size());
      state_ = State::kThinking;
    } else {
      state_ = State::kAnswering;
    }
  }
  if (state_ == State::kThinking) {
    const size_t close = held_.find(kClose);
    if (close == std::string::npos) {
      const size_t keep = partial_marker(held_, kClose);
      out.reasoning = held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    out.reasoning = held_.substr(0, close);
    held_.erase(0, close + kClose.size());
    state_ = State::kAnswering;
  }
  out.content = std::move(held_);
  held_.clear();
  return out;
}

ReasoningSplitter::Split ReasoningSplitter::finish() {
  Split out;
  (state_ == State::kThinking ? out.reasoning : out.content) = std::move(held_);
  held_.clear();
  return out;
}

} // namespace llmserve
