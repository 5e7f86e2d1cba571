#include "server/stop_strings.h"

#include <algorithm>

namespace llmserve {

StopStrings::StopStrings(std::vector<std::string> stops) {
  for (std::string &s : stops)
    if (!s.empty())
      stops_.push_back(std::move(s));
}

std::string StopStrings::push(const std::string &text) {
  if (stopped_)
    return "";
  held_ += text;
  size_t first = std::string::npos;
  for (const std::string &stop : stops_)
    first = std::min(first, held_.find(stop));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // No stop string is complete, so a match can only still begin in the last
  // (longest stop - 1) bytes: hold back the longest tail that begins one.
  size_t keep = 0;
  for (const std::string &stop : stops_) {
    size_t limit = std::min(stop.size() - 1, held_.size());
    for (size_t n = limit; n > keep; --n)
      if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
        keep = n;
        break;
      }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStrings::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

} // namespace llmserve
