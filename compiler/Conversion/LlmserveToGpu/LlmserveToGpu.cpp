//===- LlmserveToGpu.cpp - Outline llmserve ops into CUDA kernels ---------===//
//
// The GPU counterpart of llmserve-to-cpu-kernels, with the same dispatch
// semantics: every compute op of an entry function becomes a kernel, here a
// `gpu.func` in the module's `gpu.module @kernels` (NVVM target sm_90), and
// an `llmserve.dispatch` attribute {kernel, symbol, grid, block,
// shared_bytes, programmatic_launch} on the op. An f16/bf16 linear gets two
// more kernels, for steps of at most 16 and of at most 64 rows (an array of
// three such attributes; the grids make exactly one of them non-empty), and
// so does a dispatch region of linears that read one input
// (llmserve-group-sibling-linears), which computes all of them; a region of
// ropes of one position array (llmserve-group-sibling-ropes) and the
// kv_writes of their layer (llmserve-group-kv-writes) is one kernel.
// Kernels whose code is the same (those of a model's layers) are one
// function, which their dispatches name as their symbol. Bindings are the op's
// operands then its results (a cache updated in place is bound once); push
// constants are the bindings' dynamic sizes in binding order; grid
// expressions refer to push constant k as `$k`. Kernels use static shared
// memory only, so `shared_bytes` (the dynamic shared memory of a launch) is 0,
// and each waits for the grids before it itself (GpuKernelEmitter::
// waitForPrerequisites), so `programmatic_launch` is true.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "compiler/Conversion/Common/Dispatch.h"
#include "compiler/Conversion/Common/KernelModule.h"
#include "compiler/Conversion/LlmserveToGpu/GpuKernels.h"
#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>

namespace mlir::llmserve {
#define GEN_PASS_DEF_LLMSERVETOGPUKERNELS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

/// The op that stands for `op`'s kernel: `op`, or the first op of a dispatch
/// region: its linears (llmserve-group-sibling-linears), or its ropes and
/// kv_writes (llmserve-group-sibling-ropes, llmserve-group-kv-writes).
static Operation *kernelKind(Operation *op) {
  if (auto region = dyn_cast<DispatchRegionOp>(op))
    return &region.getBody().front().front();
  return op;
}

int64_t mlir::llmserve::gpuBlockSize(Operation *op) {
  // linear and paged_attention: 4 warps (tensor-core tiles, attention
  // tiles), as expert_linear; moe_router a warp; the vocabulary's row
  // kernels: 16 warps, since a row has tens of thousands of logits (at 32,
  // ptxas spills the sampler's Gumbel noise and logprobs' ranking); other
  // row kernels: 8 warps striding over the row. A dispatch region of
  // siblings: as its ops.
  op = kernelKind(op);
  if (isa<LinearOp, PagedAttentionOp, ExpertLinearOp>(op))
    return 128;
  if (isa<MoeRouterOp>(op))
    return kWarpSize;
  if (isa<AdjustLogitsOp, LogprobsOp, SampleOp>(op))
    return kVocabBlockSize;
  return 256;
}

namespace {

/// A kernel of an op's dispatch besides its main one (gpuBlockSize,
/// buildKernel), with its kernel-name suffix and launch shape.
struct ExtraGpuKernel {
  StringRef suffix;
  int64_t blockSize;
  std::function<Grid(GpuKernelEmitter &)> build;
};

/// linear's kernels for decode-sized steps, and attention's decode-only
/// pair: the grids select by the step's size which kernels have blocks.
SmallVector<ExtraGpuKernel> extraKernels(Operation *op) {
  if (isa<LinearOp>(kernelKind(op))) {
    if (!hasSmallBatchLinearKernel(op))
      return {};
    return {
        {"_small_m", kSmallBatchLinearBlockSize,
         [op](GpuKernelEmitter &e) {
           return buildSmallBatchLinearKernel(e, op);
         }},
        {"_medium_m", kMediumBatchLinearBlockSize, [op](GpuKernelEmitter &e) {
           return buildMediumBatchLinearKernel(e, op);
         }}};
  }
  if (auto attention = dyn_cast<PagedAttentionOp>(op))
    return {{"_decode", gpuBlockSize(op),
             [attention](GpuKernelEmitter &e) {
               return buildDecodeAttentionKernel(e, attention);
             }},
            {"_merge", kAttentionMergeBlockSize, [attention](GpuKernelEmitter &e) {
               return buildAttentionMergeKernel(e, attention);
             }}};
  return {};
}

/// The scratch buffers `op`'s kernels bind after its values: f32, bound as
/// bare pointers that the kernels view with their own sizes, and sized in
/// the manifest by expressions of the push constants.
int64_t numScratchBuffers(Operation *op) {
  return isa<PagedAttentionOp>(op) ? 1 : 0;
}
SmallVector<SmallVector<std::string>> scratchShapes(Operation *op,
                                                    GpuKernelEmitter &e) {
  if (auto attention = dyn_cast<PagedAttentionOp>(op))
    return {attentionScratchShape(e, attention)};
  return {};
}

FailureOr<Grid> buildKernel(GpuKernelEmitter &e, Operation *op) {
  if (isa<DispatchRegionOp>(op)) {
    Operation *kind = kernelKind(op);
    if (isa<LinearOp>(kind))
      return buildLinearKernel(e, op);
    if (isa<RopeOp, KvWriteOp>(kind))
      return buildRopeKvWriteKernel(e, op);
    return op->emitOpError("has no GPU kernel: sm_90 runs dispatch regions of "
                           "sibling linears, or of ropes and kv_writes"),
           failure();
  }
  return llvm::TypeSwitch<Operation *, FailureOr<Grid>>(op)
      .Case<EmbeddingOp, GatherRowsOp>(
          [&](auto) { return buildGatherKernel(e, op); })
      .Case<RmsNormOp, LayerNormOp>(
          [&](auto o) { return buildNormKernel(e, normParams(o)); })
      .Case([&](LinearOp) { return buildLinearKernel(e, op); })
      .Case<RopeOp, KvWriteOp>(
          [&](auto) { return buildRopeKvWriteKernel(e, op); })
      .Case([&](QuantizeFp8Op) { return buildQuantizeFp8Kernel(e); })
      .Case([&](PagedAttentionOp o) { return buildPagedAttentionKernel(e, o); })
      .Case([&](SiluMulOp) { return buildSiluMulKernel(e); })
      .Case([&](GeluMulOp o) { return buildGeluMulKernel(e, o); })
      .Case([&](SoftcapOp o) { return buildSoftcapKernel(e, o); })
      .Case([&](GeluOp o) { return buildGeluKernel(e, o); })
      .Case([&](MoeRouterOp o) { return buildMoeRouterKernel(e, o); })
      .Case([&](ExpertLinearOp o) -> FailureOr<Grid> {
        if (o.getScales())
          return o.emitOpError("has no sm_90 kernel for int8 experts (llmc "
                               "compile --quantize leaves them unquantized for "
                               "sm_90)"),
                 failure();
        return buildExpertLinearKernel(e, o);
      })
      .Case([&](MoeCombineOp o) { return buildMoeCombineKernel(e, o); })
      .Case([&](AdjustLogitsOp) { return buildAdjustLogitsKernel(e); })
      .Case([&](LogprobsOp o) { return buildLogprobsKernel(e, o); })
      .Case([&](SampleOp) { return buildSampleKernel(e); })
      .Default([&](Operation *) -> FailureOr<Grid> {
        return op->emitOpError("has no GPU kernel"), failure();
      });
}

struct LlmserveToGpuKernelsPass
    : public mlir::llmserve::impl::LlmserveToGpuKernelsBase<
          LlmserveToGpuKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(module.getContext());
    gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);

