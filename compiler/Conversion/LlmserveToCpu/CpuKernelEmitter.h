//===- CpuKernelEmitter.h - Builds CPU kernels in the bundle ABI ----------===//
//
// A CPU kernel is a function `(bindings, push_constants, wg_x, wg_y, wg_z)`
// (abi::CpuKernelFn). CpuKernelEmitter creates such a function and gives its
// body typed memref views of the bound buffers, the push constants, the
// workgroup ids and the rows a workgroup takes, and tensor views of buffer
// slices for the kernels built from linalg.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_LLMSERVETOCPU_CPUKERNELEMITTER_H
#define LLMSERVE_CONVERSION_LLMSERVETOCPU_CPUKERNELEMITTER_H

#include "compiler/Conversion/Common/Dispatch.h"
#include "compiler/Conversion/Common/KernelEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::llmserve {

class CpuKernelEmitter : public KernelEmitter {
public:
  /// Creates `func.func @<symbol>` at the end of `kernels`. `bindingTypes`
  /// are the shapes of the bound buffers; each dynamic dimension is passed in
  /// a push constant, in binding order.
  CpuKernelEmitter(ModuleOp kernels, StringRef symbol, Location loc,
                   ArrayRef<RankedTensorType> bindingTypes);

  func::FuncOp function() { return func; }

  /// The workgroup id along `dim` (0 = x), as an index.
  Value workgroupId(int dim);
  using KernelEmitter::binding;
  Value binding(int binding, ArrayRef<Value> shape) override;
  /// The same view with another element type (packed int4 values as bytes).
  Value binding(int binding, ArrayRef<Value> shape, Type element);

  /// Rows [begin, end) of `rows` handled by this workgroup when each
  /// workgroup along x takes `rowsPerGroup` rows.
  std::pair<Value, Value> rowRange(Value rows, int64_t rowsPerGroup);
  /// The grid of such row blocks over size 0 of binding `binding`.
  Grid rowGrid(int binding, int64_t rowsPerGroup) const;

  /// A subview of `memref` with unit strides.
  Value subview(Value memref, ArrayRef<OpFoldResult> offsets,
                ArrayRef<OpFoldResult> sizes);
  /// A slice of a bound buffer as a tensor for the kernel's linalg ops; a
  /// writable one is the destination they write in place once bufferized.
  Value tensorOf(Value slice, bool writable);
  /// Writes `result`, computed into tensorOf(slice, true), to `slice`: no
  /// copy once bufferized in place.
  void storeInto(Value result, Value slice);

  /// Closes the function body.
  void finish();

protected:
  Value pushConstant(int k) override { return pushConstants[k]; }

private:
  func::FuncOp func;
  SmallVector<Value> pushConstants; // loaded once, at the top of the kernel
};

} // namespace mlir::llmserve

#endif
