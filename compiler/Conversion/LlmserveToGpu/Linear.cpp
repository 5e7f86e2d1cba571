//===- Linear.cpp - x·Wᵀ (+ b) on the GPU ----------------------------------===//
//
// f16/bf16: tensor cores, three kernels chosen by M. A block stages tiles
// of x and W in shared memory, and each warp issues mma.sync m16n8k16
// (row.col, f32 accumulate) over its part of the block's tile, reading the
// fragments as 32-bit words (pairs of consecutive k). W is [N, K] row-major,
// which is exactly the column-major B operand `row.col` wants. Staged rows
// are padded by 8 elements so that the fragment loads of a warp hit 32
// distinct banks.
//
// Batch invariance: K is cut into splits fixed by the weight's shape
// (`KSplit`), each a whole number of 128-wide steps. Every output sums each
// split's mma.sync m16n8k16 steps from zero in k order, then adds the splits'
// sums to zero in split order, in every kernel and whatever M is, so a row's
// result does not depend on the batch or on which kernel ran it. The splits
// of a tile are the blocks of one cluster, which reduce through distributed
// shared memory.
//
// Quantized weights (docs/bundle.md) stream as their stored bytes, int8 and
// FP8 a byte per column and int4 two a byte, and become x's type in
// registers as the B fragments are read: int8 values as they are, int4
// nibbles minus their zero point, FP8 codes by `cvt.rn.f16x2.e4m3x2`, all
// exact in f16 and bf16. An int8 row's sum is times its scale where it is
// stored. An int4 or FP8 W's groups of 128 columns each sum from zero, then
// add into the accumulators times the group's scale (one fma; FP8's is its
// block's), in every kernel: splits are whole groups.
//
// W8A8: x as FP8 codes (llmserve.quantize_fp8) streams as bytes too, and
// both operands go to mma.sync m16n8k32 e4m3 as stored, 4 codes a word. A
// group's sum folds in times W's block scale times x's scale of the row and
// group.
//
// f32: one warp per output; the lanes stride over K (coalesced rows of x and
// W) and a butterfly sums them.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToGpu/GpuKernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::llmserve;

namespace {

constexpr int64_t kTileM = 64, kTileN = 64, kTileK = 32;
constexpr int64_t kWarpTileM = 32, kWarpTileN = 32;
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 16;
// An mma's k step, in 32-bit words of a row: 16 f16/bf16 columns (m16n8k16)
// or 32 e4m3 ones (m16n8k32). A thread reads words t and t + 4 of it.
constexpr int64_t kMmaWords = 8;
// Elements per 128-bit load.
constexpr int64_t kChunk = 8;
// The small-M kernel's column tile (the unit KSplit aims its block count
// with), and the step along K that splits are whole numbers of.
constexpr int64_t kSmallTileN = 16, kStepK = 128;
// Splits are the CTAs of one cluster, which reduce through distributed
// shared memory: at most the portable cluster size.
constexpr int64_t kMaxSplits = 8;
// Blocks the small-M kernel aims at for one row tile: about 4 per SM of an
// H100 (132), so that each SM has several weight streams in flight.
constexpr int64_t kSmallBatchTargetBlocks = 512;

/// How K is cut for a weight of `n` rows and `depth` columns: `count`
/// splits of `steps` kStepK-wide steps each (the last may have fewer). A
/// weight without the small-M kernels (K not a multiple of 8) is not split.
struct KSplit {
  int64_t count = 1, steps;

