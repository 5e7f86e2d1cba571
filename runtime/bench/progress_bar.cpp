#include "bench/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace llmserve::bench {

ProgressBar::ProgressBar(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO)) {
  draw();
}

ProgressBar::~ProgressBar() {
  if (enabled_)
    std::fputc('\n', stderr);
}

void ProgressBar::advance(int64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += n;
  draw();
}

void ProgressBar::draw() {
  if (!enabled_)
    return;
  constexpr int kWidth = 40;
  const int filled =
      total_ > 0 ? static_cast<int>(kWidth * std::min(done_, total_) / total_) : kWidth;
  std::fprintf(stderr, "\r%s [%s%s] %lld/%lld", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(kWidth - filled, ' ').c_str(), static_cast<long long>(done_),
               static_cast<long long>(total_));
  std::fflush(stderr);
}

} // namespace llmserve::bench
