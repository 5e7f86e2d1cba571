// NumPy's .npy files (format versions 1 to 3), little-endian, C order, of the
// dtypes numpy and llmserve share: float32, float16, int32, int64. How
// `llmrun call` exchanges tensors with Python.
#ifndef LLMSERVE_BUNDLE_NPY_H
#define LLMSERVE_BUNDLE_NPY_H

#include "bundle/host_tensor.h"

#include <string>

namespace llmserve {

// Throws std::runtime_error naming the file and what is wrong with it.
HostTensor read_npy(const std::string &path);
// Writes format version 1.0; throws naming the file on an I/O error or a
// dtype numpy lacks (bf16).
void write_npy(const std::string &path, const HostTensor &tensor);

} // namespace llmserve

#endif // LLMSERVE_BUNDLE_NPY_H
