//===- NarrowStorage.cpp - f16/bf16 storage of an f32 graph ---------------===//

#include "compiler/Transforms/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_NARROWSTORAGE
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

Type narrowed(Type type, FloatType storage) {
  return cast<RankedTensorType>(type).clone(storage);
}

struct NarrowStoragePass
    : public mlir::llmserve::impl::NarrowStorageBase<NarrowStoragePass> {
  using NarrowStorageBase::NarrowStorageBase;

  void runOnOperation() override {
    FloatType storage = narrowFloatType(&getContext(), dtype);
    if (!storage) {
      getOperation().emitError("unknown storage type '")
          << dtype << "' (expected bf16 or f16)";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isDeclaration() && failed(narrow(func, storage)))
        return signalPassFailure();
  }

  LogicalResult narrow(func::FuncOp func, FloatType storage) {
    Block &body = func.getBody().front();
    for (BlockArgument arg : body.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (!isF32Tensor(arg.getType()) ||
          func.getArgAttr(i, LlmserveDialect::kContractAttrName))
        continue;
      if (!func.getArgAttr(i, LlmserveDialect::kKvCacheAttrName))
        return func.emitOpError("argument #")
               << i
               << " is neither a step-contract array nor a KV cache, so its "
                  "storage type cannot change (compile with --dtype f32 to "
                  "keep the types as written)";
      arg.setType(narrowed(arg.getType(), storage));
    }

    // Values whose f32 type the contract fixes: what the function returns
    // and the logits that adjust_logits, sampling and log-probs read.
    llvm::SmallPtrSet<Value, 8> keep;
    for (Value v : body.getTerminator()->getOperands())
      keep.insert(v);
    func.walk([&](Operation *op) {
      if (auto o = dyn_cast<SampleOp>(op))
        keep.insert(o.getLogits());
      else if (auto o = dyn_cast<AdjustLogitsOp>(op))
        keep.insert(o.getLogits());
      else if (auto o = dyn_cast<LogprobsOp>(op))
        keep.insert(o.getLogits());
    });
    // Soft-capping of the logits (Gemma 2) computes on what the head's linear
    // gives in f32.
    SmallVector<Value> kept(keep.begin(), keep.end());
    while (!kept.empty())
      if (auto cap = kept.pop_back_val().getDefiningOp<SoftcapOp>())
        if (keep.insert(cap.getInput()).second)
          kept.push_back(cap.getInput());

    for (Operation &op : body.without_terminator()) {
      if (!isa<LlmserveDialect>(op.getDialect()))
        continue;
      // A quantized weight's arrays have the types its scheme fixes.
      if (auto weight = dyn_cast<WeightOp>(op); weight && weight.getQuantization())
        continue;
      for (OpResult result : op.getResults()) {
        if (!isF32Tensor(result.getType()))
          continue;
        if (auto attention = dyn_cast<PagedAttentionOp>(op);
            attention && result == attention.getLse())
          continue;
        // The router's weights are f32 whatever its logits.
        if (isa<MoeRouterOp>(op))
          continue;
        if (keep.contains(result)) {
          // linear computes f32 from narrow operands; other ops keep f32
          // only when their own float operands stayed f32.
          bool f32Operands = llvm::all_of(op.getOperandTypes(), [](Type t) {
            auto tensor = dyn_cast<RankedTensorType>(t);
            return !tensor || !isa<FloatType>(tensor.getElementType()) ||
                   tensor.getElementType().isF32();
          });
          if (isa<LinearOp>(op) || f32Operands)
            continue;
          return op.emitOpError("result #")
                 << result.getResultNumber()
                 << " must stay f32 (it is returned or sampled), and only "
                    "linear computes f32 from narrow operands";
        }
        result.setType(narrowed(result.getType(), storage));
      }
    }
    func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                   func.getResultTypes()));
    return success();
  }
};

} // namespace
