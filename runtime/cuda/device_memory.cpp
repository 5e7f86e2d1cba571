#include "cuda/device_memory.h"

#include <utility>

namespace llmserve::cuda {

DeviceBuffer::DeviceBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0)
    return;
  const CudaDriver &cu = cuda_driver();
  const CUresult r = cu.cuMemAlloc_v2(&address_, bytes);
  if (r != CUDA_SUCCESS)
    throw CudaError("cuMemAlloc_v2 of " + std::to_string(bytes) + " bytes: " + cu.describe(r));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : address_(std::exchange(other.address_, 0)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  std::swap(address_, other.address_);
  std::swap(size_, other.size_);
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (address_)
    cuda_driver().cuMemFree_v2(address_); // nothing to do about a failure here
}

PinnedBuffer::PinnedBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0)
    return;
  const CudaDriver &cu = cuda_driver();
  const CUresult r = cu.cuMemAllocHost_v2(&data_, bytes);
  if (r != CUDA_SUCCESS)
    throw CudaError("cuMemAllocHost_v2 of " + std::to_string(bytes) + " bytes: " +
                    cu.describe(r));
}

PinnedBuffer::PinnedBuffer(PinnedBuffer &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PinnedBuffer &PinnedBuffer::operator=(PinnedBuffer &&other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_)
    cuda_driver().cuMemFreeHost(data_);
}

} // namespace llmserve::cuda
