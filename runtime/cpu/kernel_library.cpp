#include "cpu/kernel_library.h"

#include "cpu/cpu_features.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace llmserve {

namespace fs = std::filesystem;

namespace {

std::string joined(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::string describe(const CpuKernels &k) {
  return k.cpu.empty() ? k.file : k.file + " (for " + k.cpu + ")";
}

} // namespace

void KernelLibrary::Close::operator()(void *handle) const { dlclose(handle); }

KernelLibrary::KernelLibrary(const Bundle &bundle) {
  const std::vector<CpuKernels> &sets = bundle.manifest().cpu_kernels;
  const CpuKernels *chosen = nullptr;
  if (const char *wanted = std::getenv(kCpuKernelsVariable); wanted && *wanted) {
    std::string known;
    for (const CpuKernels &k : sets) {
      known += (known.empty() ? "" : ", ") + (k.cpu.empty() ? "(unnamed)" : k.cpu);
      if (k.cpu == wanted)
        chosen = &k;
    }
    if (!chosen)
      throw std::runtime_error(bundle.dir() + ": " + kCpuKernelsVariable + " names CPU '" +
                               wanted + "', and the bundle has kernels for " + known);
    if (const std::vector<std::string> missing = missing_cpu_features(chosen->features);
        !missing.empty())
      throw std::runtime_error(bundle.dir() + ": the kernels " + describe(*chosen) +
                               " that " + kCpuKernelsVariable + " chooses need " +
                               joined(missing) + ", which this CPU lacks");
    if (chosen != &sets.front())
      reason_ = std::string("chosen by ") + kCpuKernelsVariable;
  } else {
    std::string refused;
    for (const CpuKernels &k : sets) {
      const std::vector<std::string> missing = missing_cpu_features(k.features);
      if (missing.empty()) {
        chosen = &k;
        break;
      }
      refused += (refused.empty() ? "" : "; ") + describe(k) + " needs " + joined(missing);
    }
    if (!chosen)
      throw std::runtime_error(
          bundle.dir() + ": this CPU lacks features that its kernels need (" + refused +
          "); compile the model for this CPU (llmc compile --cpu native here, or --cpu "
          "x86-64-v3 for any AVX2 CPU)");
    if (chosen != &sets.front())
      reason_ = "this CPU lacks what the kernels before need: " + refused;
  }

  loaded_ = *chosen;
  const fs::path path = fs::absolute(fs::path(bundle.dir()) / loaded_.file);
  if (!fs::exists(path))
    throw std::runtime_error(bundle.dir() + ": the bundle has no CPU kernels (no " +
                             loaded_.file + ")");
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
