//===- ReadFp8Weights.cpp - Linears read FP8 checkpoints as stored --------===//

#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/QuantizedWeights.h"

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
    auto valuesType =
        cast<RankedTensorType>(weight.getType()).clone(Float8E4M3FNType::get(weight.getContext()));
    auto quantization = WeightQuantization::fp8_block128;
    // Rows that start at a block span its scales' rows of blocks.
    WeightOp values = createQuantizedPart(weight, quantization, QuantizedPart::values, valuesType);
    WeightOp scales = createQuantizedPart(weight, quantization, QuantizedPart::scales,
                                          quantizedScalesType(valuesType));
    SmallVector<LinearOp> linears;
    for (Operation *user : weight->getUsers())
      if (!llvm::is_contained(linears, user))
        linears.push_back(cast<LinearOp>(user));
    readQuantized(linears, values, scales, /*zeros=*/Value());
    weight.erase();
  }
};

} // namespace
