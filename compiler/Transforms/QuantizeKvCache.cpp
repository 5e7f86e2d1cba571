//===- QuantizeKvCache.cpp - FP8 e4m3 KV caches ---------------------------===//

#include "compiler/Transforms/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_QUANTIZEKVCACHE
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

struct QuantizeKvCachePass
    : public mlir::llmserve::impl::QuantizeKvCacheBase<QuantizeKvCachePass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isDeclaration() && failed(quantize(func)))
        return signalPassFailure();
  }

  LogicalResult quantize(func::FuncOp func) {
    Builder b(&getContext());
    Type fp8 = b.getType<Float8E4M3FNType>();
    FloatAttr unitScale = b.getF32FloatAttr(1.0f);
    Block &body = func.getBody().front();
    // The caches and, through kv_write, their updated values.
    SmallVector<Value> caches;
    for (BlockArgument arg : body.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), LlmserveDialect::kKvCacheAttrName))
        caches.push_back(arg);
    while (!caches.empty()) {
      Value cache = caches.pop_back_val();
      auto type = cast<RankedTensorType>(cache.getType());
      if (type.getElementType() == fp8)
        continue;
      cache.setType(type.clone(fp8));
      for (OpOperand &use : cache.getUses()) {
        Operation *user = use.getOwner();
        if (auto write = dyn_cast<KvWriteOp>(user);
            write && use.get() == write.getCache()) {
          write.setScaleAttr(unitScale);
          caches.push_back(write.getResult());
        } else if (auto attention = dyn_cast<PagedAttentionOp>(user)) {
          attention.setKeyScaleAttr(unitScale);
          attention.setValueScaleAttr(unitScale);
        } else {
          return user->emitOpError(
              "uses a KV cache, which only kv_write (as its cache) and "
              "paged_attention may read when it is stored in FP8");
        }
      }
    }
    func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                   func.getResultTypes()));
    return success();
  }
};

} // namespace
