// Zero-filled heap memory aligned for vector loads, for the buffers the CPU
// executor owns (converted weights, KV cache, activations).
#ifndef LLMSERVE_BUNDLE_ALIGNED_BUFFER_H
#define LLMSERVE_BUNDLE_ALIGNED_BUFFER_H

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace llmserve {

inline constexpr size_t kBufferAlignment = 64; // a cache line, an AVX-512 vector

class AlignedBuffer {
public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) : size_(bytes) {
    // aligned_alloc wants a multiple of the alignment, and non-zero.
    const size_t rounded =
        (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    data_.reset(std::aligned_alloc(kBufferAlignment,
                                   rounded ? rounded : kBufferAlignment));
    if (!data_)
      throw std::runtime_error("out of memory allocating " +
                               std::to_string(bytes) + " bytes");
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
