//===- GroupSiblingRopes.cpp - Ropes of one position array as one dispatch ===//
//
// A layer rotates its queries and its keys with the same positions and the
// same frequencies. Put in one llmserve.dispatch_region, the two ropes run
// as one kernel on sm_90, each block rotating one token's q and k: one
// launch fewer per layer.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_GROUPSIBLINGROPES
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

/// Whether `rope`'s input is available before `leader`.
bool inputAvailableBefore(RopeOp rope, RopeOp leader) {
  Value input = rope.getInput();
  Operation *def = input.getDefiningOp();
  return !def || def->getBlock() != leader->getBlock() ||
         def->isBeforeInBlock(leader);
}

/// Replaces `ropes` (in program order, one positions array and one set of
/// attributes) by one dispatch region at the first of them: the positions
/// are its first input, then each rope's input; it yields their results in
/// order.
void formGroup(ArrayRef<RopeOp> ropes) {
  RopeOp leader = ropes.front();
  SmallVector<Value> inputs = {leader.getPositions()};
  SmallVector<Type> resultTypes;
  for (RopeOp rope : ropes) {
    inputs.push_back(rope.getInput());
    resultTypes.push_back(rope.getType());
  }
  OpBuilder b(leader);
  Location loc = leader.getLoc();
  auto region = DispatchRegionOp::create(b, loc, resultTypes, inputs);
  SmallVector<Location> locations(inputs.size(), loc);
  Block *body = b.createBlock(&region.getBody(), {},
                              TypeRange(ValueRange(inputs)), locations);
  SmallVector<Value> results;
  for (size_t i = 0; i < ropes.size(); ++i) {
    RopeOp rope = ropes[i];
    IRMapping mapping;
    mapping.map(rope.getPositions(), body->getArgument(0));
    mapping.map(rope.getInput(), body->getArgument(i + 1));
    results.push_back(b.clone(*rope, mapping)->getResult(0));
  }
  YieldOp::create(b, loc, results);
  for (auto [i, rope] : llvm::enumerate(ropes)) {
    rope->replaceAllUsesWith(ValueRange{region.getResult(i)});
    rope->erase();
  }
}

struct GroupSiblingRopesPass
    : public mlir::llmserve::impl::GroupSiblingRopesBase<
          GroupSiblingRopesPass> {
  void runOnOperation() override {
    // Ropes by the positions they read, in program order. LongRoPE ropes,
    // which also read the sequences' context lengths, stay alone.
    llvm::MapVector<Value, SmallVector<RopeOp>> siblings;
    for (auto func : getOperation().getOps<func::FuncOp>())
      func.walk([&](RopeOp rope) {
        if (isa<func::FuncOp>(rope->getParentOp()) && !rope.getContextLen() &&
            !rope->hasAttr(LlmserveDialect::kDispatchAttrName))
          siblings[rope.getPositions()].push_back(rope);
      });
    // Each group starts at the first rope not yet grouped (every layer's q
    // and k read the same positions).
    for (auto &[positions, ropes] : siblings) {
      SmallVector<RopeOp> rest = ropes;
      while (rest.size() > 1) {
        RopeOp leader = rest.front();
        SmallVector<RopeOp> group = {leader}, later;
        for (RopeOp rope : ArrayRef(rest).drop_front()) {
          bool joins =
              rope->getBlock() == leader->getBlock() &&
              rope->getAttrDictionary() == leader->getAttrDictionary() &&
              inputAvailableBefore(rope, leader);
          (joins ? group : later).push_back(rope);
        }
        if (group.size() > 1)
          formGroup(group);
        rest = std::move(later);
      }
    }
  }
};

} // namespace
