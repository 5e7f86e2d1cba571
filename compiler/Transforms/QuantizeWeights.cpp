//===- QuantizeWeights.cpp - Linears read quantized weights ---------------===//

#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/QuantizedWeights.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_QUANTIZEWEIGHTS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

/// The ops of type `OpTy` (linear, expert_linear) that read `weight` as
/// their weight.
template <typename OpTy>
SmallVector<OpTy> readersAsWeight(WeightOp weight) {
  SmallVector<OpTy> readers;
  for (OpOperand &use : weight->getUses())
    if (auto reader = dyn_cast<OpTy>(use.getOwner());
        reader && use.get() == reader.getWeight() &&
        !llvm::is_contained(readers, reader))
      readers.push_back(reader);
  return readers;
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
    SmallVector<WeightOp> weights;
    getOperation().walk([&](WeightOp weight) {
      if (!weight.getQuantization())
        weights.push_back(weight);
    });
    for (WeightOp weight : weights) {
      if (SmallVector<LinearOp> linears = readersAsWeight<LinearOp>(weight);
          !linears.empty() && quantizable(weight, *quantization))
        quantizeLinears(weight, linears, *quantization);
      // expert_linear has int8 kernels only.
      if (SmallVector<ExpertLinearOp> readers = readersAsWeight<ExpertLinearOp>(weight);
          experts && !readers.empty())
        quantizeExperts(weight, readers);
      if (weight->use_empty())
        weight.erase();
    }
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

  static void quantizeLinears(WeightOp weight, ArrayRef<LinearOp> linears,
                              WeightQuantization quantization) {
    MLIRContext *ctx = weight.getContext();
    auto type = cast<RankedTensorType>(weight.getType());
    int bits = quantization == WeightQuantization::int4_group128 ? 4 : 8;
    auto valuesType = type.clone(IntegerType::get(ctx, bits));
    WeightOp values = createQuantizedPart(weight, quantization,
                                          QuantizedPart::values, valuesType);
    WeightOp scales =
        createQuantizedPart(weight, quantization, QuantizedPart::scales,
                            quantizedScalesType(valuesType));
    // A 4-bit checkpoint's linear (dequantized, being act-order) comes back
    // as int4 with its zero points, which the runtime reads as stored where
    // the groups allow.
    Value zeros;
    if (quantization == WeightQuantization::int4_group128 &&
        isFourBit(weight.getCheckpoint()))
      zeros = createQuantizedPart(weight, quantization, QuantizedPart::zeros,
                                  quantizedZerosType(valuesType));
    readQuantized(linears, values, scales, zeros);
  }

  /// Each expert's rows by int8_channel: values [E, N, K], scales [E, N].
  static void quantizeExperts(WeightOp weight, ArrayRef<ExpertLinearOp> readers) {
    auto type = cast<RankedTensorType>(weight.getType());
    auto valuesType = type.clone(IntegerType::get(weight.getContext(), 8));
    auto quantization = WeightQuantization::int8_channel;
    WeightOp values = createQuantizedPart(weight, quantization,
                                          QuantizedPart::values, valuesType);
    WeightOp scales =
        createQuantizedPart(weight, quantization, QuantizedPart::scales,
                            expertScalesType(valuesType));
    for (ExpertLinearOp reader : readers) {
      OpBuilder at(reader);
      auto quantized = ExpertLinearOp::create(
          at, reader.getLoc(), reader.getType(), reader.getInput(), values,
          scales, reader.getExperts(), reader.getPerSlot());
      quantized->setDiscardableAttrs(reader->getDiscardableAttrDictionary());
      reader.replaceAllUsesWith(quantized.getResult());
      reader.erase();
    }
  }
};

} // namespace
