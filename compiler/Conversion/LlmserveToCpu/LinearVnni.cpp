//===- LinearVnni.cpp - int8 and int4 linears in rows8x64 -----------------===//
//
// (x·Qᵀ) * s (+ b) for int8 values Q [N, K] and their per-row scales s, on
// CPUs with AVX-512 VNNI: each row of x is quantized to int8 in blocks of 64
// (one f32 scale per block, absmax / 127, rounded to nearest even), and
// vpdpbusd multiplies 64 bytes of Q with 64 of x into 16 int32 lanes. It
// takes unsigned bytes on one side, so Q is read as Q + 128 (its sign bit
// flipped) and each block starts from -128 * (the block's sum of x's int8
// values) in lane 0: the block's integer sum is exact. Each lane then
// accumulates its block sums times the block's scale in f32, in block order;
// the lanes are reduced at the end, times s. Q is stored in rows8x64
// (LlmserveBase.td), so a tile of 8 columns streams one contiguous run of
// memory. Every output gets the same arithmetic whatever its tile, and x's
// rows are quantized one by one, so a row's result does not depend on the
// rows beside it.
//
// int4 values (int4_group128) are read 32 bytes per 64 columns, two values a
// byte (Q + 8, so unsigned as they are): the low nibbles are the first 32
// columns, the high ones the last 32. x's blocks are then 128 wide, one group
// of Q's scales: two vpdpbusd per block and one conversion to f32, which
// batches of rows run 1.2-1.3 times as fast as with blocks of 64, at the cost
// of x's precision that int4's own rounding dwarfs. A block starts from -8
// times its sum of x, or with zero points (a GPTQ or AWQ checkpoint's) from
// -z times it for the row's zero point z of the group, and its sum is scaled
// by x's block scale times Q's group scale.
//
// Without VNNI, int8 and int4 linears take the same layout and tiles in f32
// (so a bundle's weights are laid out alike for every CPU it has kernels
// for): x is not quantized, and each block's 64 values become f32 (int8: as
// they are; int4: Q + 8, less 8 or the zero point, times their group's
// scale), multiplied with x's 64 by FMAs into 16 lanes.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::llmserve;

namespace {

/// Bytes of a row that one vpdpbusd reads: the blocks of rows8x64.
constexpr int64_t kBlock = 64;
/// Columns of a workgroup: quantizing a row of x is repeated per group.
constexpr int64_t kColumnsPerGroup = 256;
/// Rows of a group of the rows8x64 layout.
constexpr int64_t kRowGroup = LlmserveDialect::kRowBlockRows;
/// Register tiles: 4 rows by 4 columns (2 by 2 in f32 on AVX2, where the
/// 16-lane accumulators are two registers each of its 16), or 1 row by a
/// group of the rows8x64 layout, read as one stream.
constexpr int64_t kMicroRows = 4;
constexpr int64_t kMicroColumns = 4;
constexpr int64_t kFloatMicroRows = 2;
constexpr int64_t kFloatMicroColumns = 2;
constexpr int64_t kSingleRowColumns = kRowGroup;
/// How far ahead a single-row tile without VNNI prefetches its weights, in
/// blocks of 8 x 64 bytes.
constexpr int64_t kPrefetchBlocks = 8;

class VnniLinear {
public:
  VnniLinear(CpuKernelEmitter &e, LinearOp o, CpuInstructions instructions)
      : e(e), a(e.arith()), b(e.builder()),
        int4(cast<RankedTensorType>(o.getWeight().getType())
                 .getElementType()
                 .isInteger(4)),
        vnni(instructions.vnni), avx512(instructions.avx512) {
    auto weightType = cast<RankedTensorType>(o.getWeight().getType());
    n = weightType.getDimSize(0);
    depth = weightType.getDimSize(1);
    blocks = depth / kBlock;
    // x's blocks: one scale and one conversion of the int32 sums each.
    activationBlock = int4 ? kInt4GroupColumns : kBlock;
    activationBlocks = depth / activationBlock;
    x = e.binding(0);
    // Q in rows8x64: [N / 8][K / 64][8][64] bytes, or [...][32] for int4.
    w = e.binding(1, {e.index(n / kRowGroup), e.index(blocks),
                      e.index(kRowGroup), e.index(blockBytes())},
                  b.getI8Type());
    // Bindings: x, Q, scales, then zeros and bias where the op has them.
    int next = 2;
    scales = e.binding(next++);
    if (o.getZeros())
      zeros = e.binding(next++);
    if (o.getBias())
      bias = e.binding(next++);
    y = e.binding(next);
    // Scratch for one tile's rows of x, made once at the kernel's entry.
    auto scratch = [&](ArrayRef<int64_t> shape, Type element) {
      return memref::AllocaOp::create(b, MemRefType::get(shape, element));
    };
    if (vnni) {
      xValues = scratch({kMicroRows, depth}, b.getI8Type());
      xScales = scratch({kMicroRows, activationBlocks}, b.getF32Type());
      xSums = scratch({kMicroRows, activationBlocks}, b.getI32Type());
    }
  }

