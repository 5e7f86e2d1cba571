//===- NarrowLinearWeights.cpp - Linears read f16/bf16 weights -----------===//

#include "compiler/Transforms/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

#include "llvm/ADT/StringSet.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_NARROWLINEARWEIGHTS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

/// Whether every use of `weight` is a linear's or an expert_linear's weight
/// operand.
bool onlyLinearWeight(WeightOp weight) {
  return !weight->use_empty() &&
         llvm::all_of(weight->getUses(), [](OpOperand &use) {
           if (auto linear = dyn_cast<LinearOp>(use.getOwner()))
             return use.get() == linear.getWeight();
           if (auto experts = dyn_cast<ExpertLinearOp>(use.getOwner()))
             return use.get() == experts.getWeight();
           return false;
         });
}

struct NarrowLinearWeightsPass
    : public mlir::llmserve::impl::NarrowLinearWeightsBase<
          NarrowLinearWeightsPass> {
  using NarrowLinearWeightsBase::NarrowLinearWeightsBase;

  void runOnOperation() override {
    FloatType storage = narrowFloatType(&getContext(), dtype);
    if (!storage) {
      getOperation().emitError("unknown weight type '")
          << dtype << "' (expected bf16 or f16)";
      return signalPassFailure();
    }
    // A tensor that some weight op must keep f32 (the embedding table of
    // tied embeddings) stays f32 for all: the bundle reads it once.
    llvm::StringSet<> keptF32;
    getOperation().walk([&](WeightOp weight) {
      if (!weight.getQuantization() && !onlyLinearWeight(weight))
        keptF32.insert(weight.getTensorName());
    });
    getOperation().walk([&](WeightOp weight) {
      auto type = cast<RankedTensorType>(weight.getType());
      if (type.getElementType().isF32() && !weight.getQuantization() &&
          onlyLinearWeight(weight) && !keptF32.contains(weight.getTensorName()))
        weight.getResult().setType(type.clone(storage));
    });
  }
};

} // namespace
