// Hands memory that malloc holds free back to the system. A request with a
// body of megabytes frees many times that (its text, JSON, tokens and
// response), and glibc keeps what was freed in its arenas: after a burst of
// such requests the server would stay at its peak. Two measures: few
// arenas (a thread's own arena, a mapped heap, is hardly ever trimmed), and
// a thread that checks twice a second how much malloc holds free and trims
// it past a threshold.
#ifndef LLMSERVE_SERVER_MEMORY_TRIMMER_H
#define LLMSERVE_SERVER_MEMORY_TRIMMER_H

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

namespace llmserve {

// Call before any thread but the caller starts: threads then share two
// arenas rather than take one each.
void limit_malloc_arenas();

class MemoryTrimmer {
public:
  explicit MemoryTrimmer(size_t threshold_bytes = size_t{32} << 20,
                         std::chrono::milliseconds interval = std::chrono::milliseconds(500));
  ~MemoryTrimmer();

private:
  void run();

  size_t threshold_bytes_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_MEMORY_TRIMMER_H
