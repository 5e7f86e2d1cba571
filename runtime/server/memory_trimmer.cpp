#include "server/memory_trimmer.h"

#include <malloc.h>

namespace llmserve {

void limit_malloc_arenas() { mallopt(M_ARENA_MAX, 2); }

MemoryTrimmer::MemoryTrimmer(size_t threshold_bytes, std::chrono::milliseconds interval)
    : threshold_bytes_(threshold_bytes), interval_(interval), thread_([this] { run(); }) {}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void MemoryTrimmer::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    // fordblks: the bytes of free chunks malloc holds in all its arenas.
    if (mallinfo2().fordblks >= threshold_bytes_)
      malloc_trim(0);
  }
}

} // namespace llmserve