  KSplit(int64_t n, int64_t depth, bool splittable) {
    int64_t totalSteps = (depth + kStepK - 1) / kStepK;
    int64_t columnTiles = (n + kSmallTileN - 1) / kSmallTileN;
    if (splittable)
      count = std::clamp<int64_t>(
          (kSmallBatchTargetBlocks + columnTiles - 1) / columnTiles, 1,
          std::min(kMaxSplits, totalSteps));
    steps = (totalSteps + count - 1) / count;
    count = (totalSteps + steps - 1) / steps; // no empty split
  }
  int64_t depth() const { return steps * kStepK; }
};

/// One mma (row.col, f32 accumulate) of operands of type `element`: A = 4
/// words, B = 2 words, C = 4 f32. m16n8k16 for f16/bf16 (two elements a
/// word), m16n8k32 for f8E4M3FN (four).
SmallVector<Value> mma(ImplicitLocOpBuilder &b, Type element, ArrayRef<Value> fa,
                       ArrayRef<Value> fb, ArrayRef<Value> c) {
  bool fp8 = isa<Float8E4M3FNType>(element);
  auto operand = [&](Value word) -> Value {
    if (!element.isF16())
      return word;
    return LLVM::BitcastOp::create(b, VectorType::get({2}, b.getF16Type()),
                                   word);
  };
  SmallVector<Value> opA, opB;
  for (Value v : fa)
    opA.push_back(operand(v));
  for (Value v : fb)
    opB.push_back(operand(v));
  auto f32 = b.getF32Type();
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  Value d;
  if (fp8) {
    // nvvm.mma.sync does not take e4m3 operands; LLVM's intrinsic does.
    SmallVector<Value> args(opA);
    args.append(opB);
    args.append(c.begin(), c.end());
    d = LLVM::CallIntrinsicOp::create(
            b, resultType, b.getStringAttr("llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32"),
            args)
            .getResult(0);
  } else {
    NVVM::MMATypes type = element.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    d = NVVM::MmaOp::create(
        b, resultType, opA, opB, c, ArrayRef<int64_t>{kMmaM, kMmaN, kMmaK}, std::nullopt,
        std::nullopt, std::array<NVVM::MMATypes, 2>{type, type},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
  }
  SmallVector<Value> out;
  for (int64_t q = 0; q < 4; ++q)
    out.push_back(LLVM::ExtractValueOp::create(b, d, q));
  return out;
}

/// How a linear's weight is stored (docs/bundle.md): floats, or quantized
/// values with f32 scales, int8 a byte per column with a scale per row,
/// int4 two a byte (byte j of a row holding columns 2j and 2j + 1, each plus
/// 8, in its low and high nibble) with a scale, and with `zeros` a zero
/// point, per row and group of 128 columns, or FP8 e4m3 codes a byte per
/// column with a scale per block of 128 x 128.
enum class WeightFormat { Float, Int8, Int4, Fp8 };

WeightFormat weightFormat(LinearOp op) {
  Type element = cast<RankedTensorType>(op.getWeight().getType()).getElementType();
  if (element.isInteger(8))
    return WeightFormat::Int8;
  if (element.isInteger(4))
    return WeightFormat::Int4;
  if (isa<Float8E4M3FNType>(element))
    return WeightFormat::Fp8;
  return WeightFormat::Float;
}

/// Whether a weight of `format` has a scale per group of 128 columns, which
/// the kernels fold into the sums group by group.
bool scaledByGroup(WeightFormat format) {
  return format == WeightFormat::Int4 || format == WeightFormat::Fp8;
}

/// Bytes of `columns` columns of a row of `op`'s weight.
int64_t weightRowBytes(LinearOp op, int64_t columns) {
  switch (weightFormat(op)) {
  case WeightFormat::Int8:
  case WeightFormat::Fp8:
    return columns;
  case WeightFormat::Int4:
    return columns / 2;
  case WeightFormat::Float:
    break;
  }
  auto type = cast<RankedTensorType>(op.getWeight().getType());
  return columns * type.getElementTypeBitWidth() / 8;
}

/// A linear's bindings: its operands in order (x, W, then scales, zeros,
/// the bias and x's scales where it has them), then y.
struct LinearBindings {
  int x = 0, w = 1, scales = -1, zeros = -1, bias = -1, inputScales = -1, y;

  explicit LinearBindings(LinearOp op) {
    int next = 2;
    if (op.getScales())
      scales = next++;
    if (op.getZeros())
      zeros = next++;
    if (op.getBias())
      bias = next++;
    if (op.getInputScales())
      inputScales = next++;
    y = next;
  }

  /// The bindings of a linear of a dispatch region, whose operands are the
  /// region's arguments: the region's inputs, then its results, the
  /// linear's the `result`th.
  LinearBindings(LinearOp op, DispatchRegionOp region, int result) {
    auto number = [](Value v) {
      return v ? static_cast<int>(cast<BlockArgument>(v).getArgNumber()) : -1;
    };
    x = number(op.getInput());
    w = number(op.getWeight());
    scales = number(op.getScales());
    zeros = number(op.getZeros());
    bias = number(op.getBias());
    inputScales = number(op.getInputScales());
    y = static_cast<int>(region.getNumOperands()) + result;
  }
};

/// A linear of a kernel, and where its operands and result are bound.
struct LinearPart {
  LinearOp op;
  LinearBindings bindings;
};

/// The linears `op`'s kernels compute: a linear, or the linears of a
/// dispatch region of siblings (llmserve-group-sibling-linears): linears of
/// the region's first argument, not f32, with the same FP8 input scales and
/// weights of one element type, each yielded once, in order.
FailureOr<SmallVector<LinearPart>> linearParts(Operation *op) {
  if (auto linear = dyn_cast<LinearOp>(op))
    return SmallVector<LinearPart>{{linear, LinearBindings(linear)}};
  auto region = cast<DispatchRegionOp>(op);
  auto unsupported = [&] {
    return region.emitOpError("has no GPU kernel: expected linears of its first input (not f32), "
                              "with the same input scales and weights of one element type, "
                              "yielding their results in order"),
           failure();
  };
  Block &body = region.getBody().front();
  ValueRange yielded = cast<YieldOp>(body.getTerminator()).getValues();
  SmallVector<LinearPart> parts;
  for (auto [result, inner] : llvm::enumerate(body.without_terminator())) {
    auto linear = dyn_cast<LinearOp>(inner);
    if (!linear)
      return unsupported();
    LinearOp leader = parts.empty() ? linear : parts.front().op;
    if (result >= yielded.size() || yielded[result] != linear.getResult() || !linear->hasOneUse() ||
        linear.getInput() != body.getArgument(0) ||
        linear.getInput().getType().getElementType().isF32() ||
        linear.getInputScales() != leader.getInputScales() ||
        linear.getWeight().getType().getElementType() !=
            leader.getWeight().getType().getElementType() ||
        !llvm::all_of(linear->getOperands(), llvm::IsaPred<BlockArgument>))
      return unsupported();
    parts.push_back({linear, LinearBindings(linear, region, static_cast<int>(result))});
  }
  if (parts.size() != yielded.size())
    return unsupported();
  return parts;
}

/// The shared-memory stages a tensor-core kernel streams x and W through:
/// one pair for all the linears of a kernel, which have one input and
/// weights of one element type.
struct Rings {
  Value x, w;
};

/// What both tensor-core kernels read off the op: W is [n, depth], x's type
/// or quantized, and x f16/bf16 or FP8 codes. Both stream x and W through
/// rings of shared-memory stages whose rows are an odd number of 16 bytes
/// ([stages, rows, stepK + 8] elements of x's type, and stored bytes rounded
/// up so), which makes a warp's fragment loads (rows g at one offset) hit
/// distinct banks.
class TensorCoreLinear {
public:
  TensorCoreLinear(GpuKernelEmitter &e, const LinearPart &part, KSplit split)
      : e(e), a(e.arith()), b(e.builder()), op(part.op), format(weightFormat(op)),
        bindings(part.bindings), element(e.elementType(bindings.x)),
        fp8Input(isa<Float8E4M3FNType>(element)), n(weightShape(op)[0]), depth(weightShape(op)[1]),
        split(split) {}

protected:
  /// Starts the copy of rows [r0, r0 + tileRows) and columns [c0, c0 +
  /// tileColumns) of `source` ([rows, columns], rows 16-byte aligned) into
  /// stage `slot` of `tile`: one 16-byte cp.async per chunk, reading nothing
  /// (zeros) for chunks outside the matrix.
  void copyAsync(Value source, Value tile, Value slot, Value r0, Value rows, Value c0,
                 int64_t columns, int64_t tileRows, int64_t tileColumns) {
    Type stored = cast<MemRefType>(source.getType()).getElementType();
    int64_t chunk = 16 * 8 / stored.getIntOrFloatBitWidth();
    int64_t chunksPerRow = tileColumns / chunk;
    forEachOfTile(tileRows * chunksPerRow, [&](Value flat) {
      Value r = a.divui(flat, e.index(chunksPerRow));
      Value c = a.muli(a.remui(flat, e.index(chunksPerRow)), e.index(chunk));
      Value row = a.addi(r0, r), column = a.addi(c0, c);
      Value inside = a.andi(a.cmpi(arith::CmpIPredicate::ult, row, rows),
                            a.cmpi(arith::CmpIPredicate::ult, column, e.index(columns)));
      // An empty copy still forms its address: keep it inside the buffer.
      Value zero = e.index(0);
      nvgpu::DeviceAsyncCopyOp::create(
          b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tile, ValueRange{slot, r, c}, source,
          ValueRange{a.select(inside, row, zero), a.select(inside, column, zero)},
          b.getIndexAttr(chunk), a.select(inside, e.index(chunk), zero),
          /*bypassL1=*/b.getUnitAttr());
    });
  }

  /// The same copy element by element with plain loads and stores (rows
  /// not 16-byte aligned).
  void copySync(Value source, Value tile, Value slot, Value r0, Value rows, Value c0,
                int64_t columns, int64_t tileRows, int64_t tileColumns) {
    Type stored = cast<MemRefType>(source.getType()).getElementType();
    Value zero = arith::ConstantOp::create(b, stored, b.getZeroAttr(stored));
    forEachOfTile(tileRows * tileColumns, [&](Value flat) {
      Value r = a.divui(flat, e.index(tileColumns));
      Value c = a.remui(flat, e.index(tileColumns));
      Value row = a.addi(r0, r), column = a.addi(c0, c);
      Value inside = a.andi(a.cmpi(arith::CmpIPredicate::ult, row, rows),
                            a.cmpi(arith::CmpIPredicate::ult, column, e.index(columns)));
      Value v = e.ifElse(
          inside, stored, [&] { return a.load(source, {row, column}); },
          [&] { return zero; });
      a.store(v, tile, {slot, r, c});
    });
  }

  /// body(i) for i in [0, count), the block's threads taking i = threadId,
  /// threadId + blockSize, ... (unrolled).
  void forEachOfTile(int64_t count, const std::function<void(Value)> &body) {
    for (int64_t i = 0; i * e.blockSize() < count; ++i) {
      Value flat = a.addi(e.threadId(), e.index(i * e.blockSize()));
      if ((i + 1) * e.blockSize() <= count)
        body(flat);
      else
        e.ifThen(a.cmpi(arith::CmpIPredicate::ult, flat, e.index(count)), [&] { body(flat); });
    }
  }

  /// The stages of stepK columns that cover K: for a W scaled by group, a
  /// whole number of groups (the stages past K read zeros).
  int64_t groupedStages(int64_t stepK) const {
    if (!scaledByGroup(format))
      return llvm::divideCeilSigned(depth, stepK);
    return llvm::divideCeilSigned(depth, kInt4GroupColumns) * (kInt4GroupColumns / stepK);
  }

  /// W as stored: [n, depth] of its element type (bytes for FP8), or for
  /// int4 [n, depth / 2] bytes.
  Value weight() { return e.binding(bindings.w); }
  /// The columns of weight() that hold W's columns [0, columns).
  int64_t storedColumns(int64_t columns) const {
    return format == WeightFormat::Int4 ? columns / 2 : columns;
  }
  /// Whether W's rows are 16-byte aligned, so that cp.async copies them.
  bool weightRowsAligned() const { return weightRowBytes(op, depth) % 16 == 0; }

  /// The ring of shared-memory stages W streams through, `rows` rows of
  /// stepK columns each.
  Value weightRing(int64_t stages, int64_t rows, int64_t stepK) {
    if (format == WeightFormat::Float)
      return e.sharedBuffer({stages, rows, stepK + 8}, element);
    return byteRing(stages, rows, weightRowBytes(op, stepK));
  }
  /// The ring x streams through: its elements, or its FP8 codes as bytes.
  Value inputRing(int64_t stages, int64_t rows, int64_t stepK) {
    if (fp8Input)
      return byteRing(stages, rows, stepK);
    return e.sharedBuffer({stages, rows, stepK + 8}, element);
  }
  /// Columns of x and W a word of their rings holds.
  int64_t columnsPerWord() const { return fp8Input ? 4 : 2; }
  /// A ring of `rows` rows of `bytes` a stage, rounded up to an odd number
  /// of 16 bytes.
  Value byteRing(int64_t stages, int64_t rows, int64_t bytes) {
    int64_t chunks = (bytes + 15) / 16;
    return e.sharedBuffer({stages, rows, (chunks | 1) * 16}, b.getI8Type());
  }

  /// Copies W's rows [n0, n0 + rows) and columns [k0, k0 + stepK) into stage
  /// `slot` of `ring`.
  void copyWeight(Value w, Value ring, Value slot, Value n0, Value k0, int64_t rows, int64_t stepK,
                  bool async) {
    Value c0 = format == WeightFormat::Int4 ? a.divui(k0, e.index(2)) : k0;
    if (async)
      copyAsync(w, ring, slot, n0, e.index(n), c0, storedColumns(depth), rows,
                storedColumns(stepK));
    else
      copySync(w, ring, slot, n0, e.index(n), c0, storedColumns(depth), rows, storedColumns(stepK));
  }

  /// The 32-bit word `word` (elements 2 word, 2 word + 1 of a ring of
  /// 16-bit elements, bytes 4 word to 4 word + 3 of a ring of bytes) of row
  /// `row` of stage `slot`.
  Value wordAt(Value tile, Value slot, Value row, Value word) {
    Type stored = cast<MemRefType>(tile.getType()).getElementType();
    int64_t perWord = 32 / stored.getIntOrFloatBitWidth();
    Value v = vector::LoadOp::create(b, VectorType::get({perWord}, stored), tile,
                                     ValueRange{slot, row, a.muli(word, e.index(perWord))});
    auto oneWord = VectorType::get({1}, b.getI32Type());
    Value bits = vector::BitCastOp::create(b, oneWord, v);
    return vector::ExtractOp::create(b, bits, ArrayRef<int64_t>{0});
  }

  /// The B fragment of W's row `row` (in `ring`'s tile) for the mma step
  /// whose first word this thread reads is `word`: words `word` and `word` +
  /// 4, in x's type (FP8 codes as they are for FP8 x). `zero` is the row's
  /// int4 zero point for the group (zeroPoints).
  SmallVector<Value> weightFragment(Value ring, Value slot, Value row, Value word, Value zero) {
    Value wordHigh = a.addi(word, e.index(4));
    if (format == WeightFormat::Float || fp8Input)
      return {wordAt(ring, slot, row, word), wordAt(ring, slot, row, wordHigh)};
    return {quantizedWord(ring, slot, row, word, zero),
            quantizedWord(ring, slot, row, wordHigh, zero)};
  }

  /// Columns 2 word and 2 word + 1 of a quantized row in the ring, as a word
  /// of two elements of x's type: int8 values as they are, int4 nibbles
  /// minus `zero`, FP8 codes by cvt.rn.f16x2.e4m3x2 (all exact in f16 and
  /// bf16).
  Value quantizedWord(Value ring, Value slot, Value row, Value word, Value zero) {
    auto i32 = b.getI32Type();
    if (format == WeightFormat::Fp8)
      return fp8Word(vector::LoadOp::create(b, VectorType::get({2}, b.getI8Type()), ring,
                                            ValueRange{slot, row, a.muli(word, e.index(2))}));
    Value low, high;
    if (format == WeightFormat::Int8) {
      Value pair = vector::LoadOp::create(b, VectorType::get({2}, b.getI8Type()), ring,
                                          ValueRange{slot, row, a.muli(word, e.index(2))});
      auto value = [&](int64_t i) -> Value {
        return arith::ExtSIOp::create(b, i32,
                                      vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{i}));
      };
      low = value(0);
      high = value(1);
    } else {
      Value byte = arith::ExtUIOp::create(b, i32, a.load(ring, {slot, row, word}));
      auto constant = [&](int64_t v) -> Value { return arith::ConstantIntOp::create(b, i32, v); };
      low = a.subi(arith::AndIOp::create(b, byte, constant(15)), zero);
      high = a.subi(arith::ShRUIOp::create(b, byte, constant(4)), zero);
    }
    auto toElement = [&](Value v) -> Value {
      return arith::TruncFOp::create(b, element, arith::SIToFPOp::create(b, b.getF32Type(), v));
    };
    Value pair = vector::FromElementsOp::create(b, VectorType::get({2}, element),
                                                ValueRange{toElement(low), toElement(high)});
    Value bits = vector::BitCastOp::create(b, VectorType::get({1}, i32), pair);
    return vector::ExtractOp::create(b, bits, ArrayRef<int64_t>{0});
  }

  /// Two e4m3 codes (vector<2xi8>) as a word of two elements of x's type.
  Value fp8Word(Value codes) {
    auto halvesType = VectorType::get({2}, b.getF16Type());
    Value halves = NVVM::ConvertF8x2ToF16x2Op::create(b, halvesType, codes, /*relu=*/false,
                                                      b.getType<Float8E4M3FNType>());
    if (!element.isF16()) {
      auto widened = [&](int64_t i) -> Value {
        return arith::TruncFOp::create(
            b, element,
            arith::ExtFOp::create(
                b, b.getF32Type(),
                vector::ExtractOp::create(b, halves, ArrayRef<int64_t>{i}).getResult()));
      };
      halves = vector::FromElementsOp::create(b, VectorType::get({2}, element),
                                              ValueRange{widened(0), widened(1)});
    }
    Value bits = vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), halves);
    return vector::ExtractOp::create(b, bits, ArrayRef<int64_t>{0});
  }

  /// The zero points (i32) of group `group` of the W rows whose B fragments
  /// this thread reads for a warp's tilesN m16n8 tiles from W row col0: the
  /// checkpoint's, or 8 (the values' offset) without `zeros`. Null values
  /// unless W is int4.
  SmallVector<Value> zeroPoints(Value col0, int64_t tilesN, Value group) {
    if (format != WeightFormat::Int4)
      return SmallVector<Value>(tilesN, Value());
    Value zeros = bindings.zeros >= 0 ? e.binding(bindings.zeros) : Value();
    SmallVector<Value> points;
    for (int64_t j = 0; j < tilesN; ++j) {
      if (!zeros) {
        points.push_back(arith::ConstantIntOp::create(b, b.getI32Type(), 8));
        continue;
      }
      Value row = a.addi(a.addi(col0, e.index(j * kMmaN)), a.divui(e.laneId(), e.index(4)));
      row = a.mini(row, e.index(n - 1)); // rows past W compute nothing stored
      points.push_back(arith::ExtSIOp::create(b, b.getI32Type(), a.load(zeros, {row, group})));
    }
    return points;
  }

  /// acc + partial times the scale of group `group` of each sum's column
  /// (one fma each; FP8: of the column's block of 128 rows of W; FP8 x:
  /// times x's scale of the sum's row and the group), for the sums of a
  /// warp's tilesM x tilesN m16n8 tiles whose first is at (row0, col0)
  /// (storeTiles' order).
  SmallVector<Value> foldGroup(ValueRange acc, ArrayRef<Value> partial, Value row0, Value col0,
                               int64_t tilesM, int64_t tilesN, Value group) {
    Value scales = e.binding(bindings.scales);
    Value pairInGroup = a.remui(e.laneId(), e.index(4));
    SmallVector<Value> columnScales;
    for (int64_t j = 0; j < tilesN; ++j)
      for (int64_t q = 0; q < 2; ++q) {
        Value col = a.addi(a.addi(col0, e.index(j * kMmaN + q)), a.muli(pairInGroup, e.index(2)));
        Value row = a.mini(col, e.index(n - 1));
        if (format == WeightFormat::Fp8)
          row = a.divui(row, e.index(kFp8BlockSize));
        columnScales.push_back(a.load(scales, {row, group}));
      }
    // x's scales of rows g and g + 8 of each m16 tile (rows past M, which
    // sum zeros, read the last row's).
    SmallVector<Value> rowScales;
    if (fp8Input) {
      Value inputScales = e.binding(bindings.inputScales);
      Value last = a.subi(e.dimSize(bindings.x, 0), e.index(1));
      for (int64_t i = 0; i < tilesM; ++i)
        for (int64_t half = 0; half < 2; ++half) {
          Value row =
              a.addi(a.addi(row0, e.index(i * kMmaM + half * 8)), a.divui(e.laneId(), e.index(4)));
          rowScales.push_back(a.load(inputScales, {a.mini(row, last), group}));
        }
    }
    SmallVector<Value> folded;
    for (int64_t i = 0; i < tilesM; ++i)
      for (int64_t j = 0; j < tilesN; ++j)
        for (int64_t q = 0; q < 4; ++q) {
          int64_t at = (i * tilesN + j) * 4 + q;
          Value scale = columnScales[j * 2 + q % 2];
          if (fp8Input)
            scale = a.mul(rowScales[i * 2 + q / 2], scale);
          folded.push_back(math::FmaOp::create(b, partial[at], scale, acc[at]));
        }
    return folded;
  }

  /// The loop over this block's `count` stages of stepK columns, the first
  /// of which is stage `firstStage` of W, accumulating `init` (the sums of a
  /// warp's tilesM x tilesN tiles from (row0, col0)): body(stage, sums,
  /// zeroPoints) adds a stage's products to the sums. An int4 or FP8 W's
  /// groups of 128 columns each sum from zero, then fold into the
  /// accumulators (foldGroup): every kernel rounds a row alike, whatever its
  /// stepK. `count` is then a whole number of groups (groupedStages).
  SmallVector<Value> stageLoop(
      Value count, Value firstStage, int64_t stepK, ArrayRef<Value> init, Value row0, Value col0,
      int64_t tilesM, int64_t tilesN,
      const std::function<SmallVector<Value>(Value, ArrayRef<Value>, ArrayRef<Value>)> &body) {
    if (!scaledByGroup(format))
      return e.forLoop(
          e.index(0), count, 1, init, [&](Value stage, ValueRange sums) -> SmallVector<Value> {
            return body(stage, SmallVector<Value>(sums), zeroPoints(col0, tilesN, Value()));
          });
    int64_t perGroup = kInt4GroupColumns / stepK;
    Value groups = a.divui(count, e.index(perGroup));
    Value firstGroup = a.divui(firstStage, e.index(perGroup));
    return e.forLoop(
        e.index(0), groups, 1, init, [&](Value g, ValueRange acc) -> SmallVector<Value> {
          Value group = a.addi(firstGroup, g);
          SmallVector<Value> points = zeroPoints(col0, tilesN, group);
          SmallVector<Value> sums(acc.size(), e.f32(0));
          for (int64_t s = 0; s < perGroup; ++s)
            sums = body(a.addi(a.muli(g, e.index(perGroup)), e.index(s)), sums, points);
          return foldGroup(acc, sums, row0, col0, tilesM, tilesN, group);
        });
  }

  /// Stores the f32 sums of a warp's tilesM x tilesN m16n8 tiles, whose
  /// first is at (row0, col0), times the row's scale (int8) plus the bias,
  /// where inside [m, n): tile (i, j)'s sums c0, c1 are (row g, cols 2t, 2t
  /// + 1), c2, c3 row g + 8.
  void storeTiles(ArrayRef<Value> sums, Value row0, Value col0, int64_t tilesM,
                  int64_t tilesN, Value m) {
    Value bias = bindings.bias >= 0 ? e.binding(bindings.bias) : Value();
    Value scales = format == WeightFormat::Int8 ? e.binding(bindings.scales) : Value();
    Value y = e.binding(bindings.y);
    Value group = a.divui(e.laneId(), e.index(4));
    Value pairInGroup = a.remui(e.laneId(), e.index(4));
    for (int64_t i = 0; i < tilesM; ++i)
      for (int64_t j = 0; j < tilesN; ++j) {
        Value r = a.addi(a.addi(row0, e.index(i * kMmaM)), group);
        Value c = a.addi(a.addi(col0, e.index(j * kMmaN)), a.muli(pairInGroup, e.index(2)));
        for (int64_t q = 0; q < 4; ++q) {
          Value row = a.addi(r, e.index(q < 2 ? 0 : 8));
          Value col = a.addi(c, e.index(q % 2));
          Value inside = a.andi(a.cmpi(arith::CmpIPredicate::ult, row, m),
                                a.cmpi(arith::CmpIPredicate::ult, col, e.index(n)));
          e.ifThen(inside, [&] {
            Value v = sums[(i * tilesN + j) * 4 + q];
            if (scales && bias)
              v = math::FmaOp::create(b, v, a.load(scales, col), e.loadF32(bias, col));
            else if (scales)
              v = a.mul(v, a.load(scales, col));
            else if (bias)
              v = a.add(v, e.loadF32(bias, col));
            e.storeF32(v, y, {row, col});
          });
        }
      }
  }

  /// Stores this block's outputs (storeTiles) from its split's sums `acc`:
  /// added to zero when K is one split, else reduced across the cluster
  /// (reduceSplits).
  void finishSplits(ArrayRef<Value> acc, Value ring, Value row0, Value col0,
                    int64_t tilesM, int64_t tilesN, Value m) {
    auto store = [&](ArrayRef<Value> sums) {
      storeTiles(sums, row0, col0, tilesM, tilesN, m);
    };
    if (split.count > 1)
      return reduceSplits(acc, ring, store);
    SmallVector<Value> total;
    for (Value v : acc)
      total.push_back(a.add(e.f32(0), v));
    store(total);
  }

  /// Adds the splits' sums of this block's outputs to zero in split order and
  /// stores them from the cluster's first block: each block puts its sums
  /// (quads of f32 per thread) in `ring`, the x stages it no longer reads;
  /// after a cluster barrier (release/acquire) the first block's threads
  /// read theirs from every block through `mapa`; a second barrier keeps the
  /// others' shared memory alive until then.
  void reduceSplits(ArrayRef<Value> acc, Value ring,
                    const std::function<void(ArrayRef<Value>)> &store) {
    e.function()->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                          b.getDenseI32ArrayAttr(
                              {1, 1, static_cast<int32_t>(split.count)}));
    int64_t quads = acc.size() / 4;
    auto ringType = cast<MemRefType>(ring.getType());
    assert(e.blockSize() * quads * 16 <=
               ringType.getNumElements() * (ringType.getElementTypeBitWidth() / 8) &&
           "the sums fit in the x stages");
    auto f32 = b.getF32Type();
    auto quad = VectorType::get({4}, f32);
    auto sharedPtr = LLVM::LLVMPointerType::get(b.getContext(), 3);
    auto clusterPtr = LLVM::LLVMPointerType::get(b.getContext(), 7);
    Value address = arith::IndexCastUIOp::create(
        b, b.getI64Type(), memref::ExtractAlignedPointerAsIndexOp::create(b, ring));
    Value base = LLVM::IntToPtrOp::create(b, sharedPtr, address);
    // Thread t's quad i: element i * blockSize + t, so that a warp's 16-byte
    // stores and loads are contiguous.
    auto quadOf = [&](int64_t i) -> Value {
      Value at = a.addi(e.threadId(), e.index(i * e.blockSize()));
      return LLVM::GEPOp::create(
          b, sharedPtr, quad, base,
          ArrayRef<LLVM::GEPArg>{
              arith::IndexCastUIOp::create(b, b.getI32Type(), at).getResult()});
    };
    // Every warp is done with the stages before they hold sums.
    e.barrier();
    for (int64_t i = 0; i < quads; ++i) {
      Value own = arith::ConstantOp::create(b, quad, b.getZeroAttr(quad));
      for (int64_t q = 0; q < 4; ++q)
        own = vector::InsertOp::create(b, acc[i * 4 + q], own, ArrayRef<int64_t>{q});
      LLVM::StoreOp::create(b, own, quadOf(i), /*alignment=*/16);
    }
    NVVM::ClusterArriveOp::create(b, /*aligned=*/b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, /*aligned=*/b.getUnitAttr());

    e.ifThen(a.cmpi(arith::CmpIPredicate::eq, e.blockId(2), e.index(0)), [&] {
      SmallVector<Value> total(acc.size(), e.f32(0));
      for (int64_t s = 0; s < split.count; ++s) {
        Value rank = arith::ConstantIntOp::create(b, b.getI32Type(), s);
        for (int64_t i = 0; i < quads; ++i) {
          Value peer = NVVM::MapaOp::create(b, clusterPtr, quadOf(i), rank);
          Value v = LLVM::LoadOp::create(b, quad, peer, /*alignment=*/16);
          for (int64_t q = 0; q < 4; ++q)
            total[i * 4 + q] = a.add(total[i * 4 + q],
                                     vector::ExtractOp::create(b, v, ArrayRef<int64_t>{q}));
        }
      }
      store(total);
    });
    NVVM::ClusterArriveOp::create(b, /*aligned=*/b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, /*aligned=*/b.getUnitAttr());
  }

  GpuKernelEmitter &e;
  Arith &a;
  ImplicitLocOpBuilder &b;
  LinearOp op;
  WeightFormat format;
  LinearBindings bindings;
  /// x's element type: f16, bf16, or f8E4M3FN codes (`fp8Input`).
  Type element;
  bool fp8Input;
  int64_t n, depth;
  KSplit split;

