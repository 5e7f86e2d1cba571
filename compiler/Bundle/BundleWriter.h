//===- BundleWriter.h - Writes the bundle's manifest ----------------------===//

#ifndef LLMSERVE_BUNDLE_BUNDLEWRITER_H
#define LLMSERVE_BUNDLE_BUNDLEWRITER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::llmserve {

/// The kernels of a CPU bundle for one CPU: the shared object `file` in the
/// bundle, compiled for `cpu` (an LLVM name), whose code may use `features`
/// (abi::kCpuFeatures' names).
struct CpuKernelSet {
  std::string cpu;
  std::string file;
  SmallVector<std::string> features;
};

/// The manifest.json text of a module whose ops carry `llmserve.dispatch`
/// (after llmserve-to-cpu-kernels), for `target`, whose kernels are the sets
/// `cpuKernels` (target cpu): the preferred first (abi::kCpuKernelsFile:
/// "cpu" and "cpu_features"), then its fallbacks ("cpu_fallbacks"). Emits a
/// located error and fails on a host program the format cannot express.
FailureOr<std::string> writeManifest(ModuleOp module, StringRef target,
                                     ArrayRef<CpuKernelSet> cpuKernels = {});

} // namespace mlir::llmserve

#endif
