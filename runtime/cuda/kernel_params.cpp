#include "cuda/kernel_params.h"

namespace llmserve::cuda {

void KernelParams::assign(const std::vector<int> &bindings,
                          const std::vector<uint64_t> &addresses,
                          const std::vector<int64_t> &push_constants) {
  values_.clear();
  for (int id : bindings)
    values_.push_back(addresses[id]);
  for (int64_t c : push_constants)
    values_.push_back(static_cast<uint64_t>(c)); // the same 8 bytes
  // After the values are in place: pointers into values_ stay valid.
  pointers_.clear();
  for (uint64_t &v : values_)
    pointers_.push_back(&v);
}

} // namespace llmserve::cuda
