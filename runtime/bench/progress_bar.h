// A progress bar on stderr while a benchmark runs, drawn only when stderr is
// a terminal so logs and pipes stay clean.
#ifndef LLMSERVE_BENCH_PROGRESS_BAR_H
#define LLMSERVE_BENCH_PROGRESS_BAR_H

#include <cstdint>
#include <mutex>
#include <string>

namespace llmserve::bench {

class ProgressBar {
public:
  ProgressBar(std::string label, int64_t total);
  ~ProgressBar();
  ProgressBar(const ProgressBar &) = delete;
  ProgressBar &operator=(const ProgressBar &) = delete;

  // Thread-safe.
  void advance(int64_t n = 1);

private:
  void draw();

  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  bool enabled_;
  std::mutex mutex_;
};

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_PROGRESS_BAR_H
