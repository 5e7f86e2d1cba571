//===- CpuKernels.h - The CPU kernel of each llmserve op ------------------===//
//
// Each function builds the body of one op's kernel with a CpuKernelEmitter
// and returns the launch grid, as expressions where push constant k is `$k`.
// The ones that can fail (an op the kernel cannot take) emit a located error.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_LLMSERVETOCPU_CPUKERNELS_H
#define LLMSERVE_CONVERSION_LLMSERVETOCPU_CPUKERNELS_H

#include "compiler/Conversion/Common/Dispatch.h"
#include "compiler/Conversion/Common/Norm.h"
#include "compiler/Conversion/LlmserveToCpu/CpuKernelEmitter.h"
#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::llmserve {

/// Rows per workgroup of the kernels that compute rows one at a time.
inline constexpr int64_t kRowsPerGroup = 4;
/// f32 lanes of the kernels' vectors: a weight panel's columns.
inline constexpr int64_t kVectorWidth = LlmserveDialect::kPanelWidth;
/// Rows of a linear's workgroup block: a decode step of up to 64 sequences
/// reads each weight block once.
inline constexpr int64_t kLinearRowsPerGroup = 64;
/// The x86 instructions beyond AVX-512F that the target CPU has and the
/// linear kernels use.
struct CpuInstructions {
  /// AVX-512F: 32 vector registers of 16 f32 lanes (else AVX2's 16 of 8).
  bool avx512 = false;
  /// vpdpbusd (AVX-512 VNNI and BW): int8 and int4 linears.
  bool vnni = false;
  /// vdpbf16ps (AVX-512 BF16): bf16 linears.
  bool bf16 = false;
};
/// Panels of 16 columns of a panel linear's workgroup block (96 columns: two
/// of the 3-panel register tiles cpu-kernels.mlir makes).
inline constexpr int64_t kPanelsPerGroup = 6;

// RowKernels.cpp
Grid buildGatherKernel(CpuKernelEmitter &e, Operation *op);
Grid buildRopeKernel(CpuKernelEmitter &e, RopeOp op);
Grid buildKvWriteKernel(CpuKernelEmitter &e, KvWriteOp op);
// Norm.cpp
Grid buildNormKernel(CpuKernelEmitter &e, const NormParams &params);
// Elementwise.cpp
FailureOr<Grid> buildElementwiseKernel(CpuKernelEmitter &e,
                                       linalg::GenericOp op);
// Linear.cpp: int8 and int4 linears that useVnniLinear takes get the
// rows8x64 kernel, with or without VNNI (an int4 linear it cannot take is an
// error); bf16 linears that useBf16Linear takes get the BF16 kernel with
// AVX-512 BF16.
FailureOr<Grid> buildLinearKernel(CpuKernelEmitter &e, LinearOp op,
                                  CpuInstructions instructions);
// LinearVnni.cpp: whether the rows8x64 kernel takes `op` (int8 or int4
// values of a weight op, N a multiple of 8 and K of 64), and if so marks the
// weight for the rows8x64 layout. int4 linears have no other kernel; without
// VNNI it computes in f32, in the same layout, so that the weights' layout
// does not depend on the CPU.
bool useVnniLinear(LinearOp op);
Grid buildLinearVnniKernel(CpuKernelEmitter &e, LinearOp op,
                           CpuInstructions instructions);
// LinearBf16.cpp: whether the vdpbf16ps kernel can take `op` (bf16 weights,
// K a multiple of 32).
bool useBf16Linear(LinearOp op);
Grid buildLinearBf16Kernel(CpuKernelEmitter &e, LinearOp op);
// Moe.cpp
Grid buildMoeRouterKernel(CpuKernelEmitter &e, MoeRouterOp op);
Grid buildExpertLinearKernel(CpuKernelEmitter &e, ExpertLinearOp op);
Grid buildMoeCombineKernel(CpuKernelEmitter &e, MoeCombineOp op);
// DispatchRegion.cpp
FailureOr<Grid> buildDispatchRegionKernel(CpuKernelEmitter &e,
                                          DispatchRegionOp op);
