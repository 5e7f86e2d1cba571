//===- Linear.cpp - linear on the CPU -------------------------------------===//
//
// A float weight in panels of 16 columns (usePanelLayout) gets a linalg
// contraction that the CPU schedule (cpu-kernels.mlir) tiles into outer
// products; any other weight, and an int8 one with its scales, a hand-built
// kernel of dot products. Both compute each output with the same arithmetic
// wherever its row is in the step (batch invariance).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::llmserve;

namespace {
// linear on a row-major weight: a workgroup computes a block of rows x
// columns in MR x NR tiles, each a dot product of VL-wide vectors along K.
constexpr int64_t kLinearColumnsPerGroup = 64;
constexpr int64_t kMicroRows = 4;
constexpr int64_t kMicroColumns = 4;
constexpr int64_t kSingleRowColumns = 8;

/// `fn` on every use of `value`, and inside a dispatch region on every use
/// of the block argument the region reads `value` through.
void forEachUse(Value value, function_ref<void(OpOperand &)> fn) {
  for (OpOperand &use : value.getUses()) {
    auto region = dyn_cast<DispatchRegionOp>(use.getOwner());
    if (!region) {
      fn(use);
      continue;
    }
    forEachUse(region.getBody().getArgument(use.getOperandNumber()), fn);
  }
}

} // namespace

bool mlir::llmserve::usePanelLayout(Value weight) {
  auto op = weight.getDefiningOp<WeightOp>();
  auto type = cast<RankedTensorType>(weight.getType());
  if (!op || op.getQuantization() || !type.getElementType().isF32() ||
      type.getDimSize(0) % LlmserveDialect::kPanelWidth != 0)
    return false;
  bool asLinearWeight = false, otherwise = false;
  forEachUse(weight, [&](OpOperand &use) {
    if (isa<LinearOp>(use.getOwner()) && use.getOperandNumber() == 1)
      asLinearWeight = true;
    else if (!isa<EmbeddingOp>(use.getOwner()) || use.getOperandNumber() != 0)
      otherwise = true;
  });
  if (!asLinearWeight || otherwise)
    return false;
  op->setAttr(LlmserveDialect::kLayoutAttrName,
              StringAttr::get(op->getContext(), LlmserveDialect::kPanelLayout));
  return true;
}

PanelBlock mlir::llmserve::panelBlock(CpuKernelEmitter &e, Value rows,
                                      int64_t panels) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  auto [mBegin, mEnd] = e.rowRange(rows, kLinearRowsPerGroup);
  Value pBegin = a.muli(e.workgroupId(1), e.index(kPanelsPerGroup));
  Value pEnd = arith::MinSIOp::create(
      b, a.addi(pBegin, e.index(kPanelsPerGroup)), e.index(panels));
  return {mBegin, pBegin, a.subi(mEnd, mBegin), a.subi(pEnd, pBegin)};
}

Value mlir::llmserve::panelView(CpuKernelEmitter &e, int binding,
                                int64_t panels, const PanelBlock &block) {
  ImplicitLocOpBuilder &b = e.builder();
  Value view = e.binding(
      binding, {e.dimSize(binding, 0), e.index(panels), e.index(kVectorWidth)});
  OpFoldResult zero = b.getIndexAttr(0);
  return e.subview(view, {block.mBegin, block.pBegin, zero},
                   {block.mSize, block.pSize, b.getIndexAttr(kVectorWidth)});
}

Value mlir::llmserve::contractPanels(CpuKernelEmitter &e, int xBinding,
                                     int wBinding,
                                     std::optional<int> biasBinding,
                                     int64_t panels, int64_t depth,
                                     const PanelBlock &block,
                                     function_ref<Value()> destination) {
  ImplicitLocOpBuilder &b = e.builder();
  Value x = e.binding(xBinding);
  Value w = e.binding(wBinding,
                      {e.index(panels), e.index(depth), e.index(kVectorWidth)});
  OpFoldResult zero = b.getIndexAttr(0);
  OpFoldResult depthSize = b.getIndexAttr(depth),
               laneSize = b.getIndexAttr(kVectorWidth);
  Value xBlock =
      e.tensorOf(e.subview(x, {block.mBegin, zero}, {block.mSize, depthSize}),
                 /*writable=*/false);
  Value wBlock = e.tensorOf(e.subview(w, {block.pBegin, zero, zero},
                                      {block.pSize, depthSize, laneSize}),
                            /*writable=*/false);
  Value y = destination();
  Value init;
  if (biasBinding) {
    Value bias =
        e.binding(*biasBinding, {e.index(panels), e.index(kVectorWidth)});
    Value biasBlock = e.tensorOf(
        e.subview(bias, {block.pBegin, zero}, {block.pSize, laneSize}),
        /*writable=*/false);
    init = linalg::BroadcastOp::create(b, biasBlock, y,
                                       /*dimensions=*/ArrayRef<int64_t>{0})
               .getResult()[0];
  } else {
    init = linalg::FillOp::create(b, ValueRange{e.f32(0)}, ValueRange{y})
               .getResult(0);
  }
  MLIRContext *ctx = b.getContext();
  AffineExpr m, p, l, k;
  bindDims(ctx, m, p, l, k);
  return linalg::GenericOp::create(
             b, init.getType(), ValueRange{xBlock, wBlock}, init,
             SmallVector<AffineMap>{AffineMap::get(4, 0, {m, k}, ctx),
                                    AffineMap::get(4, 0, {p, k, l}, ctx),
                                    AffineMap::get(4, 0, {m, p, l}, ctx)},
             {utils::IteratorType::parallel, utils::IteratorType::parallel,
              utils::IteratorType::parallel, utils::IteratorType::reduction},
             [](OpBuilder &nested, Location loc, ValueRange args) {
               Value product =
                   arith::MulFOp::create(nested, loc, args[0], args[1]);
               linalg::YieldOp::create(nested, loc,
                                       ValueRange{arith::AddFOp::create(
                                           nested, loc, args[2], product)});
             })
      .getResult(0);
}

