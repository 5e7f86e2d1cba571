//===- Passes.td - llmserve kernel transforms --------------*- tablegen -*-===//

#ifndef LLMSERVE_TRANSFORMS_PASSES
#define LLMSERVE_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def ApproximateMath : Pass<"llmserve-approximate-math"> {
  let summary = "Replace math.exp, log, tanh and erf by inline polynomials";
  let description = [{
    The kernels' exponentials and logarithms (softmax, SiLU, GELU, sampling)
    otherwise become calls into libm, one element at a time. Upstream's f32
    polynomial approximations are a few ulp from libm, inline, and
    vectorizable by LLVM.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

#endif
