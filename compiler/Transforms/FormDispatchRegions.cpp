//===- FormDispatchRegions.cpp - Linears and their elementwise consumer ---===//
//
// Puts an elementwise linalg.generic and the linears whose only user it is
// into one llmserve.dispatch_region, which the CPU target compiles to one
// kernel: the generic's body runs on each workgroup's block of the linears'
// outputs while it is in cache, and the linears' outputs are never written
// to memory (a gated MLP's gate and up projections with SiLU; GPT-2's c_fc
// with GELU).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Conversion/Common/Dispatch.h"
#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_FORMDISPATCHREGIONS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

bool isF32(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType().isF32();
}

/// An f32 2-D elementwise generic with identity maps that does not read its
/// init (llmserve-to-linalg's silu_mul and gelu).
bool isFusableEpilogue(linalg::GenericOp g) {
  return isElementwise(g) && g.getNumLoops() == 2 && isF32(g.getResult(0)) &&
         !g.payloadUsesValueFromOperand(g.getDpsInitOperand(0)) &&
         !g->hasAttr(LlmserveDialect::kDispatchAttrName);
}

/// The linears `g` reads that can join its region, in program order: only
/// `g` uses them, they read one input, and their weights are checkpoint
/// weights of one shape with whole 16-column panels.
SmallVector<LinearOp> fusableLinears(linalg::GenericOp g) {
  SmallVector<LinearOp> linears;
  for (Value input : g.getDpsInputs()) {
    auto linear = input.getDefiningOp<LinearOp>();
    if (!linear || llvm::is_contained(linears, linear) ||
        linear->hasAttr(LlmserveDialect::kDispatchAttrName) ||
        !isF32(linear.getResult()) ||
        !llvm::all_of(linear->getUsers(),
                      [&](Operation *user) { return user == g; }))
      continue;
    // The fused kernel reads f32 weights in panels.
    Value weight = linear.getWeight();
    if (!weight.getDefiningOp<WeightOp>() || linear.getScales() || !isF32(weight) ||
        cast<RankedTensorType>(weight.getType()).getDimSize(0) % LlmserveDialect::kPanelWidth != 0)
      continue;
    if (!linears.empty() &&
        (linear.getInput() != linears.front().getInput() ||
         weight.getType() != linears.front().getWeight().getType()))
      continue;
    linears.push_back(linear);
  }
  llvm::sort(linears, [](LinearOp a, LinearOp b) {
    return a->isBeforeInBlock(b);
  });
  return linears;
}

void formRegion(linalg::GenericOp g, ArrayRef<LinearOp> linears) {
  // The shared input first: the region's rows are its rows.
  LinearOp first = linears.front();
  llvm::SetVector<Value> inputs;
  inputs.insert(first.getInput());
  for (LinearOp linear : linears) {
    inputs.insert(linear.getWeight());
    if (Value bias = linear.getBias())
      inputs.insert(bias);
  }
  for (Value operand : g->getOperands())
    if (!llvm::is_contained(linears, operand.getDefiningOp<LinearOp>()))
      inputs.insert(operand);

  OpBuilder b(g);
  Location loc = g.getLoc();
  auto region = DispatchRegionOp::create(b, loc, g->getResultTypes(),
                                         inputs.getArrayRef());
  SmallVector<Location> locations(inputs.size(), loc);
  Block *body = b.createBlock(&region.getBody(), {},
                              TypeRange(ValueRange(inputs.getArrayRef())), locations);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  for (LinearOp linear : linears)
    b.clone(*linear, mapping);
  YieldOp::create(b, loc, b.clone(*g, mapping)->getResults());
  g->replaceAllUsesWith(region.getResults());
  g->erase();
  for (LinearOp linear : llvm::reverse(linears))
    linear->erase();
}

struct FormDispatchRegionsPass
    : public mlir::llmserve::impl::FormDispatchRegionsBase<FormDispatchRegionsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> epilogues;
    for (auto func : getOperation().getOps<func::FuncOp>())
      func.walk([&](linalg::GenericOp g) {
        if (!g->getParentOfType<DispatchRegionOp>() && isFusableEpilogue(g))
          epilogues.push_back(g);
      });
    for (linalg::GenericOp g : epilogues)
      if (SmallVector<LinearOp> linears = fusableLinears(g); !linears.empty())
        formRegion(g, linears);
  }
};

} // namespace
