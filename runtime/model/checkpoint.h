// A Hugging Face checkpoint directory's weights: model.safetensors, or the
// shards that model.safetensors.index.json lists (the same precedence as
// transformers' from_pretrained).
#ifndef LLMSERVE_MODEL_CHECKPOINT_H
#define LLMSERVE_MODEL_CHECKPOINT_H

#include "model/safetensors.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

class Checkpoint {
public:
  // Maps and validates every shard. Throws std::runtime_error naming the
  // directory or file and, where one is at fault, the tensor.
  static Checkpoint open(const std::string &dir);

  // Throws naming the directory and the tensor if the checkpoint lacks it.
  const TensorView &tensor(std::string_view name) const;
  const TensorView *find(std::string_view name) const;
  // Every tensor, sorted by name.
  std::vector<const TensorView *> tensors() const;
  const std::string &dir() const { return dir_; }

  // See SafetensorsFile::release.
  void release(const TensorView &tensor) const;

private:
  Checkpoint() = default;
  const SafetensorsFile &file_of(const TensorView &tensor) const;

  std::string dir_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, const TensorView *, std::less<>> by_name_;
};

} // namespace llmserve

#endif // LLMSERVE_MODEL_CHECKPOINT_H