  Grid build() {
    auto [mBegin, mEnd] = e.rowRange(e.dimSize(0, 0), kLinearRowsPerGroup);
    Value nBegin = a.muli(e.workgroupId(1), e.index(kColumnsPerGroup));
    Value nEnd = arith::MinSIOp::create(
        b, a.addi(nBegin, e.index(kColumnsPerGroup)), e.index(n));
    bool wide = vnni || avx512;
    int64_t microRows = wide ? kMicroRows : kFloatMicroRows;
    int64_t microColumns = wide ? kMicroColumns : kFloatMicroColumns;
    forEachTile(e, mBegin, mEnd, microRows, [&](Value m0, int64_t mr) {
      for (int64_t i = 0; vnni && i < mr; ++i)
        quantizeRow(a.addi(m0, e.index(i)), i);
      forEachTile(e, nBegin, nEnd, mr == 1 ? kSingleRowColumns : microColumns,
                  [&](Value n0, int64_t nr) { microkernel(m0, mr, n0, nr); });
    });
    Grid grid = e.rowGrid(0, kLinearRowsPerGroup);
    grid[1] = std::to_string((n + kColumnsPerGroup - 1) / kColumnsPerGroup);
    return grid;
  }

private:
  VectorType vector(int64_t lanes, Type element) {
    return VectorType::get({lanes}, element);
  }
  Value splat(VectorType type, Value scalar) {
    return vector::BroadcastOp::create(b, type, scalar);
  }

  int64_t blockBytes() const { return int4 ? kBlock / 2 : kBlock; }

  /// Row `row` of x as int8 blocks into scratch row `slot`: values, the
  /// block's scale and the block's sum of values.
  void quantizeRow(Value row, int64_t slot) {
    VectorType f32x16 = vector(16, b.getF32Type());
    VectorType i32x16 = vector(16, b.getI32Type());
    Value slotIndex = e.index(slot);
    e.forLoop(e.index(0), e.index(activationBlocks), 1, [&](Value block) {
      Value k0 = a.muli(block, e.index(activationBlock));
      SmallVector<Value> xs;
      Value absmax;
      for (int64_t j = 0; j < activationBlock / 16; ++j) {
        xs.push_back(vector::LoadOp::create(
            b, f32x16, x, {row, a.addi(k0, e.index(16 * j))}));
        Value magnitude = math::AbsFOp::create(b, xs.back());
        absmax = absmax ? arith::MaximumFOp::create(b, absmax, magnitude)
                        : magnitude;
      }
      Value largest = vector::ReductionOp::create(
          b, vector::CombiningKind::MAXIMUMF, absmax);
      Value scale =
          a.select(a.cmpf(arith::CmpFPredicate::OGT, largest, e.f32(0)),
                   a.div(largest, e.f32(127)), e.f32(1));
      Value scales = splat(f32x16, scale);
      Value sum = e.i32(0);
      for (int64_t j = 0; j < activationBlock / 16; ++j) {
        Value q = arith::FPToSIOp::create(
            b, i32x16,
            math::RoundEvenOp::create(b,
                                      arith::DivFOp::create(b, xs[j], scales)));
        sum = a.addi(
            sum, vector::ReductionOp::create(b, vector::CombiningKind::ADD, q));
        vector::StoreOp::create(
            b, arith::TruncIOp::create(b, vector(16, b.getI8Type()), q),
            xValues, {slotIndex, a.addi(k0, e.index(16 * j))});
      }
      a.store(scale, xScales, {slotIndex, block});
      a.store(sum, xSums, {slotIndex, block});
    });
  }

