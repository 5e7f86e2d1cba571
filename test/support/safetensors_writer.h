// Writing safetensors files, for tests and benchmarks that make their own
// checkpoints.
#ifndef LLMSERVE_TEST_SUPPORT_SAFETENSORS_WRITER_H
#define LLMSERVE_TEST_SUPPORT_SAFETENSORS_WRITER_H

#include "model/safetensors.h"

#include <string>
#include <vector>

namespace llmserve {

// Writes `tensors` (in that order) to `path` with {"format": "pt"} metadata,
// the way safetensors and Hugging Face write them. Writes to a temporary file
// renamed into place, so a failed write leaves no partial file at `path`.
// Throws std::runtime_error naming the file, and the tensor at fault.
void write_safetensors(const std::string &path, const std::vector<TensorView> &tensors);

} // namespace llmserve

#endif // LLMSERVE_TEST_SUPPORT_SAFETENSORS_WRITER_H
