//===- Passes.cpp - Registration of llmserve passes and pipelines ---------===//

#include "compiler/Conversion/Passes.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::llmserve::buildCpuKernelsToLLVMPipeline(OpPassManager &pm) {
  // The elementwise kernels are linalg.generic ops on tensor views of their
  // buffers: bufferized in place, then tiled and vectorized by the schedule.
  pm.addPass(bufferization::createOneShotBufferizePass());
  pm.addPass(createApplyCpuSchedule());
  // Kernels are scf loops over memrefs with math, arith and vector; exp, log,
  // tanh and erf become inline polynomials, and the upstream conversions
  // lower the rest. Math functions left without an LLVM intrinsic become libm
  // calls, resolved when the runtime loads the .so.
  pm.addPass(createApproximateMath());
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
  // The poison padding of masked vector reads.
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::llmserve::buildGpuKernelsToNvvmPipeline(OpPassManager &pm) {
  // exp, log, tanh, erf, sin and cos become inline polynomials and the
  // remaining f32 math LLVM intrinsics (single PTX instructions), so the PTX
  // needs no libdevice. Kernel parameters are bare pointers (the bundle's
  // CUDA calling convention).
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  ApproximateMathOptions approximate;
  approximate.trigonometry = true;
  kernels.addPass(createApproximateMath(approximate));
  kernels.addPass(createMathToLlvmIntrinsics());
  // nvgpu's async copies (linear's cp.async pipeline) first, as upstream's
  // gpu-lower-to-nvvm pipeline does.
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createSCFToControlFlowPass());
  // Index and arith go to LLVM first (as in upstream's gpu-lower-to-nvvm
  // pipeline), so that the loops' block arguments are converted with them.
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createArithToLLVMConversionPass());
  kernels.addPass(createConvertIndexToLLVMPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::llmserve::registerLlmservePasses() {
  registerLlmserveConversionPasses();
  registerLlmserveTransformsPasses();
  PassPipelineRegistration<>(
      "llmserve-cpu-kernels-to-llvm",
      "Lower the kernels module built by llmserve-to-cpu-kernels to the LLVM "
      "dialect",
      buildCpuKernelsToLLVMPipeline);
  PassPipelineRegistration<>(
      "llmserve-gpu-kernels-to-nvvm",
      "Lower the gpu.module built by llmserve-to-gpu-kernels to the NVVM and "
      "LLVM dialects (bare-pointer parameters, no libdevice)",
      buildGpuKernelsToNvvmPipeline);
}
