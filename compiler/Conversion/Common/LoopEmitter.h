//===- LoopEmitter.h - Builder helpers shared by the kernel emitters ------===//
//
// The CPU and GPU kernel emitters both build their bodies from scf loops and
// conditionals over scalars; LoopEmitter holds the builder and those helpers.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_COMMON_LOOPEMITTER_H
#define LLMSERVE_CONVERSION_COMMON_LOOPEMITTER_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <functional>

namespace mlir::llmserve {

class LoopEmitter {
public:
  LoopEmitter(Location loc, MLIRContext *ctx) : b(loc, ctx) {}

  ImplicitLocOpBuilder &builder() { return b; }

  Value index(int64_t v);
  Value f32(double v);
  Value i32(int32_t v);

  /// `for (iv = lb; iv < ub; iv += step) body(iv)`.
  void forLoop(Value lb, Value ub, int64_t step,
               const std::function<void(Value)> &body);
  /// The same loop carrying values; returns their final values.
  SmallVector<Value> forLoop(
      Value lb, Value ub, int64_t step, ValueRange init,
      const std::function<SmallVector<Value>(Value, ValueRange)> &body);
  /// `if (cond) body()`.
  void ifThen(Value cond, const std::function<void()> &body);
  /// `if (cond) thenBody(); else elseBody();`.
  void ifElse(Value cond, const std::function<void()> &thenBody,
              const std::function<void()> &elseBody);
  /// `cond ? thenValue() : elseValue()`, evaluating only the chosen side.
  Value ifElse(Value cond, Type type, const std::function<Value()> &thenValue,
               const std::function<Value()> &elseValue);
  /// The same with several values, of `types`.
  SmallVector<Value>
  ifElse(Value cond, TypeRange types,
         const std::function<SmallVector<Value>()> &thenValues,
         const std::function<SmallVector<Value>()> &elseValues);

protected:
  ImplicitLocOpBuilder b;
};

} // namespace mlir::llmserve

#endif