// Attention.cpp
Grid buildPagedAttentionKernel(CpuKernelEmitter &e, PagedAttentionOp op);
// Logits.cpp
Grid buildAdjustLogitsKernel(CpuKernelEmitter &e);
Grid buildLogprobsKernel(CpuKernelEmitter &e, LogprobsOp op);
// Sample.cpp
Grid buildSampleKernel(CpuKernelEmitter &e);

//===----------------------------------------------------------------------===//
// Panel linears (Linear.cpp), which dispatch regions build on
//===----------------------------------------------------------------------===//

/// Whether `weight` is stored in the panel layout the linalg linear kernel
/// reads (and if so marks it, so the bundle writer asks the runtime to pack
/// it at load): an unquantized weight with a whole number of 16-row panels,
/// read as the weight of a linear op (also inside a dispatch region) and
/// otherwise only as linear weights or embedding tables.
bool usePanelLayout(Value weight);

/// The outputs of a panel linear one workgroup computes: rows
/// [mBegin, mBegin + mSize) and panels [pBegin, pBegin + pSize).
struct PanelBlock {
  Value mBegin, pBegin;
  OpFoldResult mSize, pSize;
};

/// This workgroup's block of `rows` rows and `panels` panels.
PanelBlock panelBlock(CpuKernelEmitter &e, Value rows, int64_t panels);

/// The block's [rows][panels][16] slice of binding `binding`, an [M, N]
/// tensor viewed as [M][N/16][16].
Value panelView(CpuKernelEmitter &e, int binding, int64_t panels,
                const PanelBlock &block);

/// x·Wᵀ (+ b) for the block, W in panels of 16 columns ([N/16][K][16]), as
/// linalg on tensor views: the [rows][panels][16] tensor `destination()`
/// makes is initialised with zeros or the bias, then the contraction
/// y[m, p, l] += x[m, k] * w[p, k, l] accumulates into it. The CPU schedule
/// (cpu-kernels.mlir) turns this into register tiles of outer products.
Value contractPanels(CpuKernelEmitter &e, int xBinding, int wBinding,
                     std::optional<int> biasBinding, int64_t panels,
                     int64_t depth, const PanelBlock &block,
                     function_ref<Value()> destination);

/// The dot products x[rows[i]] · w[cols[j]] of an MR x NR tile (MR =
/// rows.size(), NR = cols.size()), row-major, for x [M, K] f32 and w [N, K]
/// f32 or i8 (converted to f32 as it is read): one VL-wide vector
/// accumulator per output along K, reduced at the end, then the K % VL tail
/// in order. An output gets the same arithmetic whatever tile it is in, so
/// a row's result does not depend on the rows beside it.
SmallVector<Value> dotTile(CpuKernelEmitter &e, Value x, ArrayRef<Value> rows,
                           Value w, ArrayRef<Value> cols);

/// The outputs of an MR x NR tile of 16-lane accumulators `acc` (row-major):
/// each reduced (reassociated), times its column's entry of `scales` and
/// plus its entry of `bias` where those are given, stored to
/// y[m0 + i, cols[j]].
void storeTile(CpuKernelEmitter &e, ValueRange acc, Value m0, int64_t mr,
               ArrayRef<Value> cols, Value y, Value scales, Value bias);

/// `body(i, size)` on full `size`-wide tiles of [begin, end), then
/// `body(i, 1)` on the rest one at a time.
void forEachTile(CpuKernelEmitter &e, Value begin, Value end, int64_t size,
                 const std::function<void(Value, int64_t)> &body);

/// The grid of the blocks over the rows of binding `rowsBinding` and
/// `panels` panels.
Grid panelGrid(CpuKernelEmitter &e, int rowsBinding, int64_t panels);

} // namespace mlir::llmserve

#endif // LLMSERVE_CONVERSION_LLMSERVETOCPU_CPUKERNELS_H