private:
  static ArrayRef<int64_t> weightShape(LinearOp op) {
    return cast<RankedTensorType>(op.getWeight().getType()).getShape();
  }
};

/// The kernel for M > 64 (prefill and large decode batches): a block of 4
/// warps computes a 64x64 tile over one split of K, each warp a 32x32
/// quarter of 2 x 4 m16n8 tiles. x and W stream through 4 shared-memory
/// stages of 32 k (64 for FP8 x: as many bytes, and room for the split
/// sums), with cp.async when K is a multiple of 8 (else plain copies into
/// the same ring), 3 steps ahead of the mma. The splits of a
/// tile are one cluster, reduced as in the small-M kernels: a 256-row k
/// projection has 4 column tiles, which its 8 splits make 32 blocks per
/// row tile instead of 4.
class MmaLinear : TensorCoreLinear {
public:
  static constexpr int64_t kStages = 4;
  static_assert(kTileM == kTileN, "copy() stages kTileM rows of x and of W");

  MmaLinear(GpuKernelEmitter &e, const LinearPart &part, KSplit split)
      : TensorCoreLinear(e, part, split), stepK(kTileK * columnsPerWord() / 2) {}

  Rings rings() { return {inputRing(kStages, kTileM, stepK), weightRing(kStages, kTileN, stepK)}; }
  int64_t tileColumns() const { return kTileN; }
  std::string rowTiles() { return ceilDivExpr(e.dimExpr(bindings.x, 0), kTileM); }

