//===- QuantizedWeights.h - Linears that read quantized weights -----------===//
//
// What the passes that make linears read quantized arrays share
// (QuantizeWeights, ReadFp8Weights): the weight op of one array of a
// quantized weight, and the linears rewritten to read the arrays.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_TRANSFORMS_QUANTIZEDWEIGHTS_H
#define LLMSERVE_TRANSFORMS_QUANTIZEDWEIGHTS_H

#include "llmserve/IR/LlmserveOps.h"

namespace mlir::llmserve {

/// A weight op before `weight` for array `part` (of type `type`) of
/// `weight`'s tensor quantized by `quantization`, with its transform, rows,
/// stacking and origin.
WeightOp createQuantizedPart(WeightOp weight, WeightQuantization quantization,
                             QuantizedPart part, Type type);

/// Replaces each of `linears` by a linear that reads the quantized arrays
/// `values`, `scales` and `zeros` (or none) as its weight, with the same
/// input, bias and attributes.
void readQuantized(ArrayRef<LinearOp> linears, Value values, Value scales,
                   Value zeros);

} // namespace mlir::llmserve

#endif
