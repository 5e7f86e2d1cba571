//===- LlmserveToLinalg.cpp - Elementwise llmserve ops as linalg.generic --===//
//
// The elementwise ops on the CPU pipeline's linalg path: silu_mul, gelu_mul,
// gelu and softcap become `linalg.generic` ops on tensors (all dimensions
// parallel, identity maps, the first input as the init).
// llmserve-to-cpu-kernels outlines such a generic like any op; one-shot bufferization and the transform schedule
// `cpu-kernels.mlir` turn its kernel into vector code.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include <cmath>

namespace mlir::llmserve {
#define GEN_PASS_DEF_LLMSERVETOLINALG
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

using ScalarBody = function_ref<Value(ImplicitLocOpBuilder &, ValueRange)>;

/// `body` applied element by element to `inputs` (all of `op`'s result
/// shape), as a linalg.generic replacing `op`. The init is the first input:
/// the body never reads it, and the host program stays free of the size
/// computations a `tensor.empty` of dynamic shape would need.
void replaceByElementwiseGeneric(PatternRewriter &rewriter, Operation *op,
                                 ValueRange inputs, ScalarBody body) {
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  Value init = inputs.front();
  int64_t rank = type.getRank();
  SmallVector<AffineMap> maps(inputs.size() + 1,
                              rewriter.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, type, inputs, init, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        ImplicitLocOpBuilder b(nestedLoc, nested);
        linalg::YieldOp::create(b, body(b, args.drop_back()));
      });
  rewriter.replaceOp(op, generic.getResults());
}

Value constant(ImplicitLocOpBuilder &b, double value) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
}

/// f32 ops (the CPU kernels' type) not yet outlined; llmserve-to-cpu-kernels
/// refuses other types by the op's own name.
LogicalResult matchF32NotOutlined(Operation *op) {
  return success(!op->hasAttr(LlmserveDialect::kDispatchAttrName) &&
                 cast<RankedTensorType>(op->getResult(0).getType())
                     .getElementType()
                     .isF32());
}

/// silu(gate) * up, with silu(g) = g / (1 + exp(-g)).
struct SiluMulToGeneric : OpRewritePattern<SiluMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SiluMulOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(matchF32NotOutlined(op)))
      return failure();
    replaceByElementwiseGeneric(
        rewriter, op, op->getOperands(),
        [](ImplicitLocOpBuilder &b, ValueRange in) -> Value {
          Value negated = arith::NegFOp::create(b, in[0]);
          Value denominator =
              arith::AddFOp::create(b, constant(b, 1), math::ExpOp::create(b, negated));
          return arith::MulFOp::create(
              b, arith::DivFOp::create(b, in[0], denominator), in[1]);
        });
    return success();
  }
};

/// 0.5 x (1 + erf(x / sqrt 2)), or with tanh(sqrt(2/pi) (x + 0.044715 x^3)).
Value gelu(ImplicitLocOpBuilder &b, Value x, GeluApproximation approximation) {
  Value inner;
  if (approximation == GeluApproximation::tanh) {
    Value cube = arith::MulFOp::create(b, arith::MulFOp::create(b, x, x), x);
    Value arg = arith::MulFOp::create(
        b, constant(b, std::sqrt(2.0 / M_PI)),
        arith::AddFOp::create(b, x, arith::MulFOp::create(b, constant(b, 0.044715), cube)));
    inner = math::TanhOp::create(b, arg);
  } else {
    inner = math::ErfOp::create(b, arith::MulFOp::create(b, x, constant(b, M_SQRT1_2)));
  }
  return arith::MulFOp::create(b, arith::MulFOp::create(b, constant(b, 0.5), x),
                               arith::AddFOp::create(b, constant(b, 1), inner));
}

struct GeluToGeneric : OpRewritePattern<GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(matchF32NotOutlined(op)))
      return failure();
    GeluApproximation approximation = op.getApproximation();
    replaceByElementwiseGeneric(
        rewriter, op, op->getOperands(),
        [&](ImplicitLocOpBuilder &b, ValueRange in) -> Value {
          return gelu(b, in[0], approximation);
        });
    return success();
  }
};

/// gelu(gate) * up (GeGLU).
struct GeluMulToGeneric : OpRewritePattern<GeluMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluMulOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(matchF32NotOutlined(op)))
      return failure();
    GeluApproximation approximation = op.getApproximation();
    replaceByElementwiseGeneric(
        rewriter, op, op->getOperands(),
        [&](ImplicitLocOpBuilder &b, ValueRange in) -> Value {
          return arith::MulFOp::create(b, gelu(b, in[0], approximation), in[1]);
        });
    return success();
  }
};

/// cap * tanh(x / cap).
struct SoftcapToGeneric : OpRewritePattern<SoftcapOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftcapOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(matchF32NotOutlined(op)))
      return failure();
    double cap = op.getCap().convertToDouble();
    replaceByElementwiseGeneric(
        rewriter, op, op->getOperands(),
        [&](ImplicitLocOpBuilder &b, ValueRange in) -> Value {
          Value capped =
              math::TanhOp::create(b, arith::DivFOp::create(b, in[0], constant(b, cap)));
          return arith::MulFOp::create(b, constant(b, cap), capped);
        });
    return success();
  }
};

struct LlmserveToLinalgPass
    : public mlir::llmserve::impl::LlmserveToLinalgBase<LlmserveToLinalgPass> {
  void runOnOperation() override {
    // One walk, no folding and no dead-code removal: the host program keeps
    // every op it had (kv_write's result may be unused).
    RewritePatternSet patterns(&getContext());
    populateLlmserveToLinalgPatterns(patterns);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void mlir::llmserve::populateLlmserveToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<SiluMulToGeneric, GeluMulToGeneric, GeluToGeneric, SoftcapToGeneric>(
      patterns.getContext());
}
