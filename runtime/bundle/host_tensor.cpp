#include "bundle/host_tensor.h"

namespace llmserve {

std::string describe(DType dtype, const std::vector<int64_t> &shape) {
  std::string s = std::string(dtype_name(dtype)) + " [";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace llmserve
