//===- Passes.h - llmserve conversion passes ------------------------------===//

#ifndef LLMSERVE_CONVERSION_PASSES_H
#define LLMSERVE_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::llmserve {

/// The NVVM target of the GPU kernels: PTX ISA 8.4 (the first with `mma` on
/// e4m3) for sm_90, which the driver can JIT-compile for any later GPU;
/// ptxas assembles the same PTX into the sm_90a cubin. (wgmma and TMA would
/// need sm_90a PTX.)
inline constexpr llvm::StringLiteral kNvvmChip = "sm_90";
inline constexpr llvm::StringLiteral kNvvmFeatures = "+ptx84";

#define GEN_PASS_DECL
#include "compiler/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/Passes.h.inc"

/// silu_mul and gelu as linalg.generic ops on tensors.
void populateLlmserveToLinalgPatterns(RewritePatternSet &patterns);

/// The upstream lowering of the kernels module to the LLVM dialect.
void buildCpuKernelsToLLVMPipeline(OpPassManager &pm);

/// Lowers the gpu.module built by llmserve-to-gpu-kernels to the LLVM and
/// NVVM dialects, with bare-pointer kernel parameters and no libdevice calls;
/// run it on the enclosing module.
void buildGpuKernelsToNvvmPipeline(OpPassManager &pm);

/// Registers our passes and pipelines with the global registry.
void registerLlmservePasses();

} // namespace mlir::llmserve

#endif
