//===- BundleWriter.h - Writes the bundle's manifest ----------------------===//

#ifndef LLMSERVE_BUNDLE_BUNDLEWRITER_H
#define LLMSERVE_BUNDLE_BUNDLEWRITER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::llmserve {

/// The manifest.json text of a module whose ops carry `llmserve.dispatch`
/// (after llmserve-to-cpu-kernels). Emits a located error and fails on a
/// host program the format cannot express.
FailureOr<std::string> writeManifest(ModuleOp module, StringRef target);

} // namespace mlir::llmserve

#endif
