#include "cuda/buffer_layout.h"

#include <cstring>

namespace llmserve::cuda {

BufferLayout BufferLayout::of(std::vector<size_t> sizes) {
  BufferLayout layout;
  size_t offset = 0;
  for (size_t size : sizes) {
    offset = (offset + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
    layout.offsets.push_back(offset);
    offset += size;
  }
  layout.total = offset;
  layout.sizes = std::move(sizes);
  return layout;
}

void pack_arrays(const BufferLayout &layout, const void *const *sources, void *staging) {
  auto *to = static_cast<uint8_t *>(staging);
  for (size_t i = 0; i < layout.sizes.size(); ++i)
    if (layout.sizes[i] > 0)
      std::memcpy(to + layout.offsets[i], sources[i], layout.sizes[i]);
}

} // namespace llmserve::cuda
