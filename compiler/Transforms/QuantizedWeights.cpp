//===- QuantizedWeights.cpp - Linears that read quantized weights ---------===//

#include "compiler/Transforms/QuantizedWeights.h"

using namespace mlir;
using namespace mlir::llmserve;

WeightOp mlir::llmserve::createQuantizedPart(WeightOp weight,
                                             WeightQuantization quantization,
                                             QuantizedPart part, Type type) {
  OpBuilder b(weight);
  MLIRContext *ctx = b.getContext();
  return WeightOp::create(
      b, weight.getLoc(), type, weight.getTensorNameAttr(),
      weight.getStackedAttr(), weight.getTransposedAttr(), weight.getRowsAttr(),
      WeightQuantizationAttr::get(ctx, quantization),
      QuantizedPartAttr::get(ctx, part), weight.getCheckpointAttr());
}

void mlir::llmserve::readQuantized(ArrayRef<LinearOp> linears, Value values,
                                   Value scales, Value zeros) {
  for (LinearOp linear : linears) {
    OpBuilder at(linear);
    auto quantized = LinearOp::create(
        at, linear.getLoc(), linear.getType(), linear.getInput(), values,
        scales, zeros, linear.getBias(), linear.getInputScales());
    quantized->setDiscardableAttrs(linear->getDiscardableAttrDictionary());
    linear.replaceAllUsesWith(quantized.getResult());
    linear.erase();
  }
}
