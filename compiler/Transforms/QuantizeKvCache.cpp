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
    Block &body = func.getBody().front();
    // The caches and, through kv_write, their updated values, each with its
    // scale: the checkpoint's, or 1.
    SmallVector<std::pair<Value, FloatAttr>> caches;
    for (BlockArgument arg : body.getArguments()) {
      auto kv = func.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(),
                                                      LlmserveDialect::kKvCacheAttrName);
      if (!kv)
        continue;
      FloatAttr scale = b.getF32FloatAttr(1.0f);
      if (Attribute given = kv.get("scale")) {
        auto value = dyn_cast<FloatAttr>(given);
        if (!value || !value.getType().isF32() || !value.getValue().isFiniteNonZero() ||
            value.getValue().isNegative())
          return func.emitOpError("argument #")
                 << arg.getArgNumber() << ": the scale of a KV cache is a positive, finite f32, got "
                 << given;
        scale = value;
      }
      caches.push_back({arg, scale});
    }
    while (!caches.empty()) {
      auto [cache, scale] = caches.pop_back_val();
      auto type = cast<RankedTensorType>(cache.getType());
      if (type.getElementType() == fp8)
        continue;
      cache.setType(type.clone(fp8));
      for (OpOperand &use : cache.getUses()) {
        Operation *user = use.getOwner();
        if (auto write = dyn_cast<KvWriteOp>(user);
            write && use.get() == write.getCache()) {
          write.setScaleAttr(scale);
          caches.push_back({write.getResult(), scale});
        } else if (auto attention = dyn_cast<PagedAttentionOp>(user)) {
          if (use.get() == attention.getKeyCache())
            attention.setKeyScaleAttr(scale);
          else
            attention.setValueScaleAttr(scale);
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
