#include "cpu/kernel_library.h"

#include "cpu/cpu_features.h"

#include <dlfcn.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace llmserve {

namespace fs = std::filesystem;

void KernelLibrary::Close::operator()(void *handle) const { dlclose(handle); }

KernelLibrary::KernelLibrary(const Bundle &bundle) {
  const fs::path path = fs::absolute(fs::path(bundle.dir()) / abi::kCpuKernelsFile);
  if (!fs::exists(path))
    throw std::runtime_error(bundle.dir() + ": the bundle has no CPU kernels (no " +
                             abi::kCpuKernelsFile + ")");
  if (const std::vector<std::string> missing = missing_cpu_features(bundle.manifest().cpu_features);
      !missing.empty()) {
    std::string names;
    for (const std::string &feature : missing)
      names += (names.empty() ? "" : ", ") + feature;
    throw std::runtime_error(bundle.dir() + ": its kernels need " + names +
                             ", which this CPU lacks; compile the model for this CPU "
                             "(llmc compile --cpu native here, or --cpu x86-64-v3 for any "
                             "AVX2 CPU)");
  }
  // RTLD_LOCAL: two bundles loaded at once must not resolve each other's
  // symbols. RTLD_NOW: an unresolved import fails here, not mid-step.
  library_.reset(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!library_)
    throw std::runtime_error(path.string() + ": cannot load: " + dlerror());
  for (const Kernel &k : bundle.manifest().kernels) {
    void *fn = dlsym(library_.get(), k.symbol.c_str());
    if (!fn)
      throw std::runtime_error(path.string() + ": no symbol '" + k.symbol +
                               "' for kernel '" + k.name + "'");
    kernels_.push_back(reinterpret_cast<abi::CpuKernelFn>(fn));
  }
}

} // namespace llmserve
