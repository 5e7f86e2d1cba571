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

// The scalar body of each elementwise op's generic, by op.

/// silu(gate) * up, with silu(g) = g / (1 + exp(-g)).
Value scalarBody(SiluMulOp, ImplicitLocOpBuilder &b, ValueRange in) {
  Value negated = arith::NegFOp::create(b, in[0]);
  Value denominator =
      arith::AddFOp::create(b, constant(b, 1), math::ExpOp::create(b, negated));
  return arith::MulFOp::create(b, arith::DivFOp::create(b, in[0], denominator), in[1]);
}

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

Value scalarBody(GeluOp op, ImplicitLocOpBuilder &b, ValueRange in) {
  return gelu(b, in[0], op.getApproximation());
}

/// gelu(gate) * up (GeGLU).
Value scalarBody(GeluMulOp op, ImplicitLocOpBuilder &b, ValueRange in) {
  return arith::MulFOp::create(b, gelu(b, in[0], op.getApproximation()), in[1]);
}

/// cap * tanh(x / cap).
Value scalarBody(SoftcapOp op, ImplicitLocOpBuilder &b, ValueRange in) {
  double cap = op.getCap().convertToDouble();
  Value capped = math::TanhOp::create(b, arith::DivFOp::create(b, in[0], constant(b, cap)));
  return arith::MulFOp::create(b, constant(b, cap), capped);
}

/// An f32 elementwise op that is not outlined becomes a linalg.generic over
/// its operands whose body is scalarBody(op, ...).
template <typename OpT>
struct ElementwiseToGeneric : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &rewriter) const override {
    if (failed(matchF32NotOutlined(op)))
      return failure();
    replaceByElementwiseGeneric(rewriter, op, op->getOperands(),
                                [&](ImplicitLocOpBuilder &b, ValueRange in) -> Value {
                                  return scalarBody(op, b, in);
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
  patterns.add<ElementwiseToGeneric<SiluMulOp>, ElementwiseToGeneric<GeluMulOp>,
               ElementwiseToGeneric<GeluOp>, ElementwiseToGeneric<SoftcapOp>>(
      patterns.getContext());
}