  /// The block's tile: rows from block x, W's rows from `columnTile`, K's
  /// split from block z.
  void buildTile(Value columnTile, const Rings &rings) {
    Value x = e.binding(bindings.x), w = weight();
    Value m = e.dimSize(bindings.x, 0);
    Value xs = rings.x, ws = rings.w;
    Value m0 = a.muli(e.blockId(0), e.index(kTileM));
    Value n0 = a.muli(columnTile, e.index(kTileN));
    Value lane = e.laneId(), warp = e.warpId();
    Value group = a.divui(lane, e.index(4)), pairInGroup = a.remui(lane, e.index(4));
    Value warpRow = a.muli(a.divui(warp, e.index(2)), e.index(kWarpTileM));
    Value warpCol = a.muli(a.remui(warp, e.index(2)), e.index(kWarpTileN));

    // This block's split: steps [first, first + count) of K (all of K when
    // there is one split).
    bool async = depth % kChunk == 0 && weightRowsAligned();
    int64_t totalSteps = groupedStages(stepK);
    int64_t stepsPerSplit = std::min(totalSteps, split.depth() / stepK);
    Value first = a.muli(e.blockId(2), e.index(stepsPerSplit));
    Value count = a.mini(e.index(stepsPerSplit), a.subi(e.index(totalSteps), first));
    auto kOf = [&](Value step) { return a.muli(a.addi(first, step), e.index(stepK)); };
    auto copyX = [&](Value step, Value slot) {
      if (async)
        copyAsync(x, xs, slot, m0, m, kOf(step), depth, kTileM, stepK);
      else
        copySync(x, xs, slot, m0, m, kOf(step), depth, kTileM, stepK);
    };
    auto copyW = [&](Value step, Value slot) {
      copyWeight(w, ws, slot, n0, kOf(step), kTileN, stepK, async);
    };
    auto ifStep = [&](int64_t s, const std::function<void()> &body) {
      e.ifThen(a.cmpi(arith::CmpIPredicate::ult, e.index(s), count), body);
    };
    // As in the small-M kernels, the first steps' weights are copied before
    // the wait for the previous grid (asynchronous copies only).
    int64_t early = std::min(kStages - 1, stepsPerSplit);
    if (async) {
      for (int64_t s = 0; s < early; ++s)
        ifStep(s, [&] { copyW(e.index(s), e.index(s)); });
      e.waitForPrerequisites();
    }
    for (int64_t s = 0; s < kStages - 1; ++s) {
      if (s < early)
        ifStep(s, [&] {
          if (!async)
            copyW(e.index(s), e.index(s));
          copyX(e.index(s), e.index(s));
        });
      NVVM::CpAsyncCommitGroupOp::create(b);
    }

    constexpr int64_t tilesM = kWarpTileM / kMmaM, tilesN = kWarpTileN / kMmaN;
    SmallVector<Value> init(tilesM * tilesN * 4, e.f32(0));
    Value row0 = a.addi(m0, warpRow), col0 = a.addi(n0, warpCol);
    SmallVector<Value> acc = stageLoop(
        count, first, stepK, init, row0, col0, tilesM, tilesN,
        [&](Value step, ArrayRef<Value> sums, ArrayRef<Value> zeros) -> SmallVector<Value> {
          NVVM::CpAsyncWaitGroupOp::create(b, kStages - 2);
          e.barrier();
          Value next = a.addi(step, e.index(kStages - 1));
          e.ifThen(a.cmpi(arith::CmpIPredicate::ult, next, count), [&] {
            Value slot = a.remui(next, e.index(kStages));
            copyX(next, slot);
            copyW(next, slot);
          });
          NVVM::CpAsyncCommitGroupOp::create(b);
          Value slot = a.remui(step, e.index(kStages));
          SmallVector<Value> c(sums);
          for (int64_t kw = 0; kw < stepK / columnsPerWord(); kw += kMmaWords) {
            Value word = a.addi(pairInGroup, e.index(kw));
            Value wordHigh = a.addi(word, e.index(4));
            SmallVector<SmallVector<Value>> fa, fb;
            for (int64_t i = 0; i < tilesM; ++i) {
              Value r = a.addi(a.addi(warpRow, e.index(i * kMmaM)), group);
              Value r8 = a.addi(r, e.index(8));
              fa.push_back({wordAt(xs, slot, r, word), wordAt(xs, slot, r8, word),
                            wordAt(xs, slot, r, wordHigh), wordAt(xs, slot, r8, wordHigh)});
            }
            for (int64_t j = 0; j < tilesN; ++j) {
              Value row = a.addi(a.addi(warpCol, e.index(j * kMmaN)), group);
              fb.push_back(weightFragment(ws, slot, row, word, zeros[j]));
            }
            for (int64_t i = 0; i < tilesM; ++i)
              for (int64_t j = 0; j < tilesN; ++j) {
                int64_t at = (i * tilesN + j) * 4;
                SmallVector<Value> d = mma(b, element, fa[i], fb[j], ArrayRef(c).slice(at, 4));
                std::copy(d.begin(), d.end(), c.begin() + at);
              }
          }
          return c;
        });
    NVVM::CpAsyncWaitGroupOp::create(b, 0);

    finishSplits(acc, xs, row0, col0, tilesM, tilesN, m);
  }

