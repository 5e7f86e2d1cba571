//===- Dispatch.cpp - What every target's outlining pass shares -----------===//

#include "compiler/Conversion/Common/Dispatch.h"

#include "compiler/Conversion/Passes.h"
#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::llmserve;

SmallVector<Operation *> mlir::llmserve::opsToOutline(ModuleOp module) {
  SmallVector<Operation *> ops;
  for (auto func : module.getOps<func::FuncOp>())
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      bool compute = (isa<LlmserveDialect>(op->getDialect()) && !isa<WeightOp>(op)) ||
                     isa<linalg::GenericOp>(op);
      if (compute && !op->hasAttr(LlmserveDialect::kDispatchAttrName))
        ops.push_back(op);
      // A dispatch region is one dispatch: its ops are its kernel's.
      return isa<DispatchRegionOp>(op) ? WalkResult::skip() : WalkResult::advance();
    });
  return ops;
}

SmallVector<Value> mlir::llmserve::dispatchOperands(Operation *op) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return linalgOp.getDpsInputs();
  return SmallVector<Value>(op->getOperands());
}

Value mlir::llmserve::inPlaceOperand(OpResult result) {
  Operation *op = result.getOwner();
  if (auto write = dyn_cast<KvWriteOp>(op))
    return write.getCache();
  auto region = dyn_cast<DispatchRegionOp>(op);
  if (!region)
    return {};
  Value yielded = region.getBody().front().getTerminator()->getOperand(
      result.getResultNumber());
  auto write = yielded.getDefiningOp<KvWriteOp>();
  auto cache = write ? dyn_cast<BlockArgument>(write.getCache()) : nullptr;
  return cache ? region.getInputs()[cache.getArgNumber()] : Value();
}

SmallVector<Value> mlir::llmserve::freshResults(Operation *op) {
  SmallVector<Value> results;
  for (OpResult result : op->getResults())
    if (!inPlaceOperand(result))
      results.push_back(result);
  return results;
}

SmallVector<RankedTensorType> mlir::llmserve::dispatchBindingTypes(Operation *op) {
  SmallVector<RankedTensorType> types;
  SmallVector<Value> bound = dispatchOperands(op);
  llvm::append_range(bound, freshResults(op));
  for (Value v : bound)
    types.push_back(cast<RankedTensorType>(v.getType()));
  return types;
}

bool mlir::llmserve::isElementwise(linalg::GenericOp generic) {
  return generic.getNumDpsInits() == 1 && !generic.hasIndexSemantics() &&
         generic.getNumParallelLoops() == generic.getNumLoops() &&
         llvm::all_of(generic.getIndexingMapsArray(),
                      [](AffineMap map) { return map.isIdentity(); });
}

std::string mlir::llmserve::dispatchKernelName(Operation *op, int64_t index) {
  return "d" + std::to_string(index) + "_" + op->getName().stripDialect().str();
}

std::string mlir::llmserve::dispatchSymbol(StringRef kernelName) {
  return ("llmserve_" + kernelName).str();
}

DictionaryAttr mlir::llmserve::dispatchAttr(MLIRContext *context,
                                            StringRef kernelName,
                                            StringAttr symbol,
                                            ArrayRef<std::string> grid,
                                            ArrayRef<NamedAttribute> extra) {
  Builder b(context);
  SmallVector<Attribute> gridAttrs;
  for (const std::string &g : grid)
    gridAttrs.push_back(b.getStringAttr(g));
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("kernel", b.getStringAttr(kernelName)),
      b.getNamedAttr("symbol", symbol),
      b.getNamedAttr("grid", b.getArrayAttr(gridAttrs))};
  llvm::append_range(fields, extra);
  return b.getDictionaryAttr(fields);
}

void mlir::llmserve::setDispatch(Operation *op, ArrayRef<DictionaryAttr> kernels) {
  assert(!kernels.empty() && "a dispatch has a kernel");
  if (kernels.size() == 1)
    return op->setAttr(LlmserveDialect::kDispatchAttrName, kernels.front());
  SmallVector<Attribute> array(kernels.begin(), kernels.end());
  op->setAttr(LlmserveDialect::kDispatchAttrName,
              ArrayAttr::get(op->getContext(), array));
}
