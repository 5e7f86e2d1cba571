//===- CpuTarget.h - Kernels module to a shared object --------------------===//

#ifndef LLMSERVE_TARGET_CPU_CPUTARGET_H
#define LLMSERVE_TARGET_CPU_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::llmserve {

struct CpuTargetOptions {
  /// LLVM CPU name; "native" means the host's CPU and features.
  std::string cpu = "native";
  /// The linker producing the shared object.
  std::string linker = LLMSERVE_LLD_PATH;
};

/// The LLVM name of the CPU of `options`: the host's for "native".
std::string cpuName(const CpuTargetOptions &options);

/// The features of abi::kCpuFeatures that the CPU of `options` has: what its
/// kernels may use, which the runtime checks before it loads them.
FailureOr<SmallVector<std::string>> cpuFeatureNames(Location loc,
                                                    const CpuTargetOptions &options);

/// Translates a module in the LLVM dialect to LLVM IR, optimises it at -O3
/// for the target CPU and links it into the shared object `path`.
LogicalResult emitCpuSharedObject(ModuleOp kernels, StringRef path,
                                  const CpuTargetOptions &options);

} // namespace mlir::llmserve

#endif