  /// Columns of a stage.
  int64_t stepK;
};

/// The shape of a kernel for decode-sized M: a block computes tileM rows x
/// tileN columns over one split of K, a warp per 16 rows by tileN / warpsN
/// columns, streaming x and W through `stages` shared-memory stages of
/// stepK elements of K.
struct SmallBatchTile {
  int64_t tileM, tileN, stepK, stages, warps;
};

/// M <= 16: 2 warps on 16 x 16, so W is spread over N / 16 column tiles
/// times the splits (about kSmallBatchTargetBlocks blocks for any N); 4
/// stages of 128 k keep 3 steps of weight loads in flight per block.
constexpr SmallBatchTile kSmallTile = {kMmaM, kSmallTileN, kStepK, 4,
                                       kSmallBatchLinearBlockSize / llmserve::kWarpSize};
/// 16 < M <= 64: 4 warps on 64 x 32, each warp 16 rows, so one block reads a
/// W tile once for up to 64 rows (the 16-row tile above reads it once per 16
/// rows, and x once per 16 columns: 8 times the weight's bytes through L2 at
/// M = 64, against 3 times here). 3 stages of 64 k fit 48 KB.
constexpr SmallBatchTile kMediumTile = {kMediumBatchLinearRows, 32, 64, 3,
                                        kMediumBatchLinearBlockSize / llmserve::kWarpSize};