  /// Without VNNI: a block's values of each column as f32 (int8: loaded 16
  /// at a time from `wAt`, its [group, block, lane] in Q; int4: unpacked in
  /// `wq`, less the column's zero point, 8 without, times its group's
  /// scale), multiplied with x's 64 values in four 16-lane FMAs per output.
  SmallVector<Value> floatBlock(Value m0, int64_t mr, int64_t nr, Value k0,
                                ArrayRef<SmallVector<Value>> wAt,
                                ArrayRef<Value> wq, ArrayRef<Value> wScale,
                                ArrayRef<Value> wZero, ValueRange acc) {
    VectorType f32x16 = vector(16, b.getF32Type());
    SmallVector<Value> offsets, scales;
    for (int64_t j = 0; int4 && j < nr; ++j) {
      offsets.push_back(splat(
          f32x16, zeros ? arith::SIToFPOp::create(b, b.getF32Type(), wZero[j])
                        : e.f32(8)));
      scales.push_back(splat(f32x16, wScale[j]));
    }
    auto weights = [&](int64_t j, int64_t c) -> Value {
      if (!int4) {
        SmallVector<Value> at = wAt[j];
        at.push_back(e.index(16 * c));
        return arith::SIToFPOp::create(
            b, f32x16, vector::LoadOp::create(b, vector(16, b.getI8Type()), w, at));
      }
      Value chunk = vector::ExtractStridedSliceOp::create(
          b, wq[j], ArrayRef<int64_t>{16 * c}, ArrayRef<int64_t>{16},
          ArrayRef<int64_t>{1});
      Value values = arith::UIToFPOp::create(b, f32x16, chunk);
      return arith::MulFOp::create(
          b, arith::SubFOp::create(b, values, offsets[j]), scales[j]);
    };
    constexpr int64_t kChunks = kBlock / 16;
    // A chunk at a time, so that only one chunk's x and weights are live
    // beside the accumulators; but with AVX-512, int4 weights unpacked for
    // every chunk first (measured faster).
    bool unpackFirst = int4 && avx512;
    SmallVector<SmallVector<Value>> ws(kChunks);
    for (int64_t c = 0; unpackFirst && c < kChunks; ++c)
      for (int64_t j = 0; j < nr; ++j)
        ws[c].push_back(weights(j, c));
    SmallVector<Value> next(acc.begin(), acc.end());
    for (int64_t c = 0; c < kChunks; ++c) {
      SmallVector<Value> xs;
      for (int64_t i = 0; i < mr; ++i)
        xs.push_back(vector::LoadOp::create(
            b, f32x16, x, {a.addi(m0, e.index(i)), a.addi(k0, e.index(16 * c))}));
      for (int64_t j = 0; !unpackFirst && j < nr; ++j)
        ws[c].push_back(weights(j, c));
      for (int64_t i = 0; i < mr; ++i)
        for (int64_t j = 0; j < nr; ++j)
          next[i * nr + j] =
              vector::FMAOp::create(b, xs[i], ws[c][j], next[i * nr + j]);
    }
    return next;
  }

  /// Q's unsigned bytes for column `c` at weight block `block`: int8 with
  /// its sign bit flipped, or int4's nibbles, low ones first.
  Value unsignedWeights(Value c, Value block) {
    VectorType i8x64 = vector(kBlock, b.getI8Type());
    Value group = a.divui(c, e.index(kRowGroup));
    Value lane = a.remui(c, e.index(kRowGroup));
    if (!int4) {
      Value signBits = arith::ConstantOp::create(
          b, i8x64, DenseElementsAttr::get(i8x64, int8_t(-128)));
      return arith::XOrIOp::create(
          b, vector::LoadOp::create(b, i8x64, w, {group, block, lane, e.index(0)}),
          signBits);
    }
    VectorType i8x32 = vector(kBlock / 2, b.getI8Type());
    Value lowNibbles = arith::ConstantOp::create(
        b, i8x32, DenseElementsAttr::get(i8x32, int8_t(0x0F)));
    Value nibbleShift = arith::ConstantOp::create(
        b, i8x32, DenseElementsAttr::get(i8x32, int8_t(4)));
    Value packed = vector::LoadOp::create(b, i8x32, w, {group, block, lane, e.index(0)});
    return vector::ShuffleOp::create(
        b, arith::AndIOp::create(b, packed, lowNibbles),
        arith::ShRUIOp::create(b, packed, nibbleShift),
        llvm::to_vector(llvm::seq<int64_t>(0, kBlock)));
  }

