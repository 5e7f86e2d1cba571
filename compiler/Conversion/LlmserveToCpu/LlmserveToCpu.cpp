//===- LlmserveToCpu.cpp - Outline llmserve ops into CPU kernels ----------===//
//
// Every compute op (or dispatch region) of an entry function becomes one
// dispatch: a kernel in the nested `kernels` module, written against the
// bundle ABI (bindings, push constants, workgroup id), and an
// `llmserve.dispatch` attribute on the op that names the kernel and its
// grid. The entry function itself stays at the tensor level: it is the host
// program the bundle writer serialises. Each op family's kernel is built in
// its own file (CpuKernels.h).
//
// Binding order is the op's operands (a region's inputs) then its results
// (kv_write's result is its cache operand, updated in place, and is not
// bound twice). Push constants are the dynamic sizes of the bindings, in
// binding order. Grid expressions refer to push constant k as `$k`.
//
// Kernels process rows independently with a fixed reduction order, so a
// row's result does not depend on which other rows share the step (batch
// invariance).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "compiler/Conversion/Common/Dispatch.h"
#include "compiler/Conversion/Common/KernelModule.h"
#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"
#include "llmserve/IR/LlmserveOps.h"

#include "llvm/ADT/TypeSwitch.h"

namespace mlir::llmserve {
#define GEN_PASS_DEF_LLMSERVETOCPUKERNELS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

FailureOr<Grid> buildKernel(CpuKernelEmitter &e, Operation *op,
                            CpuInstructions instructions) {
  // A linear's or expert_linear's weight alone may be narrow, widened as it
  // is read; and a KV cache may hold FP8 codes, converted as they are
  // written and read.
  for (OpOperand &operand : op->getOpOperands()) {
    auto linear = dyn_cast<LinearOp>(op);
    auto experts = dyn_cast<ExpertLinearOp>(op);
    if ((linear && operand.get() == linear.getWeight()) ||
        (experts && operand.get() == experts.getWeight()))
      continue;
    if (isa<KvWriteOp, PagedAttentionOp>(op) &&
        isa<Float8E4M3FNType>(getElementTypeOrSelf(operand.get().getType())))
      continue;
    Type type = operand.get().getType();
    if (auto element = cast<RankedTensorType>(type).getElementType();
        isa<FloatType>(element) && !element.isF32())
      return op->emitOpError("CPU kernels compute in f32; got ") << type,
             failure();
  }
  return llvm::TypeSwitch<Operation *, FailureOr<Grid>>(op)
      .Case<EmbeddingOp, GatherRowsOp>(
          [&](auto) { return buildGatherKernel(e, op); })
      .Case<RmsNormOp, LayerNormOp>(
          [&](auto o) { return buildNormKernel(e, normParams(o)); })
      .Case([&](LinearOp o) -> FailureOr<Grid> {
        if (isa<Float8E4M3FNType>(o.getWeight().getType().getElementType()))
          return o.emitOpError("has no CPU kernel for FP8 weights (llmc "
                               "compile reads an FP8 checkpoint dequantized "
                               "for the CPU)"),
                 failure();
        return buildLinearKernel(e, o, instructions);
      })
      .Case([&](RopeOp o) { return buildRopeKernel(e, o); })
      .Case([&](KvWriteOp o) { return buildKvWriteKernel(e, o); })
      .Case([&](PagedAttentionOp o) { return buildPagedAttentionKernel(e, o); })
      .Case([&](linalg::GenericOp g) { return buildElementwiseKernel(e, g); })
      .Case([&](DispatchRegionOp r) { return buildDispatchRegionKernel(e, r); })
      .Case([&](MoeRouterOp o) { return buildMoeRouterKernel(e, o); })
      .Case([&](ExpertLinearOp o) { return buildExpertLinearKernel(e, o); })
      .Case([&](MoeCombineOp o) { return buildMoeCombineKernel(e, o); })
      .Case<SiluMulOp, GeluMulOp, GeluOp, SoftcapOp>([&](auto) -> FailureOr<Grid> {
        return op->emitOpError("has no CPU kernel of its own: "
                               "llmserve-to-linalg makes it a "
                               "linalg.generic first"),
               failure();
      })
      .Case([&](AdjustLogitsOp) { return buildAdjustLogitsKernel(e); })
      .Case([&](LogprobsOp o) { return buildLogprobsKernel(e, o); })
      .Case([&](SampleOp) { return buildSampleKernel(e); })
      .Default([&](Operation *) -> FailureOr<Grid> {
        return op->emitOpError("has no CPU kernel"), failure();
      });
}

struct LlmserveToCpuKernelsPass
    : public mlir::llmserve::impl::LlmserveToCpuKernelsBase<
          LlmserveToCpuKernelsPass> {
  using LlmserveToCpuKernelsBase::LlmserveToCpuKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    ModuleOp kernels = getOrCreateKernelModule(module);

    int64_t counter = std::distance(kernels.getOps<func::FuncOp>().begin(),
                                    kernels.getOps<func::FuncOp>().end());
    KernelsByCode kernelsByCode;
    for (Operation *op : opsToOutline(module)) {
      std::string name = dispatchKernelName(op, counter++);
      CpuKernelEmitter emitter(kernels, dispatchSymbol(name), op->getLoc(),
                               dispatchBindingTypes(op));
      FailureOr<Grid> grid = buildKernel(emitter, op, {avx512, vnni, bf16});
      if (failed(grid)) {
        emitter.function().erase();
        return signalPassFailure();
      }
      emitter.finish();
      StringAttr symbol = kernelsByCode.intern(emitter.function());
      setDispatch(op, {dispatchAttr(op->getContext(), name, symbol, *grid)});
    }
  }

  static ModuleOp getOrCreateKernelModule(ModuleOp module) {
    if (auto kernels = lookupKernelModule<ModuleOp>(module))
      return kernels;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    return ModuleOp::create(b, module.getLoc(), kKernelModuleName);
  }
};

} // namespace
