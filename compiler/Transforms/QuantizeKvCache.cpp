//===- QuantizeKvCache.cpp - FP8 e4m3 KV caches ---------------------------===//

#include "compiler/Transforms/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

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
    // scales: the checkpoint's (one, or one per KV head), or 1.
    SmallVector<std::pair<Value, DenseF32ArrayAttr>> caches;
    for (BlockArgument arg : body.getArguments()) {
      auto kv = func.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(),
                                                      LlmserveDialect::kKvCacheAttrName);
      if (!kv)
        continue;
      DenseF32ArrayAttr scale = b.getDenseF32ArrayAttr({1.0f});
      if (Attribute given = kv.get("scale")) {
        auto values = dyn_cast<DenseF32ArrayAttr>(given);
        int64_t kvHeads = cast<RankedTensorType>(arg.getType()).getDimSize(2);
        if (!values || (values.size() != 1 && values.size() != kvHeads) ||
            !llvm::all_of(values.asArrayRef(),
                          [](float f) { return f > 0 && std::isfinite(f); }))
          return func.emitOpError("argument #")
                 << arg.getArgNumber()
                 << ": the scales of a KV cache are one positive, finite f32 or one per KV head ("
                 << kvHeads << "), got " << given;
        scale = values;
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
