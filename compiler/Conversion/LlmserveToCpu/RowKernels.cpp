//===- RowKernels.cpp - CPU kernels that gather, rotate and write rows ----===//
//
// embedding, gather_rows, rope and kv_write: a workgroup takes kRowsPerGroup
// rows, each by scalar loops. They index through the step's arrays (token
// ids, positions, slot mapping), which linalg's indexing maps cannot express
// without gathers.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::llmserve;

/// embedding and gather_rows: out[i] = source[indices[i]] (times an
/// embedding's scale). Indices outside
/// the source (which the runtime rejects for token ids) give zeros rather
/// than an out-of-bounds read. An embedding table that is also a linear's
/// weight (tied word embeddings) may be stored in panels: row r is then
/// element r % 16 of panel r / 16, at every k.
Grid mlir::llmserve::buildGatherKernel(CpuKernelEmitter &e, Operation *op) {
  Arith &a = e.arith();
  Value table = op->getOperand(0);
  bool panels = isa<EmbeddingOp>(op) && usePanelLayout(table);
  Value numRows = e.dimSize(0, 0), width = e.dimSize(0, 1);
  Value lanes = e.index(kVectorWidth);
  // A weight has a static shape.
  int64_t tableRows = cast<RankedTensorType>(table.getType()).getDimSize(0);
  Value source =
      panels ? e.binding(0, {e.index(tableRows / kVectorWidth), width, lanes})
             : e.binding(0);
  Value indices = e.binding(1), out = e.binding(2);
  std::optional<APFloat> scale;
  if (auto embedding = dyn_cast<EmbeddingOp>(op))
    scale = embedding.getScale();
  auto [begin, end] = e.rowRange(e.dimSize(1, 0), kRowsPerGroup);
  e.forLoop(begin, end, 1, [&](Value i) {
    Value index = a.toIndex(a.load(indices, i));
    Value valid = a.cmpi(arith::CmpIPredicate::ult, index, numRows);
    Value row = a.select(valid, index, e.index(0));
    Value zero = e.f32(0);
    e.forLoop(e.index(0), width, 1, [&](Value d) {
      Value element =
          panels ? a.load(source, {a.divui(row, lanes), d, a.remui(row, lanes)})
                 : a.load(source, {row, d});
      if (scale)
        element = a.mul(element, e.f32(scale->convertToDouble()));
      a.store(a.select(valid, element, zero), out, {i, d});
    });
  });
  return e.rowGrid(1, kRowsPerGroup);
}

Grid mlir::llmserve::buildRopeKernel(CpuKernelEmitter &e, RopeOp o) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  int64_t headDim = o.getHeadDim(), rotary = o.getRotaryDim();
  int64_t half = rotary / 2;
  auto inputType = cast<RankedTensorType>(o.getInput().getType());
  int64_t heads = inputType.getDimSize(1) / headDim;
  Value table = ropeFrequencyTable(b, o, e.function());
  // The result follows the operands (longrope's has two more).
  Value x = e.binding(0), positions = e.binding(1),
        y = e.binding(e.numBindings() - 1);
  bool neox = o.getStyle() == RopeStyle::neox;
  Value zero = e.index(0);
  auto [begin, end] = e.rowRange(e.dimSize(0, 0), kRowsPerGroup);
  e.forLoop(begin, end, 1, [&](Value t) {
    Value pos = a.toF32(a.toIndex(a.load(positions, t)));
    // longrope: the table's long-factor half for a long sequence's token.
    Value offset = ropeFrequencyOffset(e, o, t);
    // The angle depends on the token and the pair, not the head: one sin
    // and cos per pair, applied to every head.
    e.forLoop(zero, e.index(half), 1, [&](Value i) {
      Value angle = a.mul(pos, a.load(table, offset ? a.addi(offset, i) : i));
      Value c = math::CosOp::create(b, angle);
      Value s = math::SinOp::create(b, angle);
      if (std::optional<APFloat> factor = o.getAttentionFactor()) {
        Value scale = e.f32(factor->convertToDouble());
        c = a.mul(c, scale);
        s = a.mul(s, scale);
      }
      e.forLoop(zero, e.index(heads), 1, [&](Value h) {
        Value base = a.muli(h, e.index(headDim));
        // NeoX pairs element i with i + rotary/2; GPT-J pairs 2i with 2i+1.
        Value first =
            neox ? a.addi(base, i) : a.addi(base, a.muli(i, e.index(2)));
        Value second = a.addi(first, e.index(neox ? half : 1));
        Value x1 = a.load(x, {t, first}), x2 = a.load(x, {t, second});
        a.store(a.sub(a.mul(x1, c), a.mul(x2, s)), y, {t, first});
        a.store(a.add(a.mul(x2, c), a.mul(x1, s)), y, {t, second});
      });
    });
    e.forLoop(zero, e.index(heads), 1, [&](Value h) {
      Value base = a.muli(h, e.index(headDim));
      e.forLoop(e.index(rotary), e.index(headDim), 1, [&](Value d) {
        Value col = a.addi(base, d);
        a.store(a.load(x, {t, col}), y, {t, col});
      });
    });
  });
  return e.rowGrid(0, kRowsPerGroup);
}

Grid mlir::llmserve::buildKvWriteKernel(CpuKernelEmitter &e, KvWriteOp o) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value input = e.binding(0), cache = e.cacheSlots(1), slots = e.binding(2);
  std::optional<ArrayRef<float>> scales = o.getScale();
  Value kvHeads = e.dimSize(1, 2), headDim = e.dimSize(1, 3);
  Value numSlots = memref::DimOp::create(b, cache, 0);
  Value zero = e.index(0);
  auto [begin, end] = e.rowRange(e.dimSize(0, 0), kRowsPerGroup);
  e.forLoop(begin, end, 1, [&](Value t) {
    Value slot = a.toIndex(a.load(slots, t));
    // Negative (padding) or out-of-pool slots write nothing.
    e.ifThen(a.cmpi(arith::CmpIPredicate::ult, slot, numSlots), [&] {
      e.forLoop(zero, kvHeads, 1, [&](Value h) {
        Value scale = scales ? kvCacheScale(b, *scales, h) : nullptr;
        Value base = a.muli(h, headDim);
        e.forLoop(zero, headDim, 1, [&](Value d) {
          Value col = a.addi(base, d);
          Value x = a.load(input, {t, col});
          if (scales)
            x = encodeE4M3(b, x, scale);
          a.store(x, cache, {slot, col});
        });
      });
    });
  });
  return e.rowGrid(0, kRowsPerGroup);
}
