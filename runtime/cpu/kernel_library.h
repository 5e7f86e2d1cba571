// The kernels of a CPU bundle: the shared object of one of the manifest's
// kernel sets loaded, and each of the manifest's kernels resolved to its
// function.
#ifndef LLMSERVE_CPU_KERNEL_LIBRARY_H
#define LLMSERVE_CPU_KERNEL_LIBRARY_H

#include "bundle/bundle.h"
#include "llmserve/abi.h"

#include <memory>
#include <string>
#include <vector>

namespace llmserve {

// Names the CPU of the kernel set to load (as manifest.json's "cpu" and
// "cpu_fallbacks" do), instead of the first set this CPU can run.
inline constexpr const char *kCpuKernelsVariable = "LLMSERVE_CPU_KERNELS";

class KernelLibrary {
public:
  // Loads the first of `bundle`'s kernel sets (manifest().cpu_kernels) whose
  // CPU features this CPU has, or the one kCpuKernelsVariable names; throws
  // std::runtime_error naming each set's missing features, the file, or the
  // symbol missing for a kernel.
  explicit KernelLibrary(const Bundle &bundle);

  // The function of manifest().kernels[index].
  abi::CpuKernelFn kernel(int index) const { return kernels_[index]; }
  // The kernel set loaded, and why: "" for the bundle's first, else what
  // made it pass over the sets before ("this CPU lacks avx512f" or "chosen
  // by LLMSERVE_CPU_KERNELS").
  const CpuKernels &loaded() const { return loaded_; }
  const std::string &reason() const { return reason_; }

private:
  struct Close {
    void operator()(void *handle) const;
  };
  CpuKernels loaded_;
  std::string reason_;
  std::unique_ptr<void, Close> library_;
  std::vector<abi::CpuKernelFn> kernels_;
};

} // namespace llmserve

#endif // LLMSERVE_CPU_KERNEL_LIBRARY_H