  /// The single-row tile (decode) streams its group of columns: fetch
  /// weight block `block` of column `c` ahead. Only the f32 kernels do: on
  /// an AVX2 CPU it speeds up int4's batch-1 step by a tenth, while the VNNI
  /// kernel's step is a tenth faster without it (docs/benchmarks.md).
  void prefetch(Value c, Value block) {
    memref::PrefetchOp::create(
        b, w,
        ValueRange{a.divui(c, e.index(kRowGroup)), block, a.remui(c, e.index(kRowGroup)),
                   e.index(0)},
        /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
  }

  /// With VNNI: per block of x, each output's integer sum over its one or
  /// two weight blocks (vpdpbusd), then times the scales in f32.
  SmallVector<Value> vnniBlocks(int64_t mr, ArrayRef<Value> cols) {
    VectorType f32x16 = vector(16, b.getF32Type());
    VectorType i32x16 = vector(16, b.getI32Type());
    VectorType i8x64 = vector(kBlock, b.getI8Type());
    Value intZeros = arith::ConstantOp::create(
        b, i32x16, DenseElementsAttr::get(i32x16, int32_t(0)));
    StringAttr vpdpbusd = b.getStringAttr("llvm.x86.avx512.vpdpbusd.512");
    int64_t nr = cols.size();
    int64_t halves = activationBlock / kBlock;
    auto step = [&](Value block, ValueRange acc) {
      Value k0 = a.muli(block, e.index(activationBlock));
      Value wBlock = a.muli(block, e.index(halves));
      SmallVector<Value> xScale, xSum, wScale, wZero, next;
      for (int64_t i = 0; i < mr; ++i) {
        xScale.push_back(a.load(xScales, {e.index(i), block}));
        xSum.push_back(a.load(xSums, {e.index(i), block}));
      }
      // int4's groups of 128 are the activation blocks.
      for (Value c : int4 ? cols : ArrayRef<Value>()) {
        wScale.push_back(a.load(scales, {c, block}));
        if (zeros)
          wZero.push_back(arith::ExtSIOp::create(b, b.getI32Type(),
                                                 a.load(zeros, {c, block})));
      }
      // The tile's weights are loaded first, in memory order, except for a
      // tile of several rows with blocks of 128, which takes them column by
      // column: one column's weights beside the accumulators and x's rows.
      bool byColumn = mr > 1 && halves > 1;
      SmallVector<SmallVector<Value>> weights(nr);
      auto load = [&](int64_t j, int64_t h) {
        weights[j].push_back(unsignedWeights(cols[j], a.addi(wBlock, e.index(h))));
      };
      for (int64_t h = 0; !byColumn && h < halves; ++h)
        for (int64_t j = 0; j < nr; ++j)
          load(j, h);
      SmallVector<Value> sums(mr * nr);
      for (int64_t j = 0; j < nr; ++j) {
        for (int64_t h = 0; byColumn && h < halves; ++h)
          load(j, h);
        ArrayRef<Value> wq = weights[j];
        for (int64_t i = 0; i < mr; ++i) {
          // The unsigned weights' offset: 128 (int8, sign bit flipped),
          // 8 (int4) or the zero point, times the block's sum of x.
          Value offset = zeros ? wZero[j] : e.i32(int4 ? 8 : 128);
          Value dot = vector::InsertOp::create(
              b, a.muli(xSum[i], arith::SubIOp::create(b, e.i32(0), offset)),
              intZeros, int64_t(0));
          for (int64_t h = 0; h < halves; ++h) {
            Value xq = vector::LoadOp::create(
                b, i8x64, xValues, {e.index(i), a.addi(k0, e.index(h * kBlock))});
            dot = LLVM::CallIntrinsicOp::create(b, i32x16, vpdpbusd,
                                                ValueRange{dot, wq[h], xq})
                      .getResult(0);
          }
          Value scale = int4 ? a.mul(xScale[i], wScale[j]) : xScale[i];
          sums[i * nr + j] = vector::FMAOp::create(
              b, arith::SIToFPOp::create(b, f32x16, dot), splat(f32x16, scale),
              acc[i * nr + j]);
        }
      }
      return sums;
    };
    Value floatZeros = arith::ConstantOp::create(
        b, f32x16, DenseElementsAttr::get(f32x16, 0.0f));
    return e.forLoop(e.index(0), e.index(activationBlocks), 1,
                     SmallVector<Value>(mr * nr, floatZeros),
                     [&](Value block, ValueRange acc) -> SmallVector<Value> {
                       return step(block, acc);
                     });
  }

  /// Without VNNI: block by block of 64 columns, in f32 (floatBlock).
  SmallVector<Value> floatBlocks(Value m0, int64_t mr, ArrayRef<Value> cols) {
    VectorType f32x16 = vector(16, b.getF32Type());
    Value floatZeros = arith::ConstantOp::create(
        b, f32x16, DenseElementsAttr::get(f32x16, 0.0f));
    int64_t nr = cols.size();
    return e.forLoop(
        e.index(0), e.index(blocks), 1, SmallVector<Value>(mr * nr, floatZeros),
        [&](Value block, ValueRange acc) -> SmallVector<Value> {
          Value k0 = a.muli(block, e.index(kBlock));
          SmallVector<Value> wq, wScale, wZero;
          SmallVector<SmallVector<Value>> wAt;
          Value group128 = a.divui(block, e.index(kInt4GroupColumns / kBlock));
          for (Value c : cols) {
            if (mr == 1)
              prefetch(c, a.addi(block, e.index(kPrefetchBlocks)));
            if (!int4) {
              wAt.push_back({a.divui(c, e.index(kRowGroup)), block,
                             a.remui(c, e.index(kRowGroup))});
              continue;
            }
            wq.push_back(unsignedWeights(c, block));
            wScale.push_back(a.load(scales, {c, group128}));
            if (zeros)
              wZero.push_back(a.load(zeros, {c, group128}));
          }
          return floatBlock(m0, mr, nr, k0, wAt, wq, wScale, wZero, acc);
        });
  }

  /// Outputs (m0 + i, n0 + j) for i < mr, j < nr.
  void microkernel(Value m0, int64_t mr, Value n0, int64_t nr) {
    SmallVector<Value> cols;
    for (int64_t j = 0; j < nr; ++j)
      cols.push_back(a.addi(n0, e.index(j)));
    SmallVector<Value> acc = vnni ? vnniBlocks(mr, cols) : floatBlocks(m0, mr, cols);
    // int4's scales are per group, applied block by block.
    storeTile(e, acc, m0, mr, cols, y, int4 ? Value() : scales, bias);
  }

  CpuKernelEmitter &e;
  Arith &a;
  ImplicitLocOpBuilder &b;
  bool int4, vnni, avx512;
  int64_t n, depth, blocks, activationBlock, activationBlocks;
  Value x, w, scales, zeros, bias, y;
  Value xValues, xScales, xSums;
};

} // namespace

bool mlir::llmserve::useVnniLinear(LinearOp o) {
  auto type = cast<RankedTensorType>(o.getWeight().getType());
  auto weight = o.getWeight().getDefiningOp<WeightOp>();
  if (!o.getScales() || !weight || type.getDimSize(0) % kRowGroup != 0 ||
      type.getDimSize(1) % kBlock != 0)
    return false;
  weight->setAttr(
      LlmserveDialect::kLayoutAttrName,
      StringAttr::get(o.getContext(), LlmserveDialect::kRowBlockLayout));
  return true;
}

Grid mlir::llmserve::buildLinearVnniKernel(CpuKernelEmitter &e, LinearOp o,
                                           CpuInstructions instructions) {
  return VnniLinear(e, o, instructions).build();
}
