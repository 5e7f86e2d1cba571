//===- LinearBf16.cpp - bf16 linears on AVX-512 BF16 ----------------------===//
//
// x·Wᵀ (+ b) for bf16 weights W [N, K] in the checkpoint's row-major layout,
// on CPUs with AVX-512 BF16: each row of x is rounded to bf16 (to nearest
// even) into scratch made at the kernel's entry, and vdpbf16ps multiplies 32
// of x's values with 32 of W's into 16 f32 lanes, each lane adding the
// products of one pair in turn. That is twice the products of an f32 FMA per
// instruction, with no widening of W. The lanes are reduced at the end, then
// the bias added. Rows go in blocks of 16: each 4-column tile of W is read
// from memory for the block's first tile of 4 rows and from L1 for the
// others, and every tile prefetches the next column tile's rows into L2 as
// it goes, so W streams from memory while the arithmetic runs (the rows of
// a column tile are pages apart, which hardware prefetchers do not cross).
// Rows left over after the block's 4-row tiles take tiles of 1 row x 8
// columns (decode steps). Every output gets the same arithmetic whatever its tile, and x's
// rows are rounded one by one, so a row's result does not depend on the
// rows beside it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::llmserve;

namespace {

/// bf16 values of a row that one vdpbf16ps reads.
constexpr int64_t kPairLanes = 32;
/// f32 lanes of the accumulators, and of x's conversion to bf16.
constexpr int64_t kLanes = 16;
constexpr int64_t kColumnsPerGroup = 64;
/// Rows rounded to bf16 at a time, whose tiles share W's column tiles.
constexpr int64_t kBlockRows = 16;
constexpr int64_t kMicroRows = 4;
constexpr int64_t kMicroColumns = 4;
constexpr int64_t kSingleRowColumns = 8;

class Bf16Linear {
public:
  Bf16Linear(CpuKernelEmitter &e, LinearOp o)
      : e(e), a(e.arith()), b(e.builder()) {
    auto weightType = cast<RankedTensorType>(o.getWeight().getType());
    n = weightType.getDimSize(0);
    depth = weightType.getDimSize(1);
    // Bindings: x, W, then the bias where the op has one.
    x = e.binding(0);
    w = e.binding(1);
    if (o.getBias())
      bias = e.binding(2);
    y = e.binding(o->getNumOperands());
    // One block's rows of x in bf16, made once at the kernel's entry.
    xRows = memref::AllocaOp::create(
        b, MemRefType::get({kBlockRows, depth}, b.getBF16Type()));
  }

  Grid build() {
    Value mBegin, mEnd;
    std::tie(mBegin, mEnd) =
        e.rowRange(e.dimSize(0, 0), kLinearRowsPerGroup);
    Value nBegin = a.muli(e.workgroupId(1), e.index(kColumnsPerGroup));
    Value nEnd = arith::MinSIOp::create(
        b, a.addi(nBegin, e.index(kColumnsPerGroup)), e.index(n));
    e.forLoop(mBegin, mEnd, kBlockRows, [&](Value blockBegin) {
      Value blockEnd = arith::MinSIOp::create(
          b, a.addi(blockBegin, e.index(kBlockRows)), mEnd);
      e.forLoop(blockBegin, blockEnd, 1, [&](Value row) {
        roundRow(row, a.subi(row, blockBegin));
      });
      Value tiled = a.addi(
          blockBegin, a.muli(a.divui(a.subi(blockEnd, blockBegin),
                                     e.index(kMicroRows)),
                             e.index(kMicroRows)));
      // Each column tile, then the block's rows [begin, end) in tiles of mr.
      auto tiles = [&](Value begin, Value end, int64_t mr, int64_t nr) {
        forEachTile(e, nBegin, nEnd, nr, [&](Value n0, int64_t tileColumns) {
          e.forLoop(begin, end, mr, [&](Value m0) {
            microkernel(m0, a.subi(m0, blockBegin), mr, n0, tileColumns);
          });
        });
      };
      tiles(blockBegin, tiled, kMicroRows, kMicroColumns);
      tiles(tiled, blockEnd, 1, kSingleRowColumns);
    });
    Grid grid = e.rowGrid(0, kLinearRowsPerGroup);
    grid[1] = std::to_string((n + kColumnsPerGroup - 1) / kColumnsPerGroup);
    return grid;
  }

private:
  /// Row `row` of x rounded to bf16 into scratch row `slot`.
  void roundRow(Value row, Value slot) {
    auto f32s = VectorType::get({kLanes}, b.getF32Type());
    e.forLoop(e.index(0), e.index(depth), kLanes, [&](Value k) {
      Value values = vector::LoadOp::create(b, f32s, x, {row, k});
      vector::StoreOp::create(
          b, arith::TruncFOp::create(b, f32s.clone(b.getBF16Type()), values),
          xRows, {slot, k});
    });
  }

  /// Outputs (m0 + i, n0 + j) for i < mr, j < nr; x's row m0 is in scratch
  /// row `slot`.
  void microkernel(Value m0, Value slot, int64_t mr, Value n0, int64_t nr) {
    auto f32s = VectorType::get({kLanes}, b.getF32Type());
    auto pairs = VectorType::get({kPairLanes}, b.getBF16Type());
    Value zeros = arith::ConstantOp::create(
        b, f32s, DenseElementsAttr::get(f32s, 0.0f));
    StringAttr vdpbf16ps =
        b.getStringAttr("llvm.x86.avx512bf16.dpbf16ps.512");
    SmallVector<Value> cols;
    for (int64_t j = 0; j < nr; ++j)
      cols.push_back(a.addi(n0, e.index(j)));
    SmallVector<Value> acc = e.forLoop(
        e.index(0), e.index(depth), kPairLanes,
        SmallVector<Value>(mr * nr, zeros),
        [&](Value k, ValueRange acc) -> SmallVector<Value> {
          SmallVector<Value> xs, ws, next;
          for (int64_t i = 0; i < mr; ++i)
            xs.push_back(
                vector::LoadOp::create(b, pairs, xRows,
                                       {a.addi(slot, e.index(i)), k}));
          for (Value c : cols) {
            ws.push_back(vector::LoadOp::create(b, pairs, w, {c, k}));
            // The next column tile's row, beyond N at the last (a prefetch
            // does not fault).
            memref::PrefetchOp::create(b, w,
                                       ValueRange{a.addi(c, e.index(nr)), k},
                                       /*isWrite=*/false, /*localityHint=*/2,
                                       /*isDataCache=*/true);
          }
          for (int64_t i = 0; i < mr; ++i)
            for (int64_t j = 0; j < nr; ++j)
              next.push_back(LLVM::CallIntrinsicOp::create(
                                 b, f32s, vdpbf16ps,
                                 ValueRange{acc[i * nr + j], xs[i], ws[j]})
                                 .getResult(0));
          return next;
        });
    storeTile(e, acc, m0, mr, cols, y, /*scales=*/Value(), bias);
  }

  CpuKernelEmitter &e;
  Arith &a;
  ImplicitLocOpBuilder &b;
  int64_t n, depth;
  Value x, w, bias, y, xRows;
};

} // namespace

bool mlir::llmserve::useBf16Linear(LinearOp o) {
  auto type = cast<RankedTensorType>(o.getWeight().getType());
  return type.getElementType().isBF16() && !o.getScales() &&
         type.getDimSize(1) % kPairLanes == 0;
}

Grid mlir::llmserve::buildLinearBf16Kernel(CpuKernelEmitter &e, LinearOp o) {
  return Bf16Linear(e, o).build();
}
