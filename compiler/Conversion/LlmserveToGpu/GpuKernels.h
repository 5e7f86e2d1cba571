//===- GpuKernels.h - The GPU kernel of each llmserve op ------------------===//
//
// Each function builds the body of one op's kernel with a GpuKernelEmitter
// (whose block size `gpuBlockSize` chose) and returns the launch grid, as
// expressions where push constant k is `$k`.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_LLMSERVETOGPU_GPUKERNELS_H
#define LLMSERVE_CONVERSION_LLMSERVETOGPU_GPUKERNELS_H

#include "compiler/Conversion/Common/Dispatch.h"
#include "compiler/Conversion/Common/Norm.h"
#include "compiler/Conversion/LlmserveToGpu/GpuKernelEmitter.h"
#include "llmserve/IR/LlmserveOps.h"

#include <string>

namespace mlir::llmserve {

/// Threads per block of the kernel of `op`.
int64_t gpuBlockSize(Operation *op);

Grid buildGatherKernel(GpuKernelEmitter &e, Operation *op);
Grid buildNormKernel(GpuKernelEmitter &e, const NormParams &params);
/// A rope, a kv_write, or a dispatch region of ropes of one position array
/// (llmserve-group-sibling-ropes) and kv_writes (llmserve-group-kv-writes):
/// each block rotates one token's rows and writes them into the caches.
FailureOr<Grid> buildRopeKvWriteKernel(GpuKernelEmitter &e, Operation *op);
Grid buildQuantizeFp8Kernel(GpuKernelEmitter &e);
Grid buildSiluMulKernel(GpuKernelEmitter &e);
Grid buildGeluMulKernel(GpuKernelEmitter &e, GeluMulOp op);
Grid buildSoftcapKernel(GpuKernelEmitter &e, SoftcapOp op);
Grid buildGeluKernel(GpuKernelEmitter &e, GeluOp op);
/// The linear kernels take a linear, or a dispatch region of linears that
/// read one input (llmserve-group-sibling-linears), whose blocks each
/// compute a column tile of one of them.
FailureOr<Grid> buildLinearKernel(GpuKernelEmitter &e, Operation *op);
/// Whether `op` also has the kernels for decode-sized steps (f16/bf16, K a
/// multiple of 8): one for at most kSmallBatchLinearRows rows, one for up to
/// kMediumBatchLinearRows; buildLinearKernel's runs larger steps.
bool hasSmallBatchLinearKernel(Operation *op);
Grid buildSmallBatchLinearKernel(GpuKernelEmitter &e, Operation *op);
Grid buildMediumBatchLinearKernel(GpuKernelEmitter &e, Operation *op);
inline constexpr int64_t kSmallBatchLinearRows = 16;
inline constexpr int64_t kMediumBatchLinearRows = 64;
inline constexpr int64_t kSmallBatchLinearBlockSize = 64;
inline constexpr int64_t kMediumBatchLinearBlockSize = 128;
/// paged_attention for any mix of prefill chunks and decode rows (no blocks
/// when T = S), and for decode-only steps the split-context kernel and the
/// merge of its chunks (docs/compiler.md). All three bind the op's values
/// then one scratch buffer (`attentionScratchShape`).
Grid buildPagedAttentionKernel(GpuKernelEmitter &e, PagedAttentionOp op);
Grid buildDecodeAttentionKernel(GpuKernelEmitter &e, PagedAttentionOp op);
Grid buildAttentionMergeKernel(GpuKernelEmitter &e, PagedAttentionOp op);
/// [S, heads, chunks of the longest context, 2 + head_dim] f32, as size
/// expressions in the op's push constants.
SmallVector<std::string> attentionScratchShape(GpuKernelEmitter &e,
                                               PagedAttentionOp op);
/// Keys per chunk of the split context (a multiple of every key tile). 64
/// rather than 256 gives a batch-1 decode step 4 times the blocks (a warp
/// walks its keys one at a time): 2.65 against 4.50 ms for TinyLlama on an
/// H100 (docs/benchmarks.md), for a scratch buffer 4 times larger.
inline constexpr int64_t kAttentionChunk = 64;
/// The scratch buffer's binding: after q, the caches, block_table,
/// context_len, query_start, out and lse.
inline constexpr int kAttentionScratchBinding = 8;
inline constexpr int64_t kAttentionMergeBlockSize = 32;
// Moe.cpp: moe_router takes one warp per token, expert_linear 4 warps.
Grid buildMoeRouterKernel(GpuKernelEmitter &e, MoeRouterOp op);
Grid buildExpertLinearKernel(GpuKernelEmitter &e, ExpertLinearOp op);
Grid buildMoeCombineKernel(GpuKernelEmitter &e, MoeCombineOp op);
/// The kernels over vocabulary-sized rows: adjust_logits splits a row into
/// kAdjustLogitsChunk-element blocks; logprobs and sample take a block per
/// row, which reads kVocabUnroll logits a thread at once in every pass.
Grid buildAdjustLogitsKernel(GpuKernelEmitter &e);
Grid buildLogprobsKernel(GpuKernelEmitter &e, LogprobsOp op);
Grid buildSampleKernel(GpuKernelEmitter &e);
inline constexpr int64_t kVocabBlockSize = 512;
/// Registers a thread of those kernels may use: two blocks an SM. Left to
/// choose, ptxas aims at three for some vocabulary sizes (Qwen3's 151,936)
/// and spills.
inline constexpr int32_t kVocabMaxRegisters = 64;
inline constexpr int64_t kVocabUnroll = 4;
inline constexpr int64_t kAdjustLogitsChunk = 8 * kVocabBlockSize;

} // namespace mlir::llmserve

#endif