Grid mlir::llmserve::panelGrid(CpuKernelEmitter &e, int rowsBinding,
                               int64_t panels) {
  Grid grid = e.rowGrid(rowsBinding, kLinearRowsPerGroup);
  grid[1] = std::to_string((panels + kPanelsPerGroup - 1) / kPanelsPerGroup);
  return grid;
}

namespace {

/// The binding of each of `o`'s operands: its position.
int operandBinding(LinearOp o, Value operand) {
  for (OpOperand &use : o->getOpOperands())
    if (use.get() == operand)
      return use.getOperandNumber();
  llvm_unreachable("not an operand of the linear");
}

Grid linearPanels(CpuKernelEmitter &e, LinearOp o) {
  auto weightType = cast<RankedTensorType>(o.getWeight().getType());
  int64_t panels = weightType.getDimSize(0) / kVectorWidth;
  bool hasBias = bool(o.getBias());
  int output = hasBias ? 3 : 2;
  PanelBlock block = panelBlock(e, e.dimSize(0, 0), panels);
  Value yView;
  Value y =
      contractPanels(e, 0, 1, hasBias ? std::optional<int>(2) : std::nullopt,
                     panels, weightType.getDimSize(1), block, [&] {
                       yView = panelView(e, output, panels, block);
                       return e.tensorOf(yView, /*writable=*/true);
                     });
  e.storeInto(y, yView);
  return panelGrid(e, 0, panels);
}

/// x·Wᵀ (+ b) for a W in the checkpoint's row-major layout (a function
/// argument, a weight also read otherwise, or N not a multiple of 16), or
/// (x·Qᵀ) * s (+ b) for int8 values Q and their per-row scales s: MR x NR
/// tiles of dotTile (1 x 8 for a single row, which decode steps are), and
/// the row and column edges with MR or NR of 1.
Grid linearDot(CpuKernelEmitter &e, LinearOp o) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value x = e.binding(0), w = e.binding(1);
  Value scales =
      o.getScales() ? e.binding(operandBinding(o, o.getScales())) : Value();
  Value bias =
      o.getBias() ? e.binding(operandBinding(o, o.getBias())) : Value();
  Value y = e.binding(o->getNumOperands());
  auto weightType = cast<RankedTensorType>(o.getWeight().getType());
  int64_t n = weightType.getDimSize(0);
  auto [mBegin, mEnd] = e.rowRange(e.dimSize(0, 0), kLinearRowsPerGroup);
  Value nBegin = a.muli(e.workgroupId(1), e.index(kLinearColumnsPerGroup));
  Value nEnd = arith::MinSIOp::create(
      b, a.addi(nBegin, e.index(kLinearColumnsPerGroup)), e.index(n));
  auto indices = [&](Value first, int64_t count) {
    SmallVector<Value> values;
    for (int64_t i = 0; i < count; ++i)
      values.push_back(a.addi(first, e.index(i)));
    return values;
  };
  forEachTile(e, mBegin, mEnd, kMicroRows, [&](Value m0, int64_t mr) {
    forEachTile(e, nBegin, nEnd, mr == 1 ? kSingleRowColumns : kMicroColumns,
                [&](Value n0, int64_t nr) {
      SmallVector<Value> rows = indices(m0, mr), cols = indices(n0, nr);
      SmallVector<Value> sums = dotTile(e, x, rows, w, cols);
      for (int64_t i = 0; i < mr; ++i)
        for (int64_t j = 0; j < nr; ++j) {
          Value sum = sums[i * nr + j];
          if (scales)
            sum = a.mul(sum, a.load(scales, cols[j]));
          if (bias)
            sum = a.add(sum, a.load(bias, cols[j]));
          a.store(sum, y, {rows[i], cols[j]});
        }
    });
  });
  Grid grid = e.rowGrid(0, kLinearRowsPerGroup);
  grid[1] =
      std::to_string((n + kLinearColumnsPerGroup - 1) / kLinearColumnsPerGroup);
  return grid;
}

} // namespace

