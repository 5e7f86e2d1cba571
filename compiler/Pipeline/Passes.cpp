//===- Passes.cpp - Registration of llmserve passes and pipelines ---------===//

#include "compiler/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::llmserve::buildCpuKernelsToLLVMPipeline(OpPassManager &pm) {
  // Kernels are scf loops over memrefs with math and arith; the upstream
  // conversions lower them. Math functions without an LLVM intrinsic (tanh,
  // erf) become libm calls, resolved when the runtime loads the .so.
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::llmserve::registerLlmservePasses() {
  registerLlmserveConversionPasses();
  PassPipelineRegistration<>(
      "llmserve-cpu-kernels-to-llvm",
      "Lower the kernels module built by llmserve-to-cpu-kernels to the LLVM "
      "dialect",
      buildCpuKernelsToLLVMPipeline);
}
