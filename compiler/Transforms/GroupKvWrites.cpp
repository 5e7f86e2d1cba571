//===- GroupKvWrites.cpp - A layer's cache writes in its rope's kernel ----===//
//
// A layer writes its keys and its values into the paged caches at the same
// slots, right after it rotates its queries and keys. Put in the ropes'
// llmserve.dispatch_region, the writes run in the ropes' kernel on sm_90,
// which stores each rotated key into its cache as it computes it: a decode
// step launches two kernels fewer per layer. Without a rope (GPT-2), the
// writes of one slot mapping still run as one kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_GROUPKVWRITES
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

/// Whether `value` is available before `op`.
bool availableBefore(Value value, Operation *op) {
  Operation *def = value.getDefiningOp();
  return !def || def->getBlock() != op->getBlock() || def->isBeforeInBlock(op);
}

/// Whether `write` can move up to `to`: no other op between them reads its
/// cache, since the write updates the cache's buffer in place.
bool canMoveUpTo(KvWriteOp write, Operation *to) {
  Block *block = write->getBlock();
  return llvm::none_of(write.getCache().getUsers(), [&](Operation *user) {
    Operation *reader = block->findAncestorOpInBlock(*user);
    return reader && reader != write && to->isBeforeInBlock(reader) &&
           reader->isBeforeInBlock(write);
  });
}

/// Whether `op` is a rope kernel that can also write caches: a rope without
/// context lengths (not LongRoPE), or a dispatch region of such ropes
/// (llmserve-group-sibling-ropes).
bool isRopeKernel(Operation *op) {
  auto plainRope = [](Operation &o) {
    auto rope = dyn_cast<RopeOp>(o);
    return rope && !rope.getContextLen();
  };
  if (auto region = dyn_cast<DispatchRegionOp>(op))
    return llvm::all_of(region.getBody().front().without_terminator(),
                        plainRope);
  return plainRope(*op);
}

/// Moves the ops of `region` before it, in its place; returns them.
SmallVector<Operation *> inlineRegion(DispatchRegionOp region) {
  Block &body = region.getBody().front();
  for (auto [argument, input] :
       llvm::zip(body.getArguments(), region.getInputs()))
    argument.replaceAllUsesWith(input);
  SmallVector<Operation *> ops;
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    op.moveBefore(region);
    ops.push_back(&op);
  }
  region->replaceAllUsesWith(cast<YieldOp>(body.getTerminator()).getValues());
  region->erase();
  return ops;
}

/// Replaces `ops` (in program order, in one block, reading from other ops
/// only values computed before the first) by one dispatch region at the
/// first: its inputs are the values they read from other ops, in order of
/// first use; it yields their results that other ops use, in order.
void formRegion(ArrayRef<Operation *> ops) {
  llvm::SmallPtrSet<Operation *, 8> inside(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs;
  SmallVector<Value> results;
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      if (!inside.contains(operand.getDefiningOp()))
        inputs.insert(operand);
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !inside.contains(user); }))
        results.push_back(result);
  }
  OpBuilder b(ops.front());
  Location loc = ops.front()->getLoc();
  auto region = DispatchRegionOp::create(b, loc, ValueRange(results).getTypes(),
                                         inputs.getArrayRef());
  SmallVector<Location> locations(inputs.size(), loc);
  Block *body =
      b.createBlock(&region.getBody(), {},
                    ValueRange(inputs.getArrayRef()).getTypes(), locations);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  for (Operation *op : ops)
    b.clone(*op, mapping);
  YieldOp::create(b, loc, llvm::map_to_vector(results, [&](Value result) {
                    return mapping.lookup(result);
                  }));
  for (auto [result, replacement] : llvm::zip(results, region.getResults()))
    result.replaceAllUsesWith(replacement);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

/// Puts `writes` (of one slot mapping, in program order, their operands
/// computed before the first) in one dispatch region: the region of the
/// rope kernel that computes one of their inputs, when the writes read
/// nothing computed after it, or one of their own.
void groupWrites(ArrayRef<KvWriteOp> writes) {
  Operation *rope = nullptr;
  for (KvWriteOp write : writes) {
    Operation *def = write.getInput().getDefiningOp();
    if (def && def->getBlock() == write->getBlock() &&
        !def->hasAttr(LlmserveDialect::kDispatchAttrName) &&
        isRopeKernel(def)) {
      rope = def;
      break;
    }
  }
  if (rope && !llvm::all_of(writes, [&](KvWriteOp write) {
        return canMoveUpTo(write, rope) &&
               llvm::all_of(write->getOperands(), [&](Value v) {
                 return v.getDefiningOp() == rope || availableBefore(v, rope);
               });
      }))
    rope = nullptr;
  if (!rope && writes.size() < 2)
    return;
  SmallVector<Operation *> ops;
  if (auto region = dyn_cast_or_null<DispatchRegionOp>(rope))
    ops = inlineRegion(region);
  else if (rope)
    ops.push_back(rope);
  for (KvWriteOp write : writes)
    ops.push_back(write);
  formRegion(ops);
}

struct GroupKvWritesPass
    : public mlir::llmserve::impl::GroupKvWritesBase<GroupKvWritesPass> {
  void runOnOperation() override {
    // Writes by the slot mapping they read, in program order.
    llvm::MapVector<Value, SmallVector<KvWriteOp>> bySlots;
    for (auto func : getOperation().getOps<func::FuncOp>())
      func.walk([&](KvWriteOp write) {
        if (isa<func::FuncOp>(write->getParentOp()) &&
            !write->hasAttr(LlmserveDialect::kDispatchAttrName))
          bySlots[write.getSlotMapping()].push_back(write);
      });
    // Each group starts at the first write not yet grouped (every layer's
    // writes read the same slots); the later writes whose operands are
    // computed before it, and whose caches nothing reads in between, join
    // (the layer's other write).
    for (auto &[slots, writes] : bySlots) {
      SmallVector<KvWriteOp> rest = writes;
      while (!rest.empty()) {
        KvWriteOp leader = rest.front();
        SmallVector<KvWriteOp> group = {leader}, later;
        for (KvWriteOp write : ArrayRef(rest).drop_front()) {
          bool joins = write->getBlock() == leader->getBlock() &&
                       canMoveUpTo(write, leader) &&
                       llvm::all_of(write->getOperands(), [&](Value v) {
                         return availableBefore(v, leader);
                       });
          (joins ? group : later).push_back(write);
        }
        groupWrites(group);
        rest = std::move(later);
      }
    }
  }
};

} // namespace
