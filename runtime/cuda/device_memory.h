// Owned driver memory: device allocations and pinned host memory, freed on
// destruction.
#ifndef LLMSERVE_CUDA_DEVICE_MEMORY_H
#define LLMSERVE_CUDA_DEVICE_MEMORY_H

#include "cuda/cuda_driver.h"

#include <cstddef>

namespace llmserve::cuda {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  // cuMemAlloc of `bytes` (nothing for 0); throws CudaError naming the size.
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();

  CUdeviceptr address() const { return address_; }
  size_t size() const { return size_; }

private:
  CUdeviceptr address_ = 0;
  size_t size_ = 0;
};

// Page-locked host memory: copies from it are asynchronous and run at full
// bus speed.
class PinnedBuffer {
public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes);
  PinnedBuffer(PinnedBuffer &&other) noexcept;
  PinnedBuffer &operator=(PinnedBuffer &&other) noexcept;
  ~PinnedBuffer();

  void *data() const { return data_; }
  size_t size() const { return size_; }

private:
  void *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace llmserve::cuda

#endif // LLMSERVE_CUDA_DEVICE_MEMORY_H
