//===- QuantizeWeights.cpp - Linears read quantized weights ---------------===//

#include "compiler/Transforms/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_QUANTIZEWEIGHTS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

/// The linears that read `weight` as their weight.
SmallVector<LinearOp> linearsReadingAsWeight(WeightOp weight) {
  SmallVector<LinearOp> linears;
  for (OpOperand &use : weight->getUses())
    if (auto linear = dyn_cast<LinearOp>(use.getOwner());
        linear && use.get() == linear.getWeight() &&
        !llvm::is_contained(linears, linear))
      linears.push_back(linear);
  return linears;
}

struct QuantizeWeightsPass
    : public mlir::llmserve::impl::QuantizeWeightsBase<QuantizeWeightsPass> {
  using QuantizeWeightsBase::QuantizeWeightsBase;

  void runOnOperation() override {
    std::optional<WeightQuantization> quantization =
        symbolizeWeightQuantization(scheme);
    if (!quantization) {
      getOperation().emitError("unknown quantization scheme '")
          << scheme << "' (supported: int8_channel)";
      return signalPassFailure();
    }
    SmallVector<std::pair<WeightOp, SmallVector<LinearOp>>> weights;
    getOperation().walk([&](WeightOp weight) {
      if (weight.getQuantization())
        return;
      if (SmallVector<LinearOp> linears = linearsReadingAsWeight(weight);
          !linears.empty())
        weights.emplace_back(weight, std::move(linears));
    });
    for (auto &[weight, linears] : weights)
      quantize(weight, linears, *quantization);
  }

  void quantize(WeightOp weight, ArrayRef<LinearOp> linears,
                WeightQuantization quantization) {
    OpBuilder b(weight);
    MLIRContext *ctx = b.getContext();
    auto type = cast<RankedTensorType>(weight.getType());
    auto part = [&](QuantizedPart which, RankedTensorType partType) {
      return WeightOp::create(b, weight.getLoc(), partType,
                              weight.getTensorNameAttr(),
                              weight.getTransposedAttr(), weight.getRowsAttr(),
                              WeightQuantizationAttr::get(ctx, quantization),
                              QuantizedPartAttr::get(ctx, which));
    };
    WeightOp values =
        part(QuantizedPart::values, type.clone(IntegerType::get(ctx, 8)));
    WeightOp scales = part(
        QuantizedPart::scales,
        RankedTensorType::get({type.getDimSize(0)}, Float32Type::get(ctx)));
    for (LinearOp linear : linears) {
      OpBuilder at(linear);
      auto quantized =
          LinearOp::create(at, linear.getLoc(), linear.getType(),
                           linear.getInput(), values, scales, linear.getBias());
      quantized->setDiscardableAttrs(linear->getDiscardableAttrDictionary());
      linear.replaceAllUsesWith(quantized.getResult());
      linear.erase();
    }
    if (weight->use_empty())
      weight.erase();
  }
};

} // namespace
