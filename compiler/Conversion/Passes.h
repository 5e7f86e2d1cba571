//===- Passes.h - llmserve conversion passes ------------------------------===//

#ifndef LLMSERVE_CONVERSION_PASSES_H
#define LLMSERVE_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::llmserve {

/// The attribute `llmserve-to-cpu-kernels` puts on each outlined op:
/// {kernel = "dN_op", symbol = "llmserve_dN_op", grid = ["...", "...", "..."]}.
inline constexpr llvm::StringLiteral kDispatchAttrName = "llmserve.dispatch";
/// Set on a weight op whose tensor the kernels read in a packed layout, and
/// the one layout there is: [N/16][K][16] panels (docs/bundle.md).
inline constexpr llvm::StringLiteral kLayoutAttrName = "llmserve.layout";
inline constexpr llvm::StringLiteral kPanelLayout = "panels16";
/// The nested module holding the kernels.
inline constexpr llvm::StringLiteral kKernelModuleName = "kernels";

#define GEN_PASS_DECL
#include "compiler/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/Passes.h.inc"

/// The upstream lowering of the kernels module to the LLVM dialect.
void buildCpuKernelsToLLVMPipeline(OpPassManager &pm);

/// Registers our passes and pipelines with the global registry.
void registerLlmservePasses();

} // namespace mlir::llmserve

#endif