/// The f16/bf16 kernels for M <= 64 (decode steps): the 64x64 tiles above
/// give a 2048-wide projection 32 blocks, too few to stream W from every SM.
/// Here a block computes one `SmallBatchTile` over one split of K, each warp
/// m16n8 mmas. Within a split, x and W stream through shared memory by
/// cp.async (16-byte copies, zero-filled outside the matrices), stages - 1
/// steps of loads in flight while the warps compute on the last. The
/// splits of a tile are one cluster (grid z, `nvvm.cluster_dim`): each block
/// leaves its sums in its shared memory and the cluster's first block adds
/// them in split order, reading the others' through distributed shared
/// memory, with no second launch and no global scratch. Row tiles go on grid
/// x, so the blocks that read the same W columns for different rows run side
/// by side and share it through L2.
class SmallBatchLinear : TensorCoreLinear {
public:
  SmallBatchLinear(GpuKernelEmitter &e, const LinearPart &part, KSplit split,
                   const SmallBatchTile &tile)
      : TensorCoreLinear(e, part, split), tile(tile) {
    assert(tile.warps * llmserve::kWarpSize == e.blockSize() && "one warp per tile part");
    assert(kStepK % tile.stepK == 0 && "a split is whole stages");
  }

  Rings rings() {
    return {inputRing(tile.stages, tile.tileM, tile.stepK),
            weightRing(tile.stages, tile.tileN, tile.stepK)};
  }
  int64_t tileColumns() const { return tile.tileN; }
  std::string rowTiles() { return ceilDivExpr(e.dimExpr(bindings.x, 0), tile.tileM); }

