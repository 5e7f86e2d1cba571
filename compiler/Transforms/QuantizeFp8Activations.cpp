//===- QuantizeFp8Activations.cpp - W8A8 linears of FP8 weights -----------===//

#include "compiler/Transforms/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_QUANTIZEFP8ACTIVATIONS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

/// Whether `linear` reads an f8E4M3FN weight and an f16/bf16 input whose
/// rows are whole 16-byte copies as codes, and a bias (if any) of its
/// result's type, which a W8A8 linear adds.
bool quantizable(LinearOp linear) {
  auto input = cast<RankedTensorType>(linear.getInput().getType());
  auto weight = cast<RankedTensorType>(linear.getWeight().getType());
  Value bias = linear.getBias();
  return isa<Float8E4M3FNType>(weight.getElementType()) &&
         (input.getElementType().isBF16() || input.getElementType().isF16()) &&
         input.getDimSize(1) % 16 == 0 &&
         (!bias || cast<RankedTensorType>(bias.getType()).getElementType() ==
                       linear.getType().getElementType());
}

struct QuantizeFp8ActivationsPass
    : public mlir::llmserve::impl::QuantizeFp8ActivationsBase<
          QuantizeFp8ActivationsPass> {
  void runOnOperation() override {
    SmallVector<LinearOp> linears;
    getOperation().walk([&](LinearOp linear) {
      if (quantizable(linear))
        linears.push_back(linear);
    });
    DenseMap<Value, QuantizeFp8Op> quantized;
    for (LinearOp linear : linears) {
      Value input = linear.getInput();
      QuantizeFp8Op &codes = quantized[input];
      if (!codes) {
        OpBuilder b(linear.getContext());
        b.setInsertionPointAfterValue(input);
        auto type = cast<RankedTensorType>(input.getType());
        codes = QuantizeFp8Op::create(
            b, linear.getLoc(),
            type.clone(Float8E4M3FNType::get(linear.getContext())),
            activationScalesType(type), input);
      }
      linear.getInputMutable().assign(codes.getCodes());
      linear.getInputScalesMutable().assign(codes.getScales());
    }
  }
};

} // namespace
