//===- Norm.h - What a norm kernel computes, for both targets ---*- C++ -*-===//
//
// rms_norm and layer_norm share one kernel per target; these are the choices
// that kernel makes, read from either op.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_COMMON_NORM_H
#define LLMSERVE_CONVERSION_COMMON_NORM_H

#include "llmserve/IR/LlmserveOps.h"

namespace mlir::llmserve {

struct NormParams {
  bool hasResidual = false;
  bool hasBias = false;
  /// layer_norm subtracts the mean; rms_norm does not.
  bool centered = false;
  double epsilon = 0;
  /// Added to the weight (Gemma's 1 + weight).
  double weightOffset = 0;
};

inline NormParams normParams(RmsNormOp op) {
  return {bool(op.getResidual()), /*hasBias=*/false, /*centered=*/false,
          op.getEpsilon().convertToDouble(), op.getWeightOffset().convertToDouble()};
}

inline NormParams normParams(LayerNormOp op) {
  return {bool(op.getResidual()), /*hasBias=*/true, /*centered=*/true,
          op.getEpsilon().convertToDouble(), /*weightOffset=*/0};
}

} // namespace mlir::llmserve

#endif // LLMSERVE_CONVERSION_COMMON_NORM_H
