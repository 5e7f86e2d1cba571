//===- KernelEmitter.h - Builds CPU kernels in the bundle ABI -------------===//
//
// A CPU kernel is a function `(bindings, push_constants, wg_x, wg_y, wg_z)`
// (abi::CpuKernelFn). KernelEmitter creates such a function and gives its body
// typed memref views of the bound buffers, the push constants and the
// workgroup ids, plus small helpers for the loops the kernels are made of.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_LLMSERVETOCPU_KERNELEMITTER_H
#define LLMSERVE_CONVERSION_LLMSERVETOCPU_KERNELEMITTER_H

#include "compiler/Conversion/Common/LoopEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::llmserve {

class KernelEmitter : public LoopEmitter {
public:
  /// Creates `func.func @<symbol>` at the end of `kernels`. `bindingTypes`
  /// are the shapes of the bound buffers; each dynamic dimension is passed in
  /// a push constant, in binding order.
  KernelEmitter(ModuleOp kernels, StringRef symbol, Location loc,
                ArrayRef<RankedTensorType> bindingTypes);

  func::FuncOp function() { return func; }

  /// The workgroup id along `dim` (0 = x), as an index.
  Value workgroupId(int dim);
  /// Size `dim` of binding `i`: a constant, or its push constant.
  Value dimSize(int binding, int dim);
  /// Size `dim` of binding `i` as written in a grid expression: the integer,
  /// or `$k` for push constant k.
  std::string dimExpr(int binding, int dim) const;
  /// The number of elements of binding `i`.
  Value numElements(int binding);
  /// Binding `i` viewed as a dense row-major memref of its own shape, or of
  /// `shape` when given (a reshape of the same bytes).
  Value binding(int binding);
  Value binding(int binding, ArrayRef<Value> shape);

  /// Rows [begin, end) of `rows` handled by this workgroup when each
  /// workgroup along x takes `rowsPerGroup` rows.
  std::pair<Value, Value> rowRange(Value rows, int64_t rowsPerGroup);

  /// Closes the function body.
  void finish();

private:
  func::FuncOp func;
  SmallVector<RankedTensorType> bindingTypes;
  SmallVector<Value> pushConstants; // one per dynamic dim, binding order
  SmallVector<int> firstConstant;   // per binding: its first push constant
};

} // namespace mlir::llmserve

#endif
