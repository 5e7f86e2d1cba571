// The kernels of a CPU bundle: kernels.cpu.so loaded and each of the
// manifest's kernels resolved to its function.
#ifndef LLMSERVE_CPU_KERNEL_LIBRARY_H
#define LLMSERVE_CPU_KERNEL_LIBRARY_H

#include "bundle/bundle.h"
#include "llmserve/abi.h"

#include <memory>
#include <vector>

namespace llmserve {

class KernelLibrary {
public:
  // Loads `bundle`'s kernels.cpu.so; throws std::runtime_error naming the
  // file, and the symbol missing for a kernel.
  explicit KernelLibrary(const Bundle &bundle);

  // The function of manifest().kernels[index].
  abi::CpuKernelFn kernel(int index) const { return kernels_[index]; }

private:
  struct Close {
    void operator()(void *handle) const;
  };
  std::unique_ptr<void, Close> library_;
  std::vector<abi::CpuKernelFn> kernels_;
};

} // namespace llmserve

#endif // LLMSERVE_CPU_KERNEL_LIBRARY_H
