// Where the arrays of one entry-point call go in one allocation: back to
// back, each on a kDeviceAlignment boundary. The step's arguments are packed
// this way into a pinned host staging buffer and uploaded with one copy to
// the same layout on the device; activations and results are laid out the
// same way in the device arena.
#ifndef LLMSERVE_CUDA_BUFFER_LAYOUT_H
#define LLMSERVE_CUDA_BUFFER_LAYOUT_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace llmserve::cuda {

// Device buffers start on 256 bytes (docs/bundle.md, "NVIDIA bundles").
inline constexpr size_t kDeviceAlignment = 256;

struct BufferLayout {
  std::vector<size_t> offsets; // one per array
  std::vector<size_t> sizes;   // bytes, one per array
  size_t total = 0;            // bytes up to the end of the last array

  // Lays out arrays of `sizes` bytes in order.
  static BufferLayout of(std::vector<size_t> sizes);
};

// Copies sizes[i] bytes from `sources[i]` to staging + offsets[i]; the
// alignment gaps are left as they are.
void pack_arrays(const BufferLayout &layout, const void *const *sources, void *staging);

} // namespace llmserve::cuda

#endif // LLMSERVE_CUDA_BUFFER_LAYOUT_H
