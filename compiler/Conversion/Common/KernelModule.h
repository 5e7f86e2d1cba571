//===- KernelModule.h - The nested module of a module's kernels -*- C++ -*-===//
//
// The outlining passes build every kernel of a module into one nested
// module, @kernels: a builtin.module of func.func on the CPU, a gpu.module on
// NVIDIA (a gpu.binary once serialized). The pipelines lower it there and the
// targets emit it from there. Kernels whose code is the same (the same op on
// the same shapes, as in every layer of a model) are one function there.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_COMMON_KERNELMODULE_H
#define LLMSERVE_CONVERSION_COMMON_KERNELMODULE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include <map>
#include <string>

namespace mlir::llmserve {

inline constexpr llvm::StringLiteral kKernelModuleName = "kernels";

/// The kernel module of `module` if there is one and it is an `OpT`
/// (ModuleOp, gpu::GPUModuleOp or gpu::BinaryOp), else null.
template <typename OpT> OpT lookupKernelModule(ModuleOp module) {
  return dyn_cast_or_null<OpT>(
      SymbolTable::lookupSymbolIn(module, kKernelModuleName));
}

/// The kernels built so far, by their code, so that a kernel built again is
/// one function with the first.
class KernelsByCode {
public:
  /// The symbol of the kernel with `kernel`'s code (a func.func or
  /// gpu.func): its own, or that of an earlier kernel of the same code, in
  /// which case `kernel` is erased.
  StringAttr intern(Operation *kernel);

private:
  std::map<uint64_t, SmallVector<std::pair<std::string, StringAttr>, 1>> byHash;
};

} // namespace mlir::llmserve

#endif // LLMSERVE_CONVERSION_COMMON_KERNELMODULE_H
