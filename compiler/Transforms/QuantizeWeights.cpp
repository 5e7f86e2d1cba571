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
          << scheme << "' (supported: int8_channel, int4_group128)";
      return signalPassFailure();
    }
    SmallVector<std::pair<WeightOp, SmallVector<LinearOp>>> weights;
    getOperation().walk([&](WeightOp weight) {
      if (weight.getQuantization())
        return;
      if (SmallVector<LinearOp> linears = linearsReadingAsWeight(weight);
          !linears.empty() && quantizable(weight, *quantization))
        weights.emplace_back(weight, std::move(linears));
    });
    for (auto &[weight, linears] : weights)
      quantize(weight, linears, *quantization);
  }

  /// int4_group128 needs whole groups of 128 columns, and its kernel whole
  /// groups of 8 rows (rows8x64); a weight without them keeps its float
  /// values.
  static bool quantizable(WeightOp weight, WeightQuantization quantization) {
    auto type = cast<RankedTensorType>(weight.getType());
    return quantization != WeightQuantization::int4_group128 ||
           (type.getDimSize(1) % kInt4GroupColumns == 0 &&
            type.getDimSize(0) % LlmserveDialect::kRowBlockRows == 0);
  }

  void quantize(WeightOp weight, ArrayRef<LinearOp> linears,
                WeightQuantization quantization) {
    OpBuilder b(weight);
    MLIRContext *ctx = b.getContext();
    auto type = cast<RankedTensorType>(weight.getType());
    auto part = [&](QuantizedPart which, RankedTensorType partType) {
      return WeightOp::create(b, weight.getLoc(), partType,
                              weight.getTensorNameAttr(),
                              /*stacked=*/nullptr, weight.getTransposedAttr(), weight.getRowsAttr(),
                              WeightQuantizationAttr::get(ctx, quantization),
                              QuantizedPartAttr::get(ctx, which));
    };
    int bits = quantization == WeightQuantization::int4_group128 ? 4 : 8;
    auto valuesType = type.clone(IntegerType::get(ctx, bits));
    WeightOp values = part(QuantizedPart::values, valuesType);
    WeightOp scales = part(QuantizedPart::scales,
                           cast<RankedTensorType>(quantizedScalesType(valuesType)));
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
