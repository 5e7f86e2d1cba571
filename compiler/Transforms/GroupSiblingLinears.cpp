//===- GroupSiblingLinears.cpp - Linears of one input as one dispatch -----===//
//
// A transformer layer's q, k and v projections read one input, and so do a
// gated MLP's gate and up projections. Put in one llmserve.dispatch_region,
// they run as one kernel on sm_90, whose blocks each compute a tile of one of
// them: fewer launches per layer, and the narrow k and v projections share
// the SMs with q's blocks instead of running alone.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_GROUPSIBLINGLINEARS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Whether `linear` may join a group that `leader` starts: a weight of the
/// leader's element type (K is the shared input's), so that one kernel
/// streams both through the same shared-memory stages.
bool compatible(LinearOp leader, LinearOp linear) {
  return typeOf(linear.getWeight()).getElementType() ==
         typeOf(leader.getWeight()).getElementType();
}

/// Whether each operand of `linear` is available before `leader`, once the
/// weight ops defined between them move up (they have no operands).
bool availableBefore(LinearOp linear, LinearOp leader) {
  return llvm::all_of(linear->getOperands(), [&](Value v) {
    Operation *def = v.getDefiningOp();
    return !def || def->getBlock() != leader->getBlock() ||
           def->isBeforeInBlock(leader) || isa<WeightOp>(def);
  });
}

/// Replaces `linears` (in program order, one input) by one dispatch region
/// at the first of them: the shared input is its first input, then each
/// linear's other operands in order; it yields their results in order.
void formGroup(ArrayRef<LinearOp> linears) {
  LinearOp leader = linears.front();
  llvm::SetVector<Value> inputs;
  inputs.insert(leader.getInput());
  for (LinearOp linear : linears)
    for (Value v : linear->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && def->getBlock() == leader->getBlock() &&
          leader->isBeforeInBlock(def))
        def->moveBefore(leader);
      inputs.insert(v);
    }
  SmallVector<Type> resultTypes;
  for (LinearOp linear : linears)
    resultTypes.push_back(linear.getType());

  OpBuilder b(leader);
  Location loc = leader.getLoc();
  auto region =
      DispatchRegionOp::create(b, loc, resultTypes, inputs.getArrayRef());
  SmallVector<Location> locations(inputs.size(), loc);
  Block *body =
      b.createBlock(&region.getBody(), {},
                    TypeRange(ValueRange(inputs.getArrayRef())), locations);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  SmallVector<Value> results;
  for (LinearOp linear : linears)
    results.push_back(b.clone(*linear, mapping)->getResult(0));
  YieldOp::create(b, loc, results);
  for (auto [i, linear] : llvm::enumerate(linears)) {
    linear->replaceAllUsesWith(ValueRange{region.getResult(i)});
    linear->erase();
  }
}

struct GroupSiblingLinearsPass
    : public mlir::llmserve::impl::GroupSiblingLinearsBase<
          GroupSiblingLinearsPass> {
  void runOnOperation() override {
    // Linears by the input (and FP8 input scales) they read, in program
    // order.
    llvm::MapVector<std::pair<Value, Value>, SmallVector<LinearOp>> siblings;
    for (auto func : getOperation().getOps<func::FuncOp>())
      func.walk([&](LinearOp linear) {
        if (!isa<func::FuncOp>(linear->getParentOp()) ||
            linear->hasAttr(LlmserveDialect::kDispatchAttrName))
          return;
        siblings[{linear.getInput(), linear.getInputScales()}].push_back(
            linear);
      });
    for (auto &[input, linears] : siblings) {
      // f32 inputs have no tensor-core kernel to share.
      if (typeOf(input.first).getElementType().isF32())
        continue;
      LinearOp leader = linears.front();
      SmallVector<LinearOp> group = {leader};
      for (LinearOp linear : ArrayRef(linears).drop_front())
        if (linear->getBlock() == leader->getBlock() &&
            compatible(leader, linear) && availableBefore(linear, leader))
          group.push_back(linear);
      if (group.size() > 1)
        formGroup(group);
    }
  }
};

} // namespace
