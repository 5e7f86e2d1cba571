//===- BundleWriter.h - Writes the bundle's manifest ----------------------===//

#ifndef LLMSERVE_BUNDLE_BUNDLEWRITER_H
#define LLMSERVE_BUNDLE_BUNDLEWRITER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::llmserve {

/// Module attributes `llmc import` sets and the manifest carries over.
inline constexpr llvm::StringLiteral kModelAttrName = "llmserve.model";
inline constexpr llvm::StringLiteral kCheckpointAttrName = "llmserve.checkpoint";
/// Argument attributes of entry functions: the step-contract array an
/// argument is (abi::kStepArguments), and the KV cache {layer, role} it is.
inline constexpr llvm::StringLiteral kContractAttrName = "llmserve.contract";
inline constexpr llvm::StringLiteral kKvCacheAttrName = "llmserve.kv_cache";

/// The manifest.json text of a module whose ops carry `llmserve.dispatch`
/// (after llmserve-to-cpu-kernels). Emits a located error and fails on a
/// host program the format cannot express.
FailureOr<std::string> writeManifest(ModuleOp module, StringRef target);

} // namespace mlir::llmserve

#endif
