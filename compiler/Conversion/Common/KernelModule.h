//===- KernelModule.h - The nested module of a module's kernels -*- C++ -*-===//
//
// The outlining passes build every kernel of a module into one nested
// module, @kernels: a builtin.module of func.func on the CPU, a gpu.module on
// NVIDIA (a gpu.binary once serialized). The pipelines lower it there and the
// targets emit it from there.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_COMMON_KERNELMODULE_H
#define LLMSERVE_CONVERSION_COMMON_KERNELMODULE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::llmserve {

inline constexpr llvm::StringLiteral kKernelModuleName = "kernels";

/// The kernel module of `module` if there is one and it is an `OpT`
/// (ModuleOp, gpu::GPUModuleOp or gpu::BinaryOp), else null.
template <typename OpT> OpT lookupKernelModule(ModuleOp module) {
  return dyn_cast_or_null<OpT>(
      SymbolTable::lookupSymbolIn(module, kKernelModuleName));
}

} // namespace mlir::llmserve

#endif // LLMSERVE_CONVERSION_COMMON_KERNELMODULE_H