void mlir::llmserve::storeTile(CpuKernelEmitter &e, ValueRange acc, Value m0,
                               int64_t mr, ArrayRef<Value> cols, Value y,
                               Value scales, Value bias) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  int64_t nr = cols.size();
  for (int64_t i = 0; i < mr; ++i) {
    Value row = a.addi(m0, e.index(i));
    for (int64_t j = 0; j < nr; ++j) {
      Value sum = vector::ReductionOp::create(b, vector::CombiningKind::ADD,
                                              acc[i * nr + j],
                                              arith::FastMathFlags::reassoc);
      if (scales)
        sum = a.mul(sum, a.load(scales, cols[j]));
      if (bias)
        sum = a.add(sum, a.load(bias, cols[j]));
      a.store(sum, y, {row, cols[j]});
    }
  }
}

void mlir::llmserve::forEachTile(
    CpuKernelEmitter &e, Value begin, Value end, int64_t size,
    const std::function<void(Value, int64_t)> &body) {
  Arith &a = e.arith();
  Value full = a.addi(
      begin, a.muli(a.divui(a.subi(end, begin), e.index(size)), e.index(size)));
  e.forLoop(begin, full, size, [&](Value i) { body(i, size); });
  e.forLoop(full, end, 1, [&](Value i) { body(i, 1); });
}

SmallVector<Value> mlir::llmserve::dotTile(CpuKernelEmitter &e, Value x,
                                           ArrayRef<Value> rows, Value w,
                                           ArrayRef<Value> cols) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  auto weightType = cast<MemRefType>(w.getType());
  Type weightElement = weightType.getElementType();
  int64_t depth = weightType.getDimSize(1);
  // An integer or narrow float weight is converted to f32 as it is read.
  auto asF32 = [&](Value weight) -> Value {
    if (weightElement.isF32())
      return weight;
    Type f32 = b.getF32Type();
    if (auto vector = dyn_cast<VectorType>(weight.getType()))
      f32 = vector.clone(f32);
    if (isa<FloatType>(weightElement))
      return arith::ExtFOp::create(b, f32, weight);
    return arith::SIToFPOp::create(b, f32, weight);
  };
  auto vectorType = VectorType::get({kVectorWidth}, b.getF32Type());
  int64_t vectorDepth = depth - depth % kVectorWidth;
  int64_t mr = rows.size(), nr = cols.size();
  Value zeros = arith::ConstantOp::create(
      b, vectorType, DenseElementsAttr::get(vectorType, 0.0f));
  SmallVector<Value> acc = e.forLoop(
      e.index(0), e.index(vectorDepth), kVectorWidth,
      SmallVector<Value>(mr * nr, zeros),
      [&](Value k, ValueRange acc) -> SmallVector<Value> {
        SmallVector<Value> xs, ws, next;
        for (Value r : rows)
          xs.push_back(vector::LoadOp::create(b, vectorType, x, {r, k}));
        for (Value c : cols)
          ws.push_back(asF32(vector::LoadOp::create(
              b, vectorType.clone(weightElement), w, {c, k})));
        for (int64_t i = 0; i < mr; ++i)
          for (int64_t j = 0; j < nr; ++j)
            next.push_back(
                vector::FMAOp::create(b, xs[i], ws[j], acc[i * nr + j]));
        return next;
      });
  SmallVector<Value> sums;
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t j = 0; j < nr; ++j) {
      Value sum = vector::ReductionOp::create(b, vector::CombiningKind::ADD,
                                              acc[i * nr + j],
                                              arith::FastMathFlags::reassoc);
      // The K % VL tail, in order, after the vector part.
      sums.push_back(
          e.forLoop(e.index(vectorDepth), e.index(depth), 1, {sum},
                    [&](Value k, ValueRange s) -> SmallVector<Value> {
                      return {math::FmaOp::create(b, a.load(x, {rows[i], k}),
                                                  asF32(a.load(w, {cols[j], k})),
                                                  s[0])};
                    })[0]);
    }
  }
  return sums;
}

FailureOr<Grid> mlir::llmserve::buildLinearKernel(CpuKernelEmitter &e,
                                                  LinearOp o,
                                                  CpuInstructions instructions) {
  bool int4 =
      cast<RankedTensorType>(o.getWeight().getType()).getElementType().isInteger(4);
  if (useVnniLinear(o))
    return buildLinearVnniKernel(e, o, instructions);
  if (instructions.bf16 && useBf16Linear(o))
    return buildLinearBf16Kernel(e, o);
  if (int4)
    return o.emitOpError("has int4 weights, whose one CPU kernel needs a weight "
                         "op, N a multiple of 8 and K of 128"),
           failure();
  return usePanelLayout(o.getWeight()) ? linearPanels(e, o) : linearDot(e, o);
}