  /// The block's tile: rows from block x, W's rows from `columnTile`, K's
  /// split from block z.
  void buildTile(Value columnTile, const Rings &rings) {
    int64_t warpsM = tile.tileM / kMmaM, warpsN = tile.warps / warpsM;
    int64_t warpTileN = tile.tileN / warpsN, tilesN = warpTileN / kMmaN;
    Value x = e.binding(bindings.x), w = weight();
    Value m = e.dimSize(bindings.x, 0);
    Value xs = rings.x, ws = rings.w;
    Value m0 = a.muli(e.blockId(0), e.index(tile.tileM));
    Value n0 = a.muli(columnTile, e.index(tile.tileN));
    Value lane = e.laneId(), warp = e.warpId();
    Value group = a.divui(lane, e.index(4)), pairInGroup = a.remui(lane, e.index(4));
    Value warpRow = a.muli(a.divui(warp, e.index(warpsN)), e.index(kMmaM));
    Value warpCol = a.muli(a.remui(warp, e.index(warpsN)), e.index(warpTileN));

    // This block's split: stages [first, first + count) of K.
    int64_t stagesPerSplit = split.steps * (kStepK / tile.stepK);
    int64_t totalStages = groupedStages(tile.stepK);
    Value first = a.muli(e.blockId(2), e.index(stagesPerSplit));
    Value count = a.mini(e.index(stagesPerSplit), a.subi(e.index(totalStages), first));
    auto kOf = [&](Value stage) {
      return a.muli(a.addi(first, stage), e.index(tile.stepK));
    };
    auto copyX = [&](Value stage, Value slot) {
      copyAsync(x, xs, slot, m0, m, kOf(stage), depth, tile.tileM, tile.stepK);
    };
    auto copyW = [&](Value stage, Value slot) {
      copyWeight(w, ws, slot, n0, kOf(stage), tile.tileN, tile.stepK, /*async=*/true);
    };
    // The first stages' weights do not depend on earlier kernels: their
    // copies start before the wait, x's after it (commit group s holds x's
    // stage s; group 0 also every early W copy).
    int64_t early = std::min(tile.stages - 1, stagesPerSplit);
    for (int64_t s = 0; s < early; ++s)
      e.ifThen(a.cmpi(arith::CmpIPredicate::ult, e.index(s), count),
               [&] { copyW(e.index(s), e.index(s)); });
    e.waitForPrerequisites();
    for (int64_t s = 0; s < tile.stages - 1; ++s) {
      if (s < early)
        e.ifThen(a.cmpi(arith::CmpIPredicate::ult, e.index(s), count),
                 [&] { copyX(e.index(s), e.index(s)); });
      NVVM::CpAsyncCommitGroupOp::create(b);
    }
    SmallVector<Value> init(tilesN * 4, e.f32(0));
    Value row0 = a.addi(m0, warpRow), col0 = a.addi(n0, warpCol);
    SmallVector<Value> acc = stageLoop(
        count, first, tile.stepK, init, row0, col0, 1, tilesN,
        [&](Value stage, ArrayRef<Value> sums, ArrayRef<Value> zeros) -> SmallVector<Value> {
          // This stage's group is complete once at most stages - 2 newer
          // ones are pending; the barrier makes every thread's copies
          // visible and frees the slot the last iteration read.
          NVVM::CpAsyncWaitGroupOp::create(b, tile.stages - 2);
          e.barrier();
          Value next = a.addi(stage, e.index(tile.stages - 1));
          e.ifThen(a.cmpi(arith::CmpIPredicate::ult, next, count), [&] {
            Value slot = a.remui(next, e.index(tile.stages));
            copyX(next, slot);
            copyW(next, slot);
          });
          NVVM::CpAsyncCommitGroupOp::create(b);
          Value slot = a.remui(stage, e.index(tile.stages));
          SmallVector<Value> c(sums);
          Value r = a.addi(warpRow, group), r8 = a.addi(r, e.index(8));
          for (int64_t kw = 0; kw < tile.stepK / columnsPerWord(); kw += kMmaWords) {
            Value word = a.addi(pairInGroup, e.index(kw));
            Value wordHigh = a.addi(word, e.index(4));
            SmallVector<Value> fa = {wordAt(xs, slot, r, word), wordAt(xs, slot, r8, word),
                                     wordAt(xs, slot, r, wordHigh),
                                     wordAt(xs, slot, r8, wordHigh)};
            for (int64_t j = 0; j < tilesN; ++j) {
              Value row = a.addi(a.addi(warpCol, e.index(j * kMmaN)), group);
              SmallVector<Value> fb = weightFragment(ws, slot, row, word, zeros[j]);
              SmallVector<Value> d = mma(b, element, fa, fb, ArrayRef(c).slice(j * 4, 4));
              std::copy(d.begin(), d.end(), c.begin() + j * 4);
            }
          }
          return c;
        });
    NVVM::CpAsyncWaitGroupOp::create(b, 0);

    finishSplits(acc, xs, row0, col0, 1, tilesN, m);
  }

  const SmallBatchTile &tile;
};

/// One warp per output (f32 storage). Columns go on grid x, whose limit
/// (2^31 - 1 blocks) any vocabulary fits, rows on y (at most 65535 tokens).
/// An int8 W's values multiply x as they are, and the output's sum its
/// row's scale. An int4 W's nibbles minus the zero point, or an FP8 W's
/// decoded codes, do, each lane summing the 4 columns of a group it takes,
/// then adding them times the group's scale.
Grid warpDotLinear(GpuKernelEmitter &e, LinearOp op) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  LinearBindings bindings(op);
  WeightFormat format = weightFormat(op);
  Value x = e.binding(bindings.x), w = e.binding(bindings.w);
  Value scales = bindings.scales >= 0 ? e.binding(bindings.scales) : Value();
  Value zeros = bindings.zeros >= 0 ? e.binding(bindings.zeros) : Value();
  Value bias = bindings.bias >= 0 ? e.binding(bindings.bias) : Value();
  Value y = e.binding(bindings.y);
  auto weightType = cast<RankedTensorType>(op.getWeight().getType());
  int64_t n = weightType.getDimSize(0), depth = weightType.getDimSize(1);
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  Value row = e.blockId(1);
  Value col = a.addi(a.muli(e.blockId(0), e.index(e.numWarps())), e.warpId());
  e.ifThen(a.cmpi(arith::CmpIPredicate::ult, col, e.index(n)), [&] {
    auto xAt = [&](Value k) { return e.loadF32(x, {row, k}); };
    Value partial;
    if (scaledByGroup(format)) {
      // A lane's int4 columns all have its parity: their nibbles are at one
      // shift.
      Value shift = a.muli(arith::IndexCastUIOp::create(b, i32, a.remui(e.laneId(), e.index(2))),
                           arith::ConstantIntOp::create(b, i32, 4));
      Value mask = arith::ConstantIntOp::create(b, i32, 15);
      // FP8 scales are per block of 128 rows, and K may end within a group.
      Value scaleRow = format == WeightFormat::Fp8 ? a.divui(col, e.index(kFp8BlockSize)) : col;
      bool ragged = depth % kInt4GroupColumns != 0;
      partial = e.forLoop(
          e.index(0), e.index(llvm::divideCeilSigned(depth, kInt4GroupColumns)), 1, {e.f32(0)},
          [&](Value group, ValueRange acc) -> SmallVector<Value> {
            Value zero;
            if (format == WeightFormat::Int4)
              zero = zeros ? arith::ExtSIOp::create(b, i32, a.load(zeros, {col, group})).getResult()
                           : arith::ConstantIntOp::create(b, i32, 8).getResult();
            Value sum = e.f32(0);
            for (int64_t i = 0; i < kInt4GroupColumns / llmserve::kWarpSize; ++i) {
              Value k = a.addi(a.muli(group, e.index(kInt4GroupColumns)),
                               a.addi(e.laneId(), e.index(i * llmserve::kWarpSize)));
              Value inside = a.cmpi(arith::CmpIPredicate::ult, k, e.index(depth));
              if (ragged)
                k = a.mini(k, e.index(depth - 1));
              Value v;
              if (format == WeightFormat::Fp8) {
                v = decodeE4M3(b, a.load(w, {col, k}), Value());
              } else {
                Value byte =
                    arith::ExtUIOp::create(b, i32, a.load(w, {col, a.divui(k, e.index(2))}));
                Value nibble =
                    arith::AndIOp::create(b, arith::ShRUIOp::create(b, byte, shift), mask);
                v = arith::SIToFPOp::create(b, f32, a.subi(nibble, zero));
              }
              Value product = a.mul(xAt(k), v);
              if (ragged)
                product = a.select(inside, product, e.f32(0));
              sum = a.add(sum, product);
            }
            return {math::FmaOp::create(b, sum, a.load(scales, {scaleRow, group}), acc[0])};
          })[0];
    } else {
      auto weightAt = [&](Value k) -> Value {
        if (format == WeightFormat::Float)
          return e.loadF32(w, {col, k});
        return arith::SIToFPOp::create(b, f32, a.load(w, {col, k}));
      };
      partial = e.forLoop(e.laneId(), e.index(depth), llmserve::kWarpSize, {e.f32(0)},
                          [&](Value k, ValueRange acc) -> SmallVector<Value> {
                            return {a.add(acc[0], a.mul(xAt(k), weightAt(k)))};
                          })[0];
    }
    Value sum = e.warpReduce(partial, [&](Value p, Value q) { return a.add(p, q); });
    if (format == WeightFormat::Int8 && bias)
      sum = math::FmaOp::create(b, sum, a.load(scales, col), e.loadF32(bias, col));
    else if (format == WeightFormat::Int8)
      sum = a.mul(sum, a.load(scales, col));
    else if (bias)
      sum = a.add(sum, e.loadF32(bias, col));
    e.ifThen(a.cmpi(arith::CmpIPredicate::eq, e.laneId(), e.index(0)),
             [&] { e.storeF32(sum, y, {row, col}); });
  });
  return {std::to_string((n + e.numWarps() - 1) / e.numWarps()), e.dimExpr(bindings.x, 0), "1"};
}

