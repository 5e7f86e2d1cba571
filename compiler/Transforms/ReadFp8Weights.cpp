//===- ReadFp8Weights.cpp - Linears read FP8 checkpoints as stored --------===//

#include "compiler/Transforms/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_READFP8WEIGHTS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

/// Whether `weight` is an FP8 checkpoint's dequantized weight that only
/// linears read as their weight, and whose blocks its rows keep whole.
bool readableAsStored(WeightOp weight) {
  if (weight.getCheckpoint() != QuantizedCheckpoint::fp8_block128 ||
      weight.getQuantization() || weight.getStacked() || weight.getTransposed() ||
      cast<RankedTensorType>(weight.getType()).getRank() != 2 || weight->use_empty())
    return false;
  if (std::optional<ArrayRef<int64_t>> rows = weight.getRows();
      rows && (*rows)[0] % kFp8BlockSize != 0)
    return false;
  return llvm::all_of(weight->getUses(), [](OpOperand &use) {
    auto linear = dyn_cast<LinearOp>(use.getOwner());
    return linear && &use == &linear.getWeightMutable();
  });
}

struct ReadFp8WeightsPass
    : public mlir::llmserve::impl::ReadFp8WeightsBase<ReadFp8WeightsPass> {
  void runOnOperation() override {
    SmallVector<WeightOp> weights;
    getOperation().walk([&](WeightOp weight) {
      if (readableAsStored(weight))
        weights.push_back(weight);
    });
    for (WeightOp weight : weights)
      readAsStored(weight);
  }

  static void readAsStored(WeightOp weight) {
    OpBuilder b(weight);
    MLIRContext *ctx = b.getContext();
    auto valuesType =
        cast<RankedTensorType>(weight.getType()).clone(Float8E4M3FNType::get(ctx));
    auto part = [&](QuantizedPart which, Type type) {
      return WeightOp::create(
          b, weight.getLoc(), type, weight.getTensorNameAttr(), weight.getStackedAttr(),
          weight.getTransposedAttr(), weight.getRowsAttr(),
          WeightQuantizationAttr::get(ctx, WeightQuantization::fp8_block128),
          QuantizedPartAttr::get(ctx, which), weight.getCheckpointAttr());
    };
    // Rows that start at a block span its scales' rows of blocks.
    WeightOp values = part(QuantizedPart::values, valuesType);
    WeightOp scales = part(QuantizedPart::scales, quantizedScalesType(valuesType));
    SmallVector<LinearOp> linears;
    for (Operation *user : weight->getUsers())
      if (!llvm::is_contained(linears, user))
        linears.push_back(cast<LinearOp>(user));
    for (LinearOp linear : linears) {
      OpBuilder at(linear);
      auto stored =
          LinearOp::create(at, linear.getLoc(), linear.getType(), linear.getInput(), values,
                           scales, /*zeros=*/Value(), linear.getBias());
      stored->setDiscardableAttrs(linear->getDiscardableAttrDictionary());
      linear.replaceAllUsesWith(stored.getResult());
      linear.erase();
    }
    weight.erase();
  }
};

} // namespace
