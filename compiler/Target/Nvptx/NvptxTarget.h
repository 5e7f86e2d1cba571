//===- NvptxTarget.h - GPU kernels module to PTX and cubin ----------------===//

#ifndef LLMSERVE_TARGET_NVPTX_NVPTXTARGET_H
#define LLMSERVE_TARGET_NVPTX_NVPTXTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir::llmserve {

/// Registers what lowering a gpu.module to PTX needs: the dialects'
/// conversions to LLVM, the NVVM target attribute's interface and the LLVM
/// IR translations.
void registerNvptxTarget(DialectRegistry &registry);

/// The PTX of `module`'s `gpu.module @kernels`, once lowered to NVVM
/// (buildGpuKernelsToNvvmPipeline). Replaces the gpu.module by a gpu.binary.
FailureOr<std::string> emitPtx(ModuleOp module);

/// ptxas on PATH, else in /usr/local/cuda/bin; nullopt when there is none.
std::optional<std::string> findPtxas();

/// Assembles `ptxPath` into an sm_90a cubin at `cubinPath` with `ptxas`;
/// on failure, emits an unlocated error with ptxas's own message.
LogicalResult assembleCubin(MLIRContext *context, StringRef ptxas,
                            StringRef ptxPath, StringRef cubinPath);

} // namespace mlir::llmserve

#endif
