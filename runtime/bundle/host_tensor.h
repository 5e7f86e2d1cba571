// A dense row-major tensor in host memory: what CpuExecutor::run_entry takes
// and returns, and what an .npy file holds.
#ifndef LLMSERVE_BUNDLE_HOST_TENSOR_H
#define LLMSERVE_BUNDLE_HOST_TENSOR_H

#include "model/dtype.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmserve {

struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; // numel * dtype_size(dtype) bytes
};

// "f32 [2, 3]", for error messages.
std::string describe(DType dtype, const std::vector<int64_t> &shape);

} // namespace llmserve

#endif // LLMSERVE_BUNDLE_HOST_TENSOR_H