/// Rows of W: the output columns a linear computes.
int64_t outputColumns(LinearOp op) {
  return cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0);
}

/// Whether a linear can run the kernels for decode-sized steps: f16/bf16 x
/// and W (or quantized W), whose rows both kernels copy 16 bytes at a time.
bool smallBatchKernelReads(LinearOp op) {
  auto weightType = cast<RankedTensorType>(op.getWeight().getType());
  return !op.getInput().getType().getElementType().isF32() &&
         !weightType.getElementType().isF32() && weightType.getDimSize(1) % kChunk == 0 &&
         weightRowBytes(op, weightType.getDimSize(1)) % 16 == 0;
}

/// Whether `parts` have the kernels for decode-sized steps: each can, and
/// their column tiles fit grid y (at most 65535 blocks).
bool smallBatchKernels(ArrayRef<LinearPart> parts) {
  int64_t tiles = 0;
  for (const LinearPart &part : parts)
    tiles += llvm::divideCeilSigned(outputColumns(part.op), kSmallTileN);
  return tiles <= 65535 &&
         llvm::all_of(parts, [](const LinearPart &part) { return smallBatchKernelReads(part.op); });
}

/// A `Kernel` (MmaLinear or SmallBatchLinear) for `parts`: block y indexes
/// their column tiles in order, and a block computes a tile of its part
/// through the stages every part shares. K is cut as for one weight of all
/// the parts' rows, a split per block z.
template <typename Kernel, typename... TileArgs>
Grid buildParts(GpuKernelEmitter &e, ArrayRef<LinearPart> parts, const TileArgs &...tile) {
  Arith &a = e.arith();
  int64_t rows = 0;
  for (const LinearPart &part : parts)
    rows += outputColumns(part.op);
  LinearOp leader = parts.front().op;
  auto weightType = cast<RankedTensorType>(leader.getWeight().getType());
  KSplit split(rows, weightType.getDimSize(1), smallBatchKernels(parts));
  Kernel first(e, parts.front(), split, tile...);
  Rings rings = first.rings();
  Value columnTile = e.blockId(1);
  int64_t begin = 0;
  for (const LinearPart &part : parts) {
    Kernel kernel(e, part, split, tile...);
    int64_t end = begin + llvm::divideCeilSigned(outputColumns(part.op), kernel.tileColumns());
    if (parts.size() == 1) {
      kernel.buildTile(columnTile, rings);
    } else {
      Value inside = a.cmpi(arith::CmpIPredicate::ult, columnTile, e.index(end));
      if (begin > 0)
        inside = a.andi(inside, a.cmpi(arith::CmpIPredicate::uge, columnTile, e.index(begin)));
      e.ifThen(inside, [&] {
        kernel.buildTile(begin > 0 ? a.subi(columnTile, e.index(begin)) : columnTile, rings);
      });
    }
    begin = end;
  }
  return {first.rowTiles(), std::to_string(begin), std::to_string(split.count)};
}

/// 1 when the step's M (rows of x) exceeds `rows`, else 0: the grids of a
/// linear's kernels multiply their M axis by products of these, so that
/// exactly one of them has blocks for any M.
std::string moreRowsThan(GpuKernelEmitter &e, int64_t rows) {
  return "min(max(" + e.dimExpr(0, 0) + "-" + std::to_string(rows) + ",0),1)";
}

} // namespace

bool mlir::llmserve::hasSmallBatchLinearKernel(Operation *op) {
  FailureOr<SmallVector<LinearPart>> parts = linearParts(op);
  return succeeded(parts) && smallBatchKernels(*parts);
}

Grid mlir::llmserve::buildSmallBatchLinearKernel(GpuKernelEmitter &e, Operation *op) {
  Grid grid = buildParts<SmallBatchLinear>(e, *linearParts(op), kSmallTile);
  grid[0] = grid[0] + "*(1-" + moreRowsThan(e, kSmallBatchLinearRows) + ")";
  return grid;
}

Grid mlir::llmserve::buildMediumBatchLinearKernel(GpuKernelEmitter &e, Operation *op) {
  Grid grid = buildParts<SmallBatchLinear>(e, *linearParts(op), kMediumTile);
  grid[0] = grid[0] + "*" + moreRowsThan(e, kSmallBatchLinearRows) + "*(1-" +
            moreRowsThan(e, kMediumBatchLinearRows) + ")";
  return grid;
}

FailureOr<Grid> mlir::llmserve::buildLinearKernel(GpuKernelEmitter &e, Operation *op) {
  FailureOr<SmallVector<LinearPart>> parts = linearParts(op);
  if (failed(parts))
    return failure();
  if (auto linear = dyn_cast<LinearOp>(op); linear && e.elementType(0).isF32())
    return warpDotLinear(e, linear);
  Grid grid = buildParts<MmaLinear>(e, *parts);
  if (smallBatchKernels(*parts))
    grid[0] = grid[0] + "*" + moreRowsThan(e, kMediumBatchLinearRows);
  return grid;
}
