#include "bench/sse.h"

namespace llmserve::bench {

std::vector<std::string> SseParser::feed(std::string_view bytes) {
  std::vector<std::string> events;
  for (char c : bytes) {
    if (c != '\n') {
      line_ += c;
      continue;
    }
    if (!line_.empty() && line_.back() == '\r')
      line_.pop_back();
    if (line_.empty()) {
      if (has_data_)
        events.push_back(std::move(data_));
      data_.clear();
      has_data_ = false;
    } else if (line_.compare(0, 5, "data:") == 0) {
      std::string_view value(line_);
      value.remove_prefix(5);
      if (!value.empty() && value.front() == ' ')
        value.remove_prefix(1);
      if (has_data_)
        data_ += '\n';
      data_ += value;
      has_data_ = true;
    }
    line_.clear();
  }
  return events;
}

bool SseParser::has_partial_event() const { return has_data_ || !line_.empty(); }

} // namespace llmserve::bench
