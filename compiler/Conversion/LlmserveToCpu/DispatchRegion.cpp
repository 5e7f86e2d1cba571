//===- DispatchRegion.cpp - Linears fused with their epilogue on the CPU --===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::llmserve;

/// A dispatch region (llmserve-form-dispatch-regions) of panel linears that
/// read one input and an elementwise generic over their results: per
/// workgroup block, each linear's contraction (the last one into the
/// output's slice, the others into a block-sized buffer on the stack),
/// then the generic's body on the block, in place. Bindings are the
/// region's inputs, then its result.
FailureOr<Grid>
mlir::llmserve::buildDispatchRegionKernel(CpuKernelEmitter &e,
                                          DispatchRegionOp region) {
  ImplicitLocOpBuilder &b = e.builder();
  Block &body = region.getBody().front();
  SmallVector<LinearOp> linears;
  linalg::GenericOp epilogue;
  for (Operation &op : body.without_terminator()) {
    if (auto linear = dyn_cast<LinearOp>(op); linear && !epilogue) {
      linears.push_back(linear);
      continue;
    }
    if (auto generic = dyn_cast<linalg::GenericOp>(op); generic && !epilogue) {
      epilogue = generic;
      continue;
    }
    return region.emitOpError("has no CPU kernel: expected linears then one "
                              "elementwise linalg.generic, got ")
               << op.getName(),
           failure();
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  auto argumentNumber = [&](Value v) -> std::optional<int> {
    auto argument = dyn_cast<BlockArgument>(v);
    return argument ? std::optional<int>(argument.getArgNumber())
                    : std::nullopt;
  };
  if (linears.empty() || !epilogue || !isElementwise(epilogue) ||
      epilogue.getNumLoops() != 2 || yield.getNumOperands() != 1 ||
      yield.getOperand(0) != epilogue.getResult(0) ||
      epilogue.payloadUsesValueFromOperand(epilogue.getDpsInitOperand(0)))
    return region.emitOpError("has no CPU kernel: expected linears then one "
                              "2-D elementwise linalg.generic, which does not "
                              "read its init, yielding its result"),
           failure();
  std::optional<int> xBinding = argumentNumber(linears.front().getInput());
  for (LinearOp linear : linears)
    if (!xBinding || argumentNumber(linear.getInput()) != xBinding ||
        !argumentNumber(linear.getWeight()) ||
        (linear.getBias() && !argumentNumber(linear.getBias())) ||
        !usePanelLayout(
            region.getInputs()[*argumentNumber(linear.getWeight())]) ||
        linear.getWeight().getType() != linears.front().getWeight().getType())
      return linear.emitOpError("cannot be fused on the CPU: the linears of a "
                                "dispatch region read one input of the "
                                "region and weights of one shape in panels"),
             failure();

  auto weightType =
      cast<RankedTensorType>(linears.front().getWeight().getType());
  int64_t panels = weightType.getDimSize(0) / kVectorWidth;
  int output = region.getInputs().size();
  PanelBlock block = panelBlock(e, e.dimSize(*xBinding, 0), panels);
  Value yView;
  DenseMap<Value, Value> blockOf;
  for (LinearOp linear : linears) {
    auto destination = [&]() -> Value {
      if (linear == linears.back()) {
        yView = panelView(e, output, panels, block);
        return e.tensorOf(yView, /*writable=*/true);
      }
      // A whole workgroup block: 64 x 6 x 16 floats, 24 KiB.
      auto type = MemRefType::get(
          {kLinearRowsPerGroup, kPanelsPerGroup, kVectorWidth}, b.getF32Type());
      OpFoldResult zero = b.getIndexAttr(0);
      return e.tensorOf(
          e.subview(memref::AllocaOp::create(b, type), {zero, zero, zero},
                    {block.mSize, block.pSize, b.getIndexAttr(kVectorWidth)}),
          /*writable=*/true);
    };
    std::optional<int> bias =
        linear.getBias() ? argumentNumber(linear.getBias()) : std::nullopt;
    blockOf[linear.getResult()] =
        contractPanels(e, *xBinding, *argumentNumber(linear.getWeight()), bias,
                       panels, weightType.getDimSize(1), block, destination);
  }
  // The epilogue reads the linears' blocks and the region's other inputs
  // (the body holds no other op).
  SmallVector<Value> inputs;
  for (Value input : epilogue.getDpsInputs()) {
    Value computed = blockOf.lookup(input);
    inputs.push_back(computed ? computed
                              : e.tensorOf(panelView(e, *argumentNumber(input),
                                                     panels, block),
                                           /*writable=*/false));
  }
  Value init = blockOf.lookup(linears.back().getResult());
  auto kernelGeneric = linalg::GenericOp::create(
      b, init.getType(), inputs, init,
      SmallVector<AffineMap>(inputs.size() + 1, b.getMultiDimIdentityMap(3)),
      SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel));
  IRMapping mapping;
  epilogue.getRegion().cloneInto(&kernelGeneric.getRegion(), mapping);
  e.storeInto(kernelGeneric.getResult(0), yView);
  return panelGrid(e, *xBinding, panels);
}
