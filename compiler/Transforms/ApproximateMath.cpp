//===- ApproximateMath.cpp - Inline polynomial math -----------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;

namespace {

struct ApproximateMathPass
    : public mlir::llmserve::impl::ApproximateMathBase<ApproximateMathPass> {
  using ApproximateMathBase::ApproximateMathBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [&](StringRef name) {
          return llvm::is_contained(
                     {"math.exp", "math.log", "math.tanh", "math.erf"},
                     name) ||
                 (trigonometry &&
                  llvm::is_contained({"math.sin", "math.cos"}, name));
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
