//===- MathToLlvmIntrinsics.cpp - f32 math as LLVM intrinsic calls --------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_MATHTOLLVMINTRINSICS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;

namespace {

/// `op` on f32 becomes `llvm.call_intrinsic "<intrinsic>"` of its operands.
template <typename Op>
struct ToIntrinsic : OpRewritePattern<Op> {
  ToIntrinsic(MLIRContext *ctx, StringRef intrinsic)
      : OpRewritePattern<Op>(ctx), intrinsic(intrinsic) {}

  LogicalResult matchAndRewrite(Op op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return failure();
    rewriter.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(
        op, op.getType(), rewriter.getStringAttr(intrinsic),
        op->getOperands());
    return success();
  }

  std::string intrinsic;
};

/// rsqrt(x) = 1 / sqrt(x), with IEEE sqrt and division.
struct RsqrtToSqrt : OpRewritePattern<math::RsqrtOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::RsqrtOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return failure();
    Location loc = op.getLoc();
    Value sqrt = LLVM::CallIntrinsicOp::create(
                     rewriter, loc, op.getType(),
                     rewriter.getStringAttr("llvm.sqrt.f32"),
                     ValueRange{op.getOperand()})
                     .getResult(0);
    Value one = arith::ConstantFloatOp::create(rewriter, loc,
                                               rewriter.getF32Type(),
                                               APFloat(1.0f));
    rewriter.replaceOpWithNewOp<arith::DivFOp>(op, one, sqrt);
    return success();
  }
};

struct MathToLlvmIntrinsicsPass
    : public mlir::llmserve::impl::MathToLlvmIntrinsicsBase<
          MathToLlvmIntrinsicsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<ToIntrinsic<math::FloorOp>>(ctx, "llvm.floor.f32");
    patterns.add<ToIntrinsic<math::RoundEvenOp>>(ctx, "llvm.roundeven.f32");
    patterns.add<ToIntrinsic<math::FmaOp>>(ctx, "llvm.fma.f32");
    patterns.add<ToIntrinsic<math::AbsFOp>>(ctx, "llvm.fabs.f32");
    patterns.add<ToIntrinsic<math::SqrtOp>>(ctx, "llvm.sqrt.f32");
    patterns.add<RsqrtToSqrt>(ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
