//===- Passes.td - llmserve conversion passes --------------*- tablegen -*-===//

#ifndef LLMSERVE_CONVERSION_PASSES
#define LLMSERVE_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def LlmserveToCpuKernels : Pass<"llmserve-to-cpu-kernels", "ModuleOp"> {
  let summary = "Outline every llmserve op into a CPU kernel of the bundle ABI";
  let description = [{
    Each compute op of the module's functions becomes one dispatch: a kernel
    `func.func @llmserve_dN_<op>(bindings, push_constants, wg_x, wg_y, wg_z)`
    in the nested module `@kernels`, built from scf loops over memref views of
    the bound buffers, and an `llmserve.dispatch` attribute on the op naming
    the kernel and its grid. The functions themselves stay at the tensor level
    as the host program that `llmc compile` writes into the bundle manifest.

    Bindings are the op's operands then its results (kv_write updates its
    cache operand in place); push constants are the bindings' dynamic sizes
    in binding order; grid expressions name push constant k as `$k`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

#endif
