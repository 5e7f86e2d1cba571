// Reads and writes the safetensors format: an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range, then
// the tensor bytes. Reading maps the file and validates the whole header up
// front, so every TensorView handed out lies inside the file.
#ifndef LLMSERVE_MODEL_SAFETENSORS_H
#define LLMSERVE_MODEL_SAFETENSORS_H

#include "model/dtype.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmserve {

struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const uint8_t *data; // not aligned: read through memcpy
  size_t nbytes;

  int64_t numel() const;
};

// A safetensors file mapped read-only. Move-only; the views it hands out live
// as long as it does. Errors are std::runtime_error naming the file, and the
// tensor where one is at fault: "<file>: tensor '<name>': ...".
class SafetensorsFile {
public:
  static SafetensorsFile open(const std::string &path);

  SafetensorsFile(SafetensorsFile &&other) noexcept;
  SafetensorsFile &operator=(SafetensorsFile &&other) noexcept;
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;
  ~SafetensorsFile();

  // Sorted by name. Tensors of dtypes llmserve does not read (F64, U8, ...)
  // are validated but left out; see unreadable_dtype.
  const std::vector<TensorView> &tensors() const { return tensors_; }
  const TensorView *find(std::string_view name) const;
  // The safetensors dtype of a tensor that is in the file but left out of
  // tensors() because llmserve does not read that dtype; nullptr otherwise.
  const char *unreadable_dtype(std::string_view name) const;
  const std::string &path() const { return path_; }

  // Drops the pages of `tensor` (one of ours; throws otherwise) from the
  // process's resident set once a loader has copied it out; reading it again
  // faults them back in. Keeps peak memory at one copy of the weights while
  // loading.
  void release(const TensorView &tensor) const;

private:
  SafetensorsFile() = default;

  std::string path_;
  uint8_t *map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<TensorView> tensors_;
  std::vector<std::pair<std::string, const char *>> unreadable_; // sorted
};

} // namespace llmserve

#endif // LLMSERVE_MODEL_SAFETENSORS_H
