// The parameters of one CUDA kernel launch as abi.h defines them: one 64-bit
// device pointer per binding, in binding order, then one int64 per push
// constant, each in its own 8-byte slot.
#ifndef LLMSERVE_CUDA_KERNEL_PARAMS_H
#define LLMSERVE_CUDA_KERNEL_PARAMS_H

#include <cstdint>
#include <vector>

namespace llmserve::cuda {

class KernelParams {
public:
  // `bindings` are buffer ids, `addresses` the device address of each buffer
  // id. Reuses its storage, so steady-state launches allocate nothing.
  void assign(const std::vector<int> &bindings, const std::vector<uint64_t> &addresses,
              const std::vector<int64_t> &push_constants);

  // The values, one 8-byte slot per parameter.
  const std::vector<uint64_t> &values() const { return values_; }
  // One pointer per parameter, to its slot: cuLaunchKernelEx's kernelParams.
  void **pointers() { return pointers_.data(); }

private:
  std::vector<uint64_t> values_;
  std::vector<void *> pointers_;
};

} // namespace llmserve::cuda

#endif // LLMSERVE_CUDA_KERNEL_PARAMS_H
