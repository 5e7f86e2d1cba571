//===- LoopEmitter.cpp ----------------------------------------------------===//

#include "compiler/Conversion/Common/LoopEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::llmserve;

Value LoopEmitter::index(int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

Value LoopEmitter::f32(double v) {
  return arith::ConstantFloatOp::create(b, b.getF32Type(),
                                        APFloat(static_cast<float>(v)));
}

Value LoopEmitter::i32(int32_t v) {
  return arith::ConstantIntOp::create(b, b.getI32Type(), v);
}

void LoopEmitter::forLoop(Value lb, Value ub, int64_t step,
                          const std::function<void(Value)> &body) {
  auto loop = scf::ForOp::create(b, lb, ub, index(step));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  body(loop.getInductionVar());
}

SmallVector<Value> LoopEmitter::forLoop(
    Value lb, Value ub, int64_t step, ValueRange init,
    const std::function<SmallVector<Value>(Value, ValueRange)> &body) {
  auto loop = scf::ForOp::create(b, lb, ub, index(step), init);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *block = loop.getBody();
    if (!block->empty())
      block->getTerminator()->erase();
    b.setInsertionPointToEnd(block);
    SmallVector<Value> next =
        body(loop.getInductionVar(), loop.getRegionIterArgs());
    scf::YieldOp::create(b, next);
  }
  return SmallVector<Value>(loop.getResults());
}

void LoopEmitter::ifThen(Value cond, const std::function<void()> &body) {
  auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

void LoopEmitter::ifElse(Value cond, const std::function<void()> &thenBody,
                         const std::function<void()> &elseBody) {
  auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  thenBody();
  b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
  elseBody();
}

Value LoopEmitter::ifElse(Value cond, Type type,
                          const std::function<Value()> &thenValue,
                          const std::function<Value()> &elseValue) {
  return ifElse(
      cond, TypeRange{type},
      [&]() -> SmallVector<Value> { return {thenValue()}; },
      [&]() -> SmallVector<Value> { return {elseValue()}; })[0];
}

SmallVector<Value>
LoopEmitter::ifElse(Value cond, TypeRange types,
                    const std::function<SmallVector<Value>()> &thenValues,
                    const std::function<SmallVector<Value>()> &elseValues) {
  auto ifOp = scf::IfOp::create(b, types, cond,
                                /*addThenBlock=*/true, /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, thenValues());
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, elseValues());
  return SmallVector<Value>(ifOp.getResults());
}
