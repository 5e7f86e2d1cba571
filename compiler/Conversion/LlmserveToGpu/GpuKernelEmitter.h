//===- GpuKernelEmitter.h - Builds CUDA kernels in the bundle ABI ---------===//
//
// A GPU kernel is a `gpu.func` whose parameters are one pointer per bound
// buffer, in binding order, then one i64 per push constant (docs/bundle.md,
// "NVIDIA bundles"). A pointer parameter is a static `memref<1xT>`, which the
// bare-pointer calling convention passes as a plain device pointer; the
// emitter gives the body views of the buffers' real (dynamic) shapes, the
// push constants, thread and block ids, shared memory and the warp and block
// reductions the kernels are made of.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_LLMSERVETOGPU_GPUKERNELEMITTER_H
#define LLMSERVE_CONVERSION_LLMSERVETOGPU_GPUKERNELEMITTER_H

#include "compiler/Conversion/Common/KernelEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::llmserve {

inline constexpr int64_t kWarpSize = 32;

class GpuKernelEmitter : public KernelEmitter {
public:
  /// Creates `gpu.func @<symbol>` at the end of `module`, launched with
  /// `blockSize` threads along x. Each dynamic dimension of `bindingTypes` is
  /// passed in a push constant, in binding order.
  GpuKernelEmitter(gpu::GPUModuleOp module, StringRef symbol, Location loc,
                   ArrayRef<RankedTensorType> bindingTypes, int64_t blockSize);

  gpu::GPUFuncOp function() { return func; }
  int64_t blockSize() const { return threads; }
  int64_t numWarps() const { return threads / kWarpSize; }

  /// Thread index in the block, lane in the warp and warp in the block.
  Value threadId();
  Value laneId();
  Value warpId();
  /// The block index along `dim` (0 = x).
  Value blockId(int dim);

  using KernelEmitter::binding;
  Value binding(int binding, ArrayRef<Value> shape) override;

  /// A shared-memory buffer of this block.
  Value sharedBuffer(ArrayRef<int64_t> shape, Type elementType);
  /// Bytes of shared memory the kernel's buffers take.
  int64_t sharedBytes() const { return shared; }

  /// A float element as f32 (storage is f32, f16 or bf16).
  Value loadF32(Value memref, ValueRange indices);
  /// Stores an f32 as the memref's element type.
  void storeF32(Value value, Value memref, ValueRange indices);

  /// `gpu.barrier`.
  void barrier();
  /// The butterfly reduction of `value` over the warp: every lane ends with
  /// the same result, combined in an order that does not depend on the lane.
  Value warpReduce(Value value,
                   const std::function<Value(Value, Value)> &combine);
  /// Warp reductions, then the warps' results combined in warp order by every
  /// thread through `scratch` (a shared buffer of numWarps() elements).
  Value blockReduce(Value value, Value scratch,
                    const std::function<Value(Value, Value)> &combine);
  /// The same over tuples (e.g. a value and its index), one scratch buffer
  /// per element of the tuple.
  using TupleCombine =
      std::function<SmallVector<Value>(ValueRange, ValueRange)>;
  SmallVector<Value> warpReduce(ValueRange values, const TupleCombine &combine);
  SmallVector<Value> blockReduce(ValueRange values, ArrayRef<Value> scratch,
                                 const TupleCombine &combine);

  /// `for (i = threadId; i < end; i += blockSize) body(i)`.
  void threadLoop(Value end, const std::function<void(Value)> &body);
  /// The same, folding values through `body`. With `unroll` > 1 an
  /// iteration takes indices i, i + blockSize, ... (`unroll` of them), so
  /// that their loads are in flight together, and folds them in that order:
  /// each thread's result is the plain loop's. An index past `end` is read
  /// at end - 1 and leaves the values as they are.
  SmallVector<Value> threadLoop(
      Value end, ValueRange init,
      const std::function<SmallVector<Value>(Value, ValueRange)> &body,
      int64_t unroll = 1);

  /// Waits until the grids launched before this one have finished and their
  /// writes are visible (`griddepcontrol.wait`), then lets the next grid
  /// launch (`griddepcontrol.launch_dependents`), whose blocks wait the same
  /// way: the runtime launches every kernel as a programmatic dependent
  /// launch (docs/bundle.md), so a kernel's launch and whatever it does
  /// before this point (loads of weights, never of activations) overlap the
  /// previous kernel's tail. Called once on each path through the kernel
  /// (a kernel of several linears calls it in each one's branch); a kernel
  /// that does not call it waits on entry.
  void waitForPrerequisites();

  /// Closes the function body.
  void finish();

protected:
  Value pushConstant(int k) override;

private:
  gpu::GPUFuncOp func;
  int64_t threads;
  int64_t shared = 0;
  bool waited = false;
};

} // namespace mlir::llmserve

#endif
