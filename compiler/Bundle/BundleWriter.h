//===- BundleWriter.h - Writes the bundle's manifest ----------------------===//

#ifndef LLMSERVE_BUNDLE_BUNDLEWRITER_H
#define LLMSERVE_BUNDLE_BUNDLEWRITER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::llmserve {

/// The manifest.json text of a module whose ops carry `llmserve.dispatch`
/// (after llmserve-to-cpu-kernels), for `target`, whose kernels need the
/// CPU features `cpuFeatures` (target cpu). Emits a located error and fails
/// on a host program the format cannot express.
FailureOr<std::string> writeManifest(ModuleOp module, StringRef target,
                                     ArrayRef<std::string> cpuFeatures = {});

} // namespace mlir::llmserve

#endif