    int64_t counter = std::distance(kernels.getOps<gpu::GPUFuncOp>().begin(),
                                    kernels.getOps<gpu::GPUFuncOp>().end());
    KernelsByCode kernelsByCode;
    for (Operation *op : opsToOutline(module)) {
      std::string name = dispatchKernelName(op, counter++);
      SmallVector<DictionaryAttr> dispatch;
      SmallVector<SmallVector<std::string>> scratch;
      SmallVector<RankedTensorType> bindingTypes = dispatchBindingTypes(op);
      bindingTypes.append(numScratchBuffers(op),
                          RankedTensorType::get({1}, b.getF32Type()));
      auto emit = [&](const std::string &kernelName, int64_t blockSize,
                      function_ref<FailureOr<Grid>(GpuKernelEmitter &)> build) {
        GpuKernelEmitter emitter(kernels, dispatchSymbol(kernelName),
                                 op->getLoc(), bindingTypes, blockSize);
        if (blockSize == kVocabBlockSize)
          emitter.function()->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(),
                                      b.getI32IntegerAttr(kVocabMaxRegisters));
        if (dispatch.empty())
          scratch = scratchShapes(op, emitter);
        FailureOr<Grid> grid = build(emitter);
        if (failed(grid)) {
          emitter.function().erase();
          return failure();
        }
        emitter.finish();
        StringAttr symbol = kernelsByCode.intern(emitter.function());
        // Static shared memory only: no dynamic shared bytes to ask for.
        dispatch.push_back(dispatchAttr(
            b.getContext(), kernelName, symbol, *grid,
            {b.getNamedAttr("block", b.getDenseI64ArrayAttr({blockSize, 1, 1})),
             b.getNamedAttr("shared_bytes", b.getI64IntegerAttr(0)),
             b.getNamedAttr("programmatic_launch", b.getBoolAttr(true))}));
        return success();
      };
      if (failed(emit(name, gpuBlockSize(op),
                      [&](GpuKernelEmitter &e) { return buildKernel(e, op); })))
        return signalPassFailure();
      for (const ExtraGpuKernel &extra : extraKernels(op))
        if (failed(emit(name + extra.suffix.str(), extra.blockSize,
                        [&](GpuKernelEmitter &e) -> FailureOr<Grid> {
                          return extra.build(e);
                        })))
          return signalPassFailure();
      setDispatch(op, dispatch);
      if (!scratch.empty()) {
        SmallVector<Attribute> shapes;
        for (ArrayRef<std::string> shape : scratch)
          shapes.push_back(b.getStrArrayAttr(SmallVector<StringRef>(
              llvm::map_range(shape, [](const std::string &s) {
                return StringRef(s);
              }))));
        op->setAttr(LlmserveDialect::kScratchAttrName, b.getArrayAttr(shapes));
      }
    }
  }

  static gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module) {
    if (auto kernels = lookupKernelModule<gpu::GPUModuleOp>(module))
      return kernels;
    MLIRContext *ctx = module.getContext();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto target = NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/3,
                                            /*triple=*/"nvptx64-nvidia-cuda",
                                            /*chip=*/kNvvmChip,
                                            /*features=*/kNvvmFeatures);
    return gpu::GPUModuleOp::create(b, module.getLoc(), kKernelModuleName,
                                    b.getArrayAttr({target}));
  }
};

} // namespace
