// Zero-filled heap memory aligned for vector loads, for the buffers the CPU
// executor owns (converted weights, KV cache, activations).
#ifndef LLMSERVE_BUNDLE_ALIGNED_BUFFER_H
#define LLMSERVE_BUNDLE_ALIGNED_BUFFER_H

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace llmserve {

inline constexpr size_t kBufferAlignment = 64; // a cache line, an AVX-512 vector
inline constexpr size_t kHugePage = size_t{2} << 20;

class AlignedBuffer {
public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) : size_(bytes) {
    // Large buffers (weights streamed every step, the KV cache) go on huge
    // pages: a stream then crosses a page, where the hardware prefetcher
    // stops, every 2 MiB instead of every 4 KiB.
    const size_t alignment = bytes >= kHugePage ? kHugePage : kBufferAlignment;
    // aligned_alloc wants a multiple of the alignment, and non-zero.
    const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    data_.reset(std::aligned_alloc(alignment, rounded ? rounded : alignment));
    if (!data_)
      throw std::runtime_error("out of memory allocating " +
                               std::to_string(bytes) + " bytes");
    if (alignment == kHugePage)
      madvise(data_.get(), rounded, MADV_HUGEPAGE); // a hint: failure is harmless
    std::memset(data_.get(), 0, rounded);
  }

  void *data() const { return data_.get(); }
  size_t size() const { return size_; }

private:
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
};

} // namespace llmserve

#endif // LLMSERVE_BUNDLE_ALIGNED_BUFFER_H
