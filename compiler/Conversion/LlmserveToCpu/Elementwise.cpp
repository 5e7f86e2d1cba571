//===- Elementwise.cpp - Elementwise linalg.generic kernels ---------------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::llmserve;

namespace {
constexpr int64_t kElementsPerGroup = 4096;
} // namespace

/// An elementwise linalg.generic (llmserve-to-linalg): each workgroup
/// takes kElementsPerGroup elements of the flattened bindings as tensors
/// and applies the generic's body to them. One-shot bufferization writes
/// the result in place into the output binding, and the CPU schedule
/// (cpu-kernels.mlir) tiles and vectorizes the generic.
FailureOr<Grid> mlir::llmserve::buildElementwiseKernel(CpuKernelEmitter &e,
                                                       linalg::GenericOp g) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  if (!isElementwise(g))
    return g.emitOpError("has no CPU kernel (only elementwise generics "
                         "with identity maps do)"),
           failure();
  int64_t numBindings = g.getNumDpsInputs() + 1;
  auto [begin, end] = e.rowRange(e.numElements(0), kElementsPerGroup);
  OpFoldResult offset = begin, size = a.subi(end, begin);
  SmallVector<Value> slices;
  for (int64_t i = 0; i < numBindings; ++i)
    slices.push_back(
        e.subview(e.binding(i, {e.numElements(i)}), {offset}, {size}));
  SmallVector<Value> inputs;
  for (int64_t i = 0; i + 1 < numBindings; ++i)
    inputs.push_back(e.tensorOf(slices[i], /*writable=*/false));
  Value init = e.tensorOf(slices.back(), /*writable=*/true);
  auto kernelGeneric = linalg::GenericOp::create(
      b, init.getType(), inputs, init,
      SmallVector<AffineMap>(numBindings, b.getMultiDimIdentityMap(1)),
      {utils::IteratorType::parallel});
  IRMapping mapping;
  g.getRegion().cloneInto(&kernelGeneric.getRegion(), mapping);
  e.storeInto(kernelGeneric.getResult(0), slices.back());

  return Grid{ceilDivExpr(e.numElementsExpr(0), kElementsPerGroup), "1", "1"};
}
