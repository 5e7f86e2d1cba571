//===- Dispatch.h - What every target's outlining pass shares -------------===//
//
// Both llmserve-to-cpu-kernels and llmserve-to-gpu-kernels turn each compute
// op into one dispatch: the same ops, the same kernel names, the same binding
// order and the same `llmserve.dispatch` attribute, which the bundle writer
// reads whatever the target.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_COMMON_DISPATCH_H
#define LLMSERVE_CONVERSION_COMMON_DISPATCH_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::llmserve {

/// The llmserve compute ops of the module's functions that have no dispatch
/// yet, in order (weights are bound, not computed).
SmallVector<Operation *> opsToOutline(ModuleOp module);

/// The types of the buffers a dispatch binds: the op's operands, then its
/// results (kv_write's result is its cache, updated in place, so not bound
/// twice).
SmallVector<RankedTensorType> dispatchBindingTypes(Operation *op);

/// Kernel `index` of the module, for `op`: "d<index>_<op>".
std::string dispatchKernelName(Operation *op, int64_t index);
/// The exported symbol of a kernel: "llmserve_<name>".
std::string dispatchSymbol(StringRef kernelName);

/// Tags `op` with `llmserve.dispatch = {kernel, symbol, grid, extra...}`.
void setDispatch(Operation *op, StringRef kernelName, ArrayRef<std::string> grid,
                 ArrayRef<NamedAttribute> extra = {});

} // namespace mlir::llmserve

#endif // LLMSERVE_CONVERSION_COMMON_DISPATCH_H
