//===- Dispatch.h - What every target's outlining pass shares -------------===//
//
// Both llmserve-to-cpu-kernels and llmserve-to-gpu-kernels turn each compute
// op into one dispatch of one or more kernels: the same ops, the same kernel names, the same binding
// order and the same `llmserve.dispatch` attribute, which the bundle writer
// reads whatever the target.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_COMMON_DISPATCH_H
#define LLMSERVE_CONVERSION_COMMON_DISPATCH_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::llmserve {

/// The llmserve compute ops and linalg.generic ops of the module's functions
/// that have no dispatch yet, in order (weights are bound, not computed).
SmallVector<Operation *> opsToOutline(ModuleOp module);

/// The operands a dispatch binds: all of the op's, but for a linalg op only
/// its inputs (the kernel writes its result over whatever its init holds).
SmallVector<Value> dispatchOperands(Operation *op);

/// The operand whose buffer `result` is, updated in place: a kv_write's
/// cache, or the input of a dispatch region that a kv_write in it updates
/// and the region yields. Null when the result has a buffer of its own.
Value inPlaceOperand(OpResult result);

/// The results of `op` that have buffers of their own.
SmallVector<Value> freshResults(Operation *op);

/// The types of the buffers a dispatch binds: the dispatch operands, then the
/// op's fresh results (a cache updated in place is not bound twice).
SmallVector<RankedTensorType> dispatchBindingTypes(Operation *op);

/// Whether `generic` is elementwise: one output, every loop parallel,
/// identity indexing maps (the generics llmserve-to-linalg makes).
bool isElementwise(linalg::GenericOp generic);

/// Kernel `index` of the module, for `op`: "d<index>_<op>".
std::string dispatchKernelName(Operation *op, int64_t index);
/// The exported symbol of a kernel: "llmserve_<name>".
std::string dispatchSymbol(StringRef kernelName);

/// One kernel of a dispatch: `{kernel, symbol, grid, extra...}`. `symbol`
/// is the function that runs it, which kernels of the same code share
/// (KernelsByCode).
DictionaryAttr dispatchAttr(MLIRContext *context, StringRef kernelName,
                            StringAttr symbol, ArrayRef<std::string> grid,
                            ArrayRef<NamedAttribute> extra = {});

/// The launch grid of a kernel: x, y and z as size expressions, in which
/// push constant k is `$k`.
using Grid = SmallVector<std::string, 3>;

/// The grid expression ceil(n / d).
inline std::string ceilDivExpr(const std::string &n, int64_t d) {
  return "ceildiv(" + n + "," + std::to_string(d) + ")";
}

/// Tags `op` with `llmserve.dispatch`: its one kernel's dictionary, or an
/// array of them when the op has several (alternatives for different step
/// sizes, or phases): they bind the same buffers and run in order, and a
/// kernel whose grid is empty for a step does not run in it.
void setDispatch(Operation *op, ArrayRef<DictionaryAttr> kernels);

} // namespace mlir::llmserve

#endif // LLMSERVE_CONVERSION_COMMON_DISPATCH_H
