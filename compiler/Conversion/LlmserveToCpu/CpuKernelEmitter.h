//===- CpuKernelEmitter.h - Builds CPU kernels in the bundle ABI ----------===//
//
// A CPU kernel is a function `(bindings, push_constants, wg_x, wg_y, wg_z)`
// (abi::CpuKernelFn). CpuKernelEmitter creates such a function and gives its
// body typed memref views of the bound buffers, the push constants and the
// workgroup ids.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_LLMSERVETOCPU_CPUKERNELEMITTER_H
#define LLMSERVE_CONVERSION_LLMSERVETOCPU_CPUKERNELEMITTER_H

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

  /// Rows [begin, end) of `rows` handled by this workgroup when each
  /// workgroup along x takes `rowsPerGroup` rows.
  std::pair<Value, Value> rowRange(Value rows, int64_t rowsPerGroup);

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
