//===- LlmserveToCpu.cpp - Outline llmserve ops into CPU kernels ----------===//
//
// Every compute op (or dispatch region) of an entry function becomes one
// dispatch: a kernel in the nested `kernels` module, written against the
// bundle ABI (bindings, push constants, workgroup id), and an
// `llmserve.dispatch` attribute on the op that names the kernel and its grid. The entry function itself stays at the
// tensor level: it is the host program the bundle writer serialises.
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
#include "compiler/Conversion/Common/KernelMath.h"
#include "compiler/Conversion/Common/KernelModule.h"
#include "compiler/Conversion/LlmserveToCpu/CpuKernelEmitter.h"
#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace mlir::llmserve {
#define GEN_PASS_DEF_LLMSERVETOCPUKERNELS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::llmserve

using namespace mlir;
using namespace mlir::llmserve;

namespace {

constexpr int64_t kRowsPerGroup = 4;
// linear: a workgroup computes a block of rows x columns in MR x NR tiles,
// each a dot product of VL-wide vectors along K. 64 rows: a decode step of up
// to 64 sequences reads each weight block once.
constexpr int64_t kLinearRowsPerGroup = 64;
constexpr int64_t kLinearColumnsPerGroup = 64;
constexpr int64_t kMicroRows = 4;
constexpr int64_t kMicroColumns = 4;
constexpr int64_t kVectorWidth = 16;
// linear on packed weights: panels of 16 columns per workgroup (96 columns:
// two of the 3-panel register tiles cpu-kernels.mlir makes).
constexpr int64_t kPanelsPerGroup = 6;
constexpr int64_t kElementsPerGroup = 4096;
// Halvings of the logit range when searching a top_k / top_p threshold.
constexpr int64_t kBisectionSteps = 32;

class CpuKernelBuilder {
public:
  CpuKernelBuilder(ModuleOp kernels, Operation *op, StringRef symbol)
      : op(op),
        emitter(kernels, symbol, op->getLoc(), dispatchBindingTypes(op)),
        a(emitter.builder()) {}

  FailureOr<Grid> build() {
    for (Type type : op->getOperandTypes())
      if (auto element = cast<RankedTensorType>(type).getElementType();
          isa<FloatType>(element) && !element.isF32()) {
        emitter.function().erase();
        return op->emitOpError("CPU kernels compute in f32; got ") << type,
               failure();
      }
    FailureOr<Grid> grid =
        llvm::TypeSwitch<Operation *, FailureOr<Grid>>(op)
            .Case<EmbeddingOp, GatherRowsOp>([&](auto) { return gather(); })
            .Case([&](RmsNormOp o) { return rmsNorm(o); })
            .Case([&](LayerNormOp o) { return layerNorm(o); })
            .Case([&](LinearOp o) { return linear(o); })
            .Case([&](RopeOp o) { return rope(o); })
            .Case([&](KvWriteOp o) { return kvWrite(o); })
            .Case([&](PagedAttentionOp o) { return pagedAttention(o); })
            .Case([&](linalg::GenericOp g) { return elementwiseGeneric(g); })
            .Case([&](DispatchRegionOp r) { return linearEpilogue(r); })
            .Case<SiluMulOp, GeluOp>([&](auto) {
              return op->emitOpError("has no CPU kernel of its own: "
                                     "llmserve-to-linalg makes it a "
                                     "linalg.generic first"),
                     failure();
            })
            .Case([&](ApplyPenaltiesOp o) { return applyPenalties(o); })
            .Case([&](LogprobsOp o) { return logprobs(o); })
            .Case([&](SampleOp o) { return sample(o); })
            .Default([&](Operation *) {
              return op->emitOpError("has no CPU kernel"), failure();
            });
    if (failed(grid)) {
      emitter.function().erase();
      return failure();
    }
    emitter.finish();
    return grid;
  }

private:
  ImplicitLocOpBuilder &b() { return emitter.builder(); }

  /// A grid of row blocks over size `dim` of binding `binding`.
  Grid rowGrid(int binding, int64_t rowsPerGroup, std::string y = "1") {
    return {ceilDivExpr(emitter.dimExpr(binding, 0), rowsPerGroup), y, "1"};
  }

  /// A slice of a bound buffer as a tensor for the kernel's linalg ops; a
  /// writable one is the destination they write in place once bufferized.
  Value tensorOf(Value slice, bool writable) {
    auto type = cast<MemRefType>(slice.getType());
    return bufferization::ToTensorOp::create(
        b(), RankedTensorType::get(type.getShape(), type.getElementType()),
        slice, /*restrict=*/true, writable);
  }

  /// Writes `result`, computed into tensorOf(slice, true), to `slice`: no
  /// copy once bufferized in place.
  void storeInto(Value result, Value slice) {
    auto store =
        bufferization::MaterializeInDestinationOp::create(b(), result, slice);
    store.setRestrict(true);
    store.setWritable(true);
  }

  /// A subview of `memref` with unit strides.
  Value subview(Value memref, ArrayRef<OpFoldResult> offsets,
                ArrayRef<OpFoldResult> sizes) {
    return memref::SubViewOp::create(
        b(), memref, offsets, sizes,
        SmallVector<OpFoldResult>(offsets.size(), b().getIndexAttr(1)));
  }

  /// An elementwise linalg.generic (llmserve-to-linalg): each workgroup
  /// takes kElementsPerGroup elements of the flattened bindings as tensors
  /// and applies the generic's body to them. One-shot bufferization writes
  /// the result in place into the output binding, and the CPU schedule
  /// (cpu-kernels.mlir) tiles and vectorizes the generic.
  FailureOr<Grid> elementwiseGeneric(linalg::GenericOp g) {
    if (!isElementwise(g))
      return g.emitOpError("has no CPU kernel (only elementwise generics "
                           "with identity maps do)"),
             failure();
    int64_t numBindings = g.getNumDpsInputs() + 1;
    auto [begin, end] =
        emitter.rowRange(emitter.numElements(0), kElementsPerGroup);
    OpFoldResult offset = begin, size = a.subi(end, begin);
    SmallVector<Value> slices;
    for (int64_t i = 0; i < numBindings; ++i)
      slices.push_back(subview(emitter.binding(i, {emitter.numElements(i)}),
                               {offset}, {size}));
    SmallVector<Value> inputs;
    for (int64_t i = 0; i + 1 < numBindings; ++i)
      inputs.push_back(tensorOf(slices[i], /*writable=*/false));
    Value init = tensorOf(slices.back(), /*writable=*/true);
    auto kernelGeneric = linalg::GenericOp::create(
        b(), init.getType(), inputs, init,
        SmallVector<AffineMap>(numBindings, b().getMultiDimIdentityMap(1)),
        {utils::IteratorType::parallel});
    IRMapping mapping;
    g.getRegion().cloneInto(&kernelGeneric.getRegion(), mapping);
    storeInto(kernelGeneric.getResult(0), slices.back());

    return Grid{ceilDivExpr(emitter.numElementsExpr(0), kElementsPerGroup), "1",
                "1"};
  }

  /// embedding and gather_rows: out[i] = source[indices[i]]. Indices outside
  /// the source (which the runtime rejects for token ids) give zeros rather
  /// than an out-of-bounds read. An embedding table that is also a linear's
  /// weight (tied word embeddings) may be stored in panels: row r is then
  /// element r % 16 of panel r / 16, at every k.
  FailureOr<Grid> gather() {
    Value table = op->getOperand(0);
    bool panels = isa<EmbeddingOp>(op) && usePanelLayout(table);
    Value numRows = emitter.dimSize(0, 0), width = emitter.dimSize(0, 1);
    Value lanes = emitter.index(kVectorWidth);
    // A weight has a static shape.
    int64_t tableRows = cast<RankedTensorType>(table.getType()).getDimSize(0);
    Value source =
        panels ? emitter.binding(0, {emitter.index(tableRows / kVectorWidth),
                                     width, lanes})
               : emitter.binding(0);
    Value indices = emitter.binding(1), out = emitter.binding(2);
    auto [begin, end] = emitter.rowRange(emitter.dimSize(1, 0), kRowsPerGroup);
    emitter.forLoop(begin, end, 1, [&](Value i) {
      Value index = a.toIndex(a.load(indices, i));
      Value valid = a.cmpi(arith::CmpIPredicate::ult, index, numRows);
      Value row = a.select(valid, index, emitter.index(0));
      Value zero = emitter.f32(0);
      emitter.forLoop(emitter.index(0), width, 1, [&](Value d) {
        Value element =
            panels ? a.load(source, {a.divui(row, lanes), d, a.remui(row, lanes)})
                   : a.load(source, {row, d});
        a.store(a.select(valid, element, zero), out, {i, d});
      });
    });
    return rowGrid(1, kRowsPerGroup);
  }

  /// rms_norm and layer_norm as linalg on tensor views of the workgroup's
  /// rows ([rows, D]): s = input (+ residual, which is stored to
  /// residual_out); per row the sum of s² (layer_norm: the sum of s, then of
  /// (s - mean)²) into a stack buffer; rsqrt(sum / D + epsilon) in place;
  /// then (s - mean) · rsqrt · weight (+ bias) into the result. The CPU
  /// schedule (cpu-kernels.mlir) walks each row in 16-wide vectors, so a
  /// row's sums depend on D alone, not on the rows beside it.
  Grid norm(bool hasResidual, bool hasBias, bool centered, double epsilon) {
    int next = 0;
    int input = next++, weight = next++;
    std::optional<int> bias = hasBias ? std::optional<int>(next++) : std::nullopt;
    std::optional<int> residual = hasResidual ? std::optional<int>(next++) : std::nullopt;
    int result = next++;
    std::optional<int> residualOut =
        hasResidual ? std::optional<int>(next++) : std::nullopt;
    // A weight has a static shape.
    int64_t width = cast<RankedTensorType>(op->getOperand(weight).getType()).getDimSize(0);
    auto [first, end] = emitter.rowRange(emitter.dimSize(0, 0), kRowsPerGroup);
    // A plain variable: the lambdas below capture it (C++17 lambdas cannot
    // capture structured bindings).
    Value begin = first;
    OpFoldResult rows = a.subi(end, begin);
    auto rowsView = [&](int binding) {
      return subview(emitter.binding(binding), {begin, b().getIndexAttr(0)},
                     {rows, b().getIndexAttr(width)});
    };
    MLIRContext *ctx = b().getContext();
    AffineExpr t, d;
    bindDims(ctx, t, d);
    AffineMap element = AffineMap::get(2, 0, {t, d}, ctx),
              perRow = AffineMap::get(2, 0, {t}, ctx),
              perColumn = AffineMap::get(2, 0, {d}, ctx);
    auto parallel = utils::IteratorType::parallel;
    auto reduction = utils::IteratorType::reduction;
    // A generic's body, built with the generic's own builder.
    using Body = function_ref<Value(Arith &, ValueRange)>;
    auto yielding = [](Body body) {
      return [body](OpBuilder &nested, Location loc, ValueRange args) {
        ImplicitLocOpBuilder builder(loc, nested);
        Arith arith(builder);
        linalg::YieldOp::create(builder, body(arith, args));
      };
    };
    // A [rows, D] generic of `inputs` (each with its map) into `init`.
    auto rowGeneric = [&](ArrayRef<std::pair<Value, AffineMap>> inputs, Value init,
                          AffineMap initMap, utils::IteratorType columns, Body body) {
      SmallVector<Value> values;
      SmallVector<AffineMap> maps;
      for (auto [value, map] : inputs) {
        values.push_back(value);
        maps.push_back(map);
      }
      maps.push_back(initMap);
      return linalg::GenericOp::create(b(), init.getType(), values, init, maps,
                                       SmallVector<utils::IteratorType>{parallel, columns},
                                       yielding(body))
          .getResult(0);
    };
    // Per row, the sum of `term(args)` over the row, into a stack buffer.
    auto rowSum = [&](ArrayRef<std::pair<Value, AffineMap>> inputs, Body term) {
      auto type = MemRefType::get({kRowsPerGroup}, b().getF32Type());
      Value buffer = subview(memref::AllocaOp::create(b(), type), {b().getIndexAttr(0)},
                             {rows});
      Value zeros = linalg::FillOp::create(b(), ValueRange{emitter.f32(0)},
                                           ValueRange{tensorOf(buffer, /*writable=*/true)})
                        .getResult(0);
      return rowGeneric(inputs, zeros, perRow, reduction, [&](Arith &x, ValueRange args) {
        return x.add(args.back(), term(x, args.drop_back()));
      });
    };

    Value s = tensorOf(rowsView(input), /*writable=*/false);
    if (residual) {
      Value outView = rowsView(*residualOut);
      s = rowGeneric({{s, element},
                      {tensorOf(rowsView(*residual), /*writable=*/false), element}},
                     tensorOf(outView, /*writable=*/true), element, parallel,
                     [](Arith &x, ValueRange args) { return x.add(args[0], args[1]); });
      storeInto(s, outView);
    }
    Value widthF = emitter.f32(static_cast<double>(width)), epsilonF = emitter.f32(epsilon);
    Value sums, meanSource;
    if (centered) {
      meanSource = rowSum({{s, element}}, [](Arith &, ValueRange args) { return args[0]; });
      sums = rowSum({{s, element}, {meanSource, perRow}}, [&](Arith &x, ValueRange args) {
        Value c = x.sub(args[0], x.div(args[1], widthF));
        return x.mul(c, c);
      });
    } else {
      sums = rowSum({{s, element}},
                    [](Arith &x, ValueRange args) { return x.mul(args[0], args[0]); });
    }
    // rsqrt(sum / D + epsilon) per row, in place (a rank-1 elementwise generic).
    Value inv = linalg::GenericOp::create(
                    b(), sums.getType(), ValueRange{}, sums,
                    SmallVector<AffineMap>{b().getMultiDimIdentityMap(1)},
                    SmallVector<utils::IteratorType>{parallel},
                    yielding([&](Arith &x, ValueRange args) -> Value {
                      Value variance = x.div(args[0], widthF);
                      return math::RsqrtOp::create(x.b, x.add(variance, epsilonF));
                    }))
                    .getResult(0);

    SmallVector<std::pair<Value, AffineMap>> inputs = {
        {s, element},
        {inv, perRow},
        {tensorOf(emitter.binding(weight), /*writable=*/false), perColumn}};
    if (centered)
      inputs.push_back({meanSource, perRow});
    if (bias)
      inputs.push_back({tensorOf(emitter.binding(*bias), /*writable=*/false), perColumn});
    Value resultView = rowsView(result);
    Value y = rowGeneric(inputs, tensorOf(resultView, /*writable=*/true), element, parallel,
                         [&](Arith &x, ValueRange args) {
                           Value v = args[0];
                           if (centered)
                             v = x.sub(v, x.div(args[3], widthF));
                           Value scaled = x.mul(x.mul(v, args[1]), args[2]);
                           // The bias is the last input (args end with the init).
                           return bias ? x.add(scaled, args[inputs.size() - 1]) : scaled;
                         });
    storeInto(y, resultView);
    return rowGrid(0, kRowsPerGroup);
  }

  FailureOr<Grid> rmsNorm(RmsNormOp o) {
    return norm(bool(o.getResidual()), /*hasBias=*/false, /*centered=*/false,
                o.getEpsilon().convertToDouble());
  }

  FailureOr<Grid> layerNorm(LayerNormOp o) {
    return norm(bool(o.getResidual()), /*hasBias=*/true, /*centered=*/true,
                o.getEpsilon().convertToDouble());
  }

  /// Whether `weight` is stored in the panel layout the linalg linear kernel
  /// reads (and if so marks it, so the bundle writer asks the runtime to pack
  /// it at load): a weight with a whole number of 16-row panels, read as the
  /// weight of a linear op (also inside a dispatch region) and otherwise only
  /// as linear weights or embedding tables.
  static bool usePanelLayout(Value weight) {
    auto op = weight.getDefiningOp<WeightOp>();
    if (!op ||
        cast<RankedTensorType>(weight.getType()).getDimSize(0) % kVectorWidth != 0)
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
    op->setAttr(
        LlmserveDialect::kLayoutAttrName,
        StringAttr::get(op->getContext(), LlmserveDialect::kPanelLayout));
    return true;
  }

  /// `fn` on every use of `value`, and inside a dispatch region on every use
  /// of the block argument the region reads `value` through.
  static void forEachUse(Value value, function_ref<void(OpOperand &)> fn) {
    for (OpOperand &use : value.getUses()) {
      auto region = dyn_cast<DispatchRegionOp>(use.getOwner());
      if (!region) {
        fn(use);
        continue;
      }
      forEachUse(region.getBody().getArgument(use.getOperandNumber()), fn);
    }
  }

  FailureOr<Grid> linear(LinearOp o) {
    return usePanelLayout(o.getWeight()) ? linearPanels(o) : linearDot(o);
  }

  /// The outputs of a panel linear one workgroup computes: rows
  /// [mBegin, mBegin + mSize) and panels [pBegin, pBegin + pSize).
  struct PanelBlock {
    Value mBegin, pBegin;
    OpFoldResult mSize, pSize;
  };

  PanelBlock panelBlock(Value rows, int64_t panels) {
    auto [mBegin, mEnd] = emitter.rowRange(rows, kLinearRowsPerGroup);
    Value pBegin =
        a.muli(emitter.workgroupId(1), emitter.index(kPanelsPerGroup));
    Value pEnd = arith::MinSIOp::create(
        b(), a.addi(pBegin, emitter.index(kPanelsPerGroup)),
        emitter.index(panels));
    return {mBegin, pBegin, a.subi(mEnd, mBegin), a.subi(pEnd, pBegin)};
  }

  /// The block's [rows][panels][16] slice of binding `binding`, an [M, N]
  /// tensor viewed as [M][N/16][16].
  Value panelView(int binding, int64_t panels, const PanelBlock &block) {
    Value view = emitter.binding(binding, {emitter.dimSize(binding, 0),
                                           emitter.index(panels),
                                           emitter.index(kVectorWidth)});
    OpFoldResult zero = b().getIndexAttr(0);
    return subview(view, {block.mBegin, block.pBegin, zero},
                   {block.mSize, block.pSize, b().getIndexAttr(kVectorWidth)});
  }

  /// x·Wᵀ (+ b) for the block, W in panels of 16 columns ([N/16][K][16]), as
  /// linalg on tensor views: the [rows][panels][16] tensor `destination()`
  /// makes is initialised with zeros or the bias, then the contraction
  /// y[m, p, l] += x[m, k] * w[p, k, l] accumulates into it. The CPU schedule
  /// (cpu-kernels.mlir) turns this into register tiles of outer products.
  Value contractPanels(int xBinding, int wBinding, std::optional<int> biasBinding,
                       int64_t panels, int64_t depth, const PanelBlock &block,
                       function_ref<Value()> destination) {
    Value x = emitter.binding(xBinding);
    Value w = emitter.binding(wBinding, {emitter.index(panels), emitter.index(depth),
                                         emitter.index(kVectorWidth)});
    OpFoldResult zero = b().getIndexAttr(0);
    OpFoldResult depthSize = b().getIndexAttr(depth),
                 laneSize = b().getIndexAttr(kVectorWidth);
    Value xBlock = tensorOf(subview(x, {block.mBegin, zero}, {block.mSize, depthSize}),
                            /*writable=*/false);
    Value wBlock = tensorOf(subview(w, {block.pBegin, zero, zero},
                                    {block.pSize, depthSize, laneSize}),
                            /*writable=*/false);
    Value y = destination();
    Value init;
    if (biasBinding) {
      Value bias = emitter.binding(
          *biasBinding, {emitter.index(panels), emitter.index(kVectorWidth)});
      Value biasBlock = tensorOf(subview(bias, {block.pBegin, zero}, {block.pSize, laneSize}),
                                 /*writable=*/false);
      init = linalg::BroadcastOp::create(b(), biasBlock, y,
                                         /*dimensions=*/ArrayRef<int64_t>{0})
                 .getResult()[0];
    } else {
      init = linalg::FillOp::create(b(), ValueRange{emitter.f32(0)},
                                    ValueRange{y})
                 .getResult(0);
    }
    MLIRContext *ctx = b().getContext();
    AffineExpr m, p, l, k;
    bindDims(ctx, m, p, l, k);
    return linalg::GenericOp::create(
               b(), init.getType(), ValueRange{xBlock, wBlock}, init,
               SmallVector<AffineMap>{AffineMap::get(4, 0, {m, k}, ctx),
                                      AffineMap::get(4, 0, {p, k, l}, ctx),
                                      AffineMap::get(4, 0, {m, p, l}, ctx)},
               {utils::IteratorType::parallel, utils::IteratorType::parallel,
                utils::IteratorType::parallel, utils::IteratorType::reduction},
               [](OpBuilder &nested, Location loc, ValueRange args) {
                 Value product = arith::MulFOp::create(nested, loc, args[0], args[1]);
                 linalg::YieldOp::create(
                     nested, loc,
                     ValueRange{arith::AddFOp::create(nested, loc, args[2], product)});
               })
        .getResult(0);
  }

  Grid panelGrid(int rowsBinding, int64_t panels) {
    Grid grid = rowGrid(rowsBinding, kLinearRowsPerGroup);
    grid[1] = std::to_string((panels + kPanelsPerGroup - 1) / kPanelsPerGroup);
    return grid;
  }

  FailureOr<Grid> linearPanels(LinearOp o) {
    auto weightType = cast<RankedTensorType>(o.getWeight().getType());
    int64_t panels = weightType.getDimSize(0) / kVectorWidth;
    bool hasBias = bool(o.getBias());
    int output = hasBias ? 3 : 2;
    PanelBlock block = panelBlock(emitter.dimSize(0, 0), panels);
    Value yView;
    Value y = contractPanels(0, 1, hasBias ? std::optional<int>(2) : std::nullopt,
                             panels, weightType.getDimSize(1), block, [&] {
                               yView = panelView(output, panels, block);
                               return tensorOf(yView, /*writable=*/true);
                             });
    storeInto(y, yView);
    return panelGrid(0, panels);
  }

  /// A dispatch region (llmserve-form-dispatch-regions) of panel linears that
  /// read one input and an elementwise generic over their results: per
  /// workgroup block, each linear's contraction (the last one into the
  /// output's slice, the others into a block-sized buffer on the stack),
  /// then the generic's body on the block, in place. Bindings are the
  /// region's inputs, then its result.
  FailureOr<Grid> linearEpilogue(DispatchRegionOp region) {
    Block &body = region.getBody().front();
    SmallVector<LinearOp> linears;
    linalg::GenericOp epilogue;
    for (Operation &op : body.without_terminator()) {
      if (auto linear = dyn_cast<LinearOp>(op); linear && !epilogue) {
        linears.push_back(linear);
        continue;
      }
      if (auto generic = dyn_cast<linalg::GenericOp>(op); generic && !epilogue) {
        epilogue = generic;
        continue;
      }
      return region.emitOpError("has no CPU kernel: expected linears then one "
                                "elementwise linalg.generic, got ")
                 << op.getName(),
             failure();
    }
    auto yield = cast<YieldOp>(body.getTerminator());
    auto argumentNumber = [&](Value v) -> std::optional<int> {
      auto argument = dyn_cast<BlockArgument>(v);
      return argument ? std::optional<int>(argument.getArgNumber()) : std::nullopt;
    };
    if (linears.empty() || !epilogue || !isElementwise(epilogue) ||
        epilogue.getNumLoops() != 2 || yield.getNumOperands() != 1 ||
        yield.getOperand(0) != epilogue.getResult(0) ||
        epilogue.payloadUsesValueFromOperand(epilogue.getDpsInitOperand(0)))
      return region.emitOpError("has no CPU kernel: expected linears then one "
                                "2-D elementwise linalg.generic, which does not "
                                "read its init, yielding its result"),
             failure();
    std::optional<int> xBinding = argumentNumber(linears.front().getInput());
    for (LinearOp linear : linears)
      if (!xBinding || argumentNumber(linear.getInput()) != xBinding ||
          !argumentNumber(linear.getWeight()) ||
          (linear.getBias() && !argumentNumber(linear.getBias())) ||
          !usePanelLayout(region.getInputs()[*argumentNumber(linear.getWeight())]) ||
          linear.getWeight().getType() != linears.front().getWeight().getType())
        return linear.emitOpError("cannot be fused on the CPU: the linears of a "
                                  "dispatch region read one input of the "
                                  "region and weights of one shape in panels"),
               failure();

    auto weightType = cast<RankedTensorType>(linears.front().getWeight().getType());
    int64_t panels = weightType.getDimSize(0) / kVectorWidth;
    int output = region.getInputs().size();
    PanelBlock block = panelBlock(emitter.dimSize(*xBinding, 0), panels);
    Value yView;
    DenseMap<Value, Value> blockOf;
    for (LinearOp linear : linears) {
      auto destination = [&]() -> Value {
        if (linear == linears.back()) {
          yView = panelView(output, panels, block);
          return tensorOf(yView, /*writable=*/true);
        }
        // A whole workgroup block: 64 x 6 x 16 floats, 24 KiB.
        auto type = MemRefType::get(
            {kLinearRowsPerGroup, kPanelsPerGroup, kVectorWidth}, b().getF32Type());
        OpFoldResult zero = b().getIndexAttr(0);
        return tensorOf(subview(memref::AllocaOp::create(b(), type), {zero, zero, zero},
                                {block.mSize, block.pSize, b().getIndexAttr(kVectorWidth)}),
                        /*writable=*/true);
      };
      std::optional<int> bias =
          linear.getBias() ? argumentNumber(linear.getBias()) : std::nullopt;
      blockOf[linear.getResult()] =
          contractPanels(*xBinding, *argumentNumber(linear.getWeight()), bias, panels,
                         weightType.getDimSize(1), block, destination);
    }
    // The epilogue reads the linears' blocks and the region's other inputs
    // (the body holds no other op).
    SmallVector<Value> inputs;
    for (Value input : epilogue.getDpsInputs()) {
      Value computed = blockOf.lookup(input);
      inputs.push_back(computed ? computed
                                : tensorOf(panelView(*argumentNumber(input), panels, block),
                                           /*writable=*/false));
    }
    Value init = blockOf.lookup(linears.back().getResult());
    auto kernelGeneric = linalg::GenericOp::create(
        b(), init.getType(), inputs, init,
        SmallVector<AffineMap>(inputs.size() + 1, b().getMultiDimIdentityMap(3)),
        SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel));
    IRMapping mapping;
    epilogue.getRegion().cloneInto(&kernelGeneric.getRegion(), mapping);
    storeInto(kernelGeneric.getResult(0), yView);
    return panelGrid(*xBinding, panels);
  }

  /// Full `size`-wide tiles of [begin, end), then the rest one at a time.
  void tiles(Value begin, Value end, int64_t size,
             const std::function<void(Value, int64_t)> &body) {
    Value full = a.addi(
        begin, a.muli(a.divui(a.subi(end, begin), emitter.index(size)),
                      emitter.index(size)));
    emitter.forLoop(begin, full, size, [&](Value i) { body(i, size); });
    emitter.forLoop(full, end, 1, [&](Value i) { body(i, 1); });
  }

  /// x·Wᵀ (+ b) for a W in the checkpoint's row-major layout (a function
  /// argument, a weight also read otherwise, or N not a multiple of 16): an
  /// MR x NR tile of outputs keeps one vector accumulator per output, fed by
  /// VL-wide loads of MR rows of x and NR rows of W along K, and reduces each
  /// accumulator at the end. Edge tiles use the same per-output arithmetic
  /// with MR or NR of 1, so a row's result does not depend on the rows beside
  /// it.
  FailureOr<Grid> linearDot(LinearOp o) {
    bool hasBias = bool(o.getBias());
    Value x = emitter.binding(0), w = emitter.binding(1);
    Value bias = hasBias ? emitter.binding(2) : Value();
    Value y = emitter.binding(hasBias ? 3 : 2);
    auto weightType = cast<RankedTensorType>(o.getWeight().getType());
    int64_t n = weightType.getDimSize(0), depth = weightType.getDimSize(1);
    auto [mBegin, mEnd] =
        emitter.rowRange(emitter.dimSize(0, 0), kLinearRowsPerGroup);
    Value nBegin = a.muli(emitter.workgroupId(1),
                          emitter.index(kLinearColumnsPerGroup));
    Value nEnd = arith::MinSIOp::create(
        b(), a.addi(nBegin, emitter.index(kLinearColumnsPerGroup)),
        emitter.index(n));

    auto vectorType = VectorType::get({kVectorWidth}, b().getF32Type());
    int64_t vectorDepth = depth - depth % kVectorWidth;
    auto microkernel = [&](Value m0, int64_t mr, Value n0, int64_t nr) {
      SmallVector<Value> rows, cols;
      for (int64_t i = 0; i < mr; ++i)
        rows.push_back(a.addi(m0, emitter.index(i)));
      for (int64_t j = 0; j < nr; ++j)
        cols.push_back(a.addi(n0, emitter.index(j)));
      Value zeros = arith::ConstantOp::create(
          b(), vectorType, DenseElementsAttr::get(vectorType, 0.0f));
      SmallVector<Value> acc = emitter.forLoop(
          emitter.index(0), emitter.index(vectorDepth), kVectorWidth,
          SmallVector<Value>(mr * nr, zeros),
          [&](Value k, ValueRange acc) -> SmallVector<Value> {
            SmallVector<Value> xs, ws, next;
            for (Value r : rows)
              xs.push_back(vector::LoadOp::create(b(), vectorType, x, {r, k}));
            for (Value c : cols)
              ws.push_back(vector::LoadOp::create(b(), vectorType, w, {c, k}));
            for (int64_t i = 0; i < mr; ++i)
              for (int64_t j = 0; j < nr; ++j)
                next.push_back(
                    vector::FMAOp::create(b(), xs[i], ws[j], acc[i * nr + j]));
            return next;
          });
      for (int64_t i = 0; i < mr; ++i) {
        for (int64_t j = 0; j < nr; ++j) {
          Value sum = vector::ReductionOp::create(
              b(), vector::CombiningKind::ADD, acc[i * nr + j],
              arith::FastMathFlags::reassoc);
          // The K % VL tail, in order, after the vector part.
          sum = emitter.forLoop(
              emitter.index(vectorDepth), emitter.index(depth), 1, {sum},
              [&](Value k, ValueRange s) -> SmallVector<Value> {
                return {math::FmaOp::create(b(), a.load(x, {rows[i], k}),
                                            a.load(w, {cols[j], k}), s[0])};
              })[0];
          if (hasBias)
            sum = a.add(sum, a.load(bias, cols[j]));
          a.store(sum, y, {rows[i], cols[j]});
        }
      }
    };
    // Full MR x NR tiles, then the row and column edges one at a time.
    tiles(mBegin, mEnd, kMicroRows, [&](Value m0, int64_t mr) {
      tiles(nBegin, nEnd, kMicroColumns,
            [&](Value n0, int64_t nr) { microkernel(m0, mr, n0, nr); });
    });
    Grid grid = rowGrid(0, kLinearRowsPerGroup);
    grid[1] = std::to_string((n + kLinearColumnsPerGroup - 1) /
                             kLinearColumnsPerGroup);
    return grid;
  }

  FailureOr<Grid> rope(RopeOp o) {
    SmallVector<float> inv = ropeInverseFrequencies(o);
    int64_t half = inv.size();
    int64_t headDim = o.getHeadDim(), rotary = o.getRotaryDim();
    auto inputType = cast<RankedTensorType>(o.getInput().getType());
    int64_t heads = inputType.getDimSize(1) / headDim;

    // The frequency table is a constant global next to the kernel.
    auto tableType = MemRefType::get({half}, b().getF32Type());
    std::string tableName =
        (emitter.function().getSymName() + "_inv_freq").str();
    {
      OpBuilder::InsertionGuard guard(b());
      b().setInsertionPoint(emitter.function());
      auto values = DenseElementsAttr::get(
          RankedTensorType::get({half}, b().getF32Type()), ArrayRef(inv));
      memref::GlobalOp::create(b(), b().getStringAttr(tableName),
                               b().getStringAttr("private"),
                               TypeAttr::get(tableType), values,
                               b().getUnitAttr(), IntegerAttr());
    }
    Value table = memref::GetGlobalOp::create(b(), tableType, tableName);
    Value x = emitter.binding(0), positions = emitter.binding(1),
          y = emitter.binding(2);
    bool neox = o.getStyle() == RopeStyle::neox;
    Value zero = emitter.index(0);
    auto [begin, end] = emitter.rowRange(emitter.dimSize(0, 0), kRowsPerGroup);
    emitter.forLoop(begin, end, 1, [&](Value t) {
      Value pos = a.toF32(a.toIndex(a.load(positions, t)));
      // The angle depends on the token and the pair, not the head: one sin
      // and cos per pair, applied to every head.
      emitter.forLoop(zero, emitter.index(half), 1, [&](Value i) {
        Value angle = a.mul(pos, a.load(table, i));
        Value c = math::CosOp::create(b(), angle);
        Value s = math::SinOp::create(b(), angle);
        emitter.forLoop(zero, emitter.index(heads), 1, [&](Value h) {
          Value base = a.muli(h, emitter.index(headDim));
          // NeoX pairs element i with i + rotary/2; GPT-J pairs 2i with 2i+1.
          Value first = neox ? a.addi(base, i)
                             : a.addi(base, a.muli(i, emitter.index(2)));
          Value second = a.addi(first, emitter.index(neox ? half : 1));
          Value x1 = a.load(x, {t, first}), x2 = a.load(x, {t, second});
          a.store(a.sub(a.mul(x1, c), a.mul(x2, s)), y, {t, first});
          a.store(a.add(a.mul(x2, c), a.mul(x1, s)), y, {t, second});
        });
      });
      emitter.forLoop(zero, emitter.index(heads), 1, [&](Value h) {
        Value base = a.muli(h, emitter.index(headDim));
        emitter.forLoop(emitter.index(rotary), emitter.index(headDim), 1,
                        [&](Value d) {
                          Value col = a.addi(base, d);
                          a.store(a.load(x, {t, col}), y, {t, col});
                        });
      });
    });
    return rowGrid(0, kRowsPerGroup);
  }

  FailureOr<Grid> kvWrite(KvWriteOp) {
    Value input = emitter.binding(0), cache = emitter.cacheSlots(1),
          slots = emitter.binding(2);
    Value numSlots = memref::DimOp::create(b(), cache, 0);
    Value width = emitter.dimSize(0, 1);
    auto [begin, end] = emitter.rowRange(emitter.dimSize(0, 0), kRowsPerGroup);
    emitter.forLoop(begin, end, 1, [&](Value t) {
      Value slot = a.toIndex(a.load(slots, t));
      // Negative (padding) or out-of-pool slots write nothing.
      emitter.ifThen(a.cmpi(arith::CmpIPredicate::ult, slot, numSlots), [&] {
        emitter.forLoop(emitter.index(0), width, 1, [&](Value d) {
          a.store(a.load(input, {t, d}), cache, {slot, d});
        });
      });
    });
    return rowGrid(0, kRowsPerGroup);
  }

  FailureOr<Grid> pagedAttention(PagedAttentionOp o) {
    auto cacheType = cast<RankedTensorType>(o.getKeyCache().getType());
    int64_t blockSize = cacheType.getDimSize(1);
    int64_t kvHeads = cacheType.getDimSize(2), headDim = cacheType.getDimSize(3);
    int64_t heads = o.getNumHeads();
    int64_t group = heads / kvHeads;
    std::optional<uint64_t> window = o.getSlidingWindow();
    float scale = o.getScale().convertToFloat();

    Value q = emitter.binding(0), keys = emitter.cacheSlots(1),
          values = emitter.cacheSlots(2), blockTable = emitter.binding(3),
          contextLen = emitter.binding(4), queryStart = emitter.binding(5),
          out = emitter.binding(6), lse = emitter.binding(7);
    Value numSeqs = emitter.dimSize(4, 0);
    Value zero = emitter.index(0), one = emitter.index(1);
    Value dim = emitter.index(headDim);

    // One workgroup per (query row, head).
    Value row = emitter.workgroupId(0), head = emitter.workgroupId(1);
    emitter.ifThen(a.cmpi(arith::CmpIPredicate::ult, row,
                          emitter.dimSize(0, 0)),
                   [&] {
      // The sequence owning the row: the last s with query_start[s] <= row.
      Value seq = emitter.forLoop(
          zero, numSeqs, 1, {zero},
          [&](Value s, ValueRange found) -> SmallVector<Value> {
            Value start = a.toIndex(a.load(queryStart, s));
            return {a.select(a.cmpi(arith::CmpIPredicate::ule, start, row), s,
                             found[0])};
          })[0];
      Value qBegin = a.toIndex(a.load(queryStart, seq));
      Value qEnd = a.toIndex(a.load(queryStart, a.addi(seq, one)));
      Value context = a.toIndex(a.load(contextLen, seq));
      // Causal: the row's own position is the last key it sees.
      Value position =
          a.addi(a.subi(context, a.subi(qEnd, qBegin)), a.subi(row, qBegin));
      Value first = zero;
      if (window) {
        Value w = emitter.index(static_cast<int64_t>(*window) - 1);
        first = a.select(a.cmpi(arith::CmpIPredicate::ugt, position, w),
                         a.subi(position, w), zero);
      }
      Value kvHead = a.divui(head, emitter.index(group));
      Value qBase = a.muli(head, dim), kvBase = a.muli(kvHead, dim);

      // head_dim as `chunks` vectors of `width` lanes.
      int64_t width = headDim % kVectorWidth == 0 ? kVectorWidth
                      : headDim % 8 == 0          ? 8
                      : headDim % 4 == 0          ? 4
                                                  : 1;
      int64_t chunks = headDim / width;
      auto vectorType = VectorType::get({width}, b().getF32Type());
      auto loadVector = [&](Value memref, Value row, Value column) -> Value {
        return vector::LoadOp::create(b(), vectorType, memref,
                                      ValueRange{row, column});
      };
      auto chunkColumn = [&](Value base, int64_t c) {
        return a.addi(base, emitter.index(c * width));
      };
      SmallVector<Value> query;
      for (int64_t c = 0; c < chunks; ++c)
        query.push_back(loadVector(q, row, chunkColumn(qBase, c)));

      // Online softmax over the keys in tiles of one KV block: the scores of
      // a tile first (each a fixed-order vector dot product; -inf for the
      // tile's keys outside the row's range), their exponentials as one
      // vector, one rescale of the running sums if the tile's maximum is
      // larger, then the weighted values in key order. Tiles follow the key
      // positions, never the batch.
      Value bs = emitter.index(blockSize);
      Value last = a.addi(position, one);
      Value firstTile = a.muli(a.divui(first, bs), bs);
      auto scoresType = MemRefType::get({blockSize}, b().getF32Type());
      auto tileType = VectorType::get({blockSize}, b().getF32Type());
      Value scores = memref::AllocaOp::create(b(), scoresType);
      Value weights = memref::AllocaOp::create(b(), scoresType);
      Value noScores = arith::ConstantOp::create(
          b(), tileType, DenseElementsAttr::get(tileType, -INFINITY));
      SmallVector<Value> init = {emitter.f32(-INFINITY), emitter.f32(0)};
      Value zeros = arith::ConstantOp::create(
          b(), vectorType, DenseElementsAttr::get(vectorType, 0.0f));
      init.append(chunks, zeros);
      SmallVector<Value> state = emitter.forLoop(
          firstTile, last, blockSize, init,
          [&](Value tile, ValueRange s) -> SmallVector<Value> {
            Value block = a.toIndex(a.load(blockTable, {seq, a.divui(tile, bs)}));
            Value slot0 = a.subi(a.muli(block, bs), tile); // slot of key j: slot0 + j
            Value lo = a.maxi(first, tile);
            Value hi = a.mini(last, a.addi(tile, bs));
            vector::StoreOp::create(b(), noScores, scores, ValueRange{zero});
            Value tileMax = emitter.forLoop(
                lo, hi, 1, {emitter.f32(-INFINITY)},
                [&](Value j, ValueRange m) -> SmallVector<Value> {
                  Value slot = a.addi(slot0, j);
                  Value products = zeros;
                  for (int64_t c = 0; c < chunks; ++c)
                    products = vector::FMAOp::create(
                        b(), query[c], loadVector(keys, slot, chunkColumn(kvBase, c)),
                        products);
                  Value dot = vector::ReductionOp::create(
                      b(), vector::CombiningKind::ADD, products,
                      arith::FastMathFlags::reassoc);
                  Value score = a.mul(dot, emitter.f32(scale));
                  a.store(score, scores, a.subi(j, tile));
                  return {a.max(m[0], score)};
                })[0];
            Value maxNew = a.max(s[0], tileMax);
            // The running sums rescale only when the maximum grows.
            Value alpha = emitter.ifElse(
                a.cmpf(arith::CmpFPredicate::OGT, maxNew, s[0]), b().getF32Type(),
                [&] { return a.exp(a.sub(s[0], maxNew)); },
                [&] { return emitter.f32(1); });
            Value tileScores =
                vector::LoadOp::create(b(), tileType, scores, ValueRange{zero});
            Value tileWeights = a.exp(
                a.sub(tileScores, vector::BroadcastOp::create(b(), tileType, maxNew)));
            vector::StoreOp::create(b(), tileWeights, weights, ValueRange{zero});
            Value tileSum = vector::ReductionOp::create(
                b(), vector::CombiningKind::ADD, tileWeights,
                arith::FastMathFlags::reassoc);
            Value alphas = vector::BroadcastOp::create(b(), vectorType, alpha);
            SmallVector<Value> rescaled;
            for (int64_t c = 0; c < chunks; ++c)
              rescaled.push_back(a.mul(s[2 + c], alphas));
            SmallVector<Value> sums = emitter.forLoop(
                lo, hi, 1, rescaled,
                [&](Value j, ValueRange acc) -> SmallVector<Value> {
                  Value weight = vector::BroadcastOp::create(
                      b(), vectorType, a.load(weights, a.subi(j, tile)));
                  Value slot = a.addi(slot0, j);
                  SmallVector<Value> next;
                  for (int64_t c = 0; c < chunks; ++c)
                    next.push_back(vector::FMAOp::create(
                        b(), weight,
                        loadVector(values, slot, chunkColumn(kvBase, c)),
                        acc[c]));
                  return next;
                });
            SmallVector<Value> result = {maxNew, a.add(a.mul(s[1], alpha), tileSum)};
            result.append(sums.begin(), sums.end());
            return result;
          });
      Value sum = vector::BroadcastOp::create(b(), vectorType, state[1]);
      for (int64_t c = 0; c < chunks; ++c)
        vector::StoreOp::create(b(), a.div(state[2 + c], sum), out,
                                ValueRange{row, chunkColumn(qBase, c)});
      a.store(a.add(state[0], math::LogOp::create(b(), state[1])), lse,
              {row, head});
    });
    return Grid{emitter.dimExpr(0, 0), std::to_string(heads), "1"};
  }

  FailureOr<Grid> applyPenalties(ApplyPenaltiesOp) {
    Value logits = emitter.binding(0), start = emitter.binding(1),
          tokens = emitter.binding(2), counts = emitter.binding(3),
          presence = emitter.binding(4), frequency = emitter.binding(5),
          repetition = emitter.binding(6), out = emitter.binding(7);
    Value vocab = emitter.dimSize(0, 1), entries = emitter.dimSize(2, 0);
    Value zero = emitter.index(0), fzero = emitter.f32(0);
    auto [begin, end] = emitter.rowRange(emitter.dimSize(0, 0), kRowsPerGroup);
    emitter.forLoop(begin, end, 1, [&](Value s) {
      emitter.forLoop(zero, vocab, 1, [&](Value v) {
        a.store(a.load(logits, {s, v}), out, {s, v});
      });
      Value rep = a.load(repetition, s), freq = a.load(frequency, s),
            pres = a.load(presence, s);
      // The row's entries, clamped to the arrays so that a malformed
      // penalty_start cannot read out of bounds.
      auto clamp = [&](Value i) {
        Value x = a.toIndex(i);
        x = arith::MaxSIOp::create(b(), x, zero);
        return arith::MinSIOp::create(b(), x, entries).getResult();
      };
      Value first = clamp(a.load(start, s));
      Value last = arith::MaxSIOp::create(
          b(), first, clamp(a.load(start, a.addi(s, emitter.index(1)))));
      emitter.forLoop(first, last, 1, [&](Value e) {
        Value token = a.toIndex(a.load(tokens, e));
        Value inVocab = arith::AndIOp::create(
            b(), a.cmpi(arith::CmpIPredicate::sge, token, zero),
            a.cmpi(arith::CmpIPredicate::slt, token, vocab));
        emitter.ifThen(inVocab, [&] {
          Value l = a.load(out, {s, token});
          Value positive = arith::CmpFOp::create(
              b(), arith::CmpFPredicate::OGT, l, fzero);
          l = a.select(positive, a.div(l, rep), a.mul(l, rep));
          Value count = a.load(counts, e);
          Value seen = a.cmpi(arith::CmpIPredicate::sgt, count, emitter.i32(0));
          Value countF = arith::SIToFPOp::create(b(), b().getF32Type(), count);
          l = a.sub(l, a.mul(freq, countF));
          l = a.sub(l, a.select(seen, pres, fzero));
          a.store(l, out, {s, token});
        });
      });
    });
    return rowGrid(0, kRowsPerGroup);
  }

  FailureOr<Grid> logprobs(LogprobsOp o) {
    Value logits = emitter.binding(0), tokens = emitter.binding(1),
          num = emitter.binding(2), tokenLogprob = emitter.binding(3),
          topTokens = emitter.binding(4), topLogprobs = emitter.binding(5);
    int64_t maxTop = o.getTopTokens().getType().getDimSize(1);
    Value vocab = emitter.dimSize(0, 1);
    Value zero = emitter.index(0);
    Value negInf = emitter.f32(-INFINITY);
    auto cmpf = [&](arith::CmpFPredicate p, Value x, Value y) {
      return arith::CmpFOp::create(b(), p, x, y).getResult();
    };
    auto [begin, end] = emitter.rowRange(emitter.dimSize(0, 0), kRowsPerGroup);
    emitter.forLoop(begin, end, 1, [&](Value s) {
      Value n = a.toIndex(a.load(num, s));
      emitter.ifThen(a.cmpi(arith::CmpIPredicate::sge, n, zero), [&] {
        Value max = emitter.forLoop(
            zero, vocab, 1, {negInf},
            [&](Value v, ValueRange m) -> SmallVector<Value> {
              return {a.max(m[0], a.load(logits, {s, v}))};
            })[0];
        Value sum = emitter.forLoop(
            zero, vocab, 1, {emitter.f32(0)},
            [&](Value v, ValueRange acc) -> SmallVector<Value> {
              return {a.add(acc[0], a.exp(a.sub(a.load(logits, {s, v}), max)))};
            })[0];
        Value logZ = a.add(max, math::LogOp::create(b(), sum));
        Value token = a.toIndex(a.load(tokens, s));
        Value valid = arith::AndIOp::create(
            b(), a.cmpi(arith::CmpIPredicate::sge, token, zero),
            a.cmpi(arith::CmpIPredicate::slt, token, vocab));
        a.store(emitter.ifElse(
                    valid, b().getF32Type(),
                    [&] { return a.sub(a.load(logits, {s, token}), logZ); },
                    [&] { return negInf; }),
                tokenLogprob, s);
        // Selection of the n largest, each the next in (logit descending,
        // index ascending) order after the previous one.
        Value top = arith::MinSIOp::create(b(), n, emitter.index(maxTop));
        emitter.forLoop(
            zero, top, 1, {emitter.f32(INFINITY), emitter.index(-1)},
            [&](Value j, ValueRange prev) -> SmallVector<Value> {
              SmallVector<Value> best = emitter.forLoop(
                  zero, vocab, 1, {negInf, emitter.index(-1)},
                  [&](Value v, ValueRange acc) -> SmallVector<Value> {
                    Value l = a.load(logits, {s, v});
                    Value after = arith::OrIOp::create(
                        b(), cmpf(arith::CmpFPredicate::OLT, l, prev[0]),
                        arith::AndIOp::create(
                            b(), cmpf(arith::CmpFPredicate::OEQ, l, prev[0]),
                            a.cmpi(arith::CmpIPredicate::sgt, v, prev[1])));
                    Value better = arith::AndIOp::create(
                        b(), after,
                        arith::OrIOp::create(
                            b(), cmpf(arith::CmpFPredicate::OGT, l, acc[0]),
                            a.cmpi(arith::CmpIPredicate::slt, acc[1], zero)));
                    return {a.select(better, l, acc[0]),
                            a.select(better, v, acc[1])};
                  });
              a.store(arith::IndexCastOp::create(b(), b().getI32Type(), best[1]),
                      topTokens, {s, j});
              a.store(a.sub(best[0], logZ), topLogprobs, {s, j});
              return best;
            });
        emitter.forLoop(top, emitter.index(maxTop), 1, [&](Value j) {
          a.store(emitter.i32(-1), topTokens, {s, j});
          a.store(negInf, topLogprobs, {s, j});
        });
      });
    });
    return rowGrid(0, kRowsPerGroup);
  }

  /// The largest t in [lo, hi] with `holds(t)`, for a `holds` that is true
  /// at lo and monotonically false above some point: bisection, then snapped
  /// up to the smallest logit >= t so that ties are kept whole.
  Value bisect(Value logits, Value row, Value vocab, Value lo, Value hi,
               const std::function<Value(Value)> &holds) {
    SmallVector<Value> range = emitter.forLoop(
        emitter.index(0), emitter.index(kBisectionSteps), 1, {lo, hi},
        [&](Value, ValueRange r) -> SmallVector<Value> {
          Value mid = a.mul(a.add(r[0], r[1]), emitter.f32(0.5));
          Value ok = holds(mid);
          return {a.select(ok, mid, r[0]), a.select(ok, r[1], mid)};
        });
    return emitter.forLoop(
        emitter.index(0), vocab, 1, {emitter.f32(INFINITY)},
        [&](Value v, ValueRange best) -> SmallVector<Value> {
          Value l = a.load(logits, {row, v});
          Value above = arith::CmpFOp::create(b(), arith::CmpFPredicate::OGE,
                                              l, range[0]);
          return {a.select(above, arith::MinimumFOp::create(b(), l, best[0]),
                           best[0])};
        })[0];
  }

  FailureOr<Grid> sample(SampleOp) {
    // temperature <= 0: argmax (lowest index on ties). Otherwise the tokens
    // that survive top_k, then top_p (over the top_k survivors), and min_p are
    // those with a logit at or above a threshold; the Gumbel-max trick then
    // samples softmax(logits / temperature) among them exactly.
    Value logits = emitter.binding(0), temperature = emitter.binding(1),
          topP = emitter.binding(2), topK = emitter.binding(3),
          minP = emitter.binding(4), seed = emitter.binding(5),
          rngOffset = emitter.binding(6), out = emitter.binding(7);
    Value vocab = emitter.dimSize(0, 1);
    Value zero = emitter.index(0);
    Value negInf = emitter.f32(-INFINITY);
    // exp((logit - max) / temperature) of the top_k survivors, for top_p.
    Value weights = memref::AllocaOp::create(
        b(), MemRefType::get({ShapedType::kDynamic}, b().getF32Type()),
        ValueRange{vocab});
    auto cmpf = [&](arith::CmpFPredicate p, Value x, Value y) {
      return arith::CmpFOp::create(b(), p, x, y).getResult();
    };
    auto [begin, end] = emitter.rowRange(emitter.dimSize(0, 0), kRowsPerGroup);
    emitter.forLoop(begin, end, 1, [&](Value s) {
      Value temp = a.load(temperature, s);
      Value greedy = cmpf(arith::CmpFPredicate::OLE, temp, emitter.f32(0));
      Value sampling = arith::XOrIOp::create(
          b(), greedy, arith::ConstantIntOp::create(b(), b().getI1Type(), 1));
      SmallVector<Value> extremes = emitter.forLoop(
          zero, vocab, 1, {negInf, emitter.f32(INFINITY)},
          [&](Value v, ValueRange m) -> SmallVector<Value> {
            Value l = a.load(logits, {s, v});
            return {a.max(m[0], l), arith::MinimumFOp::create(b(), m[1], l)};
          });
      Value max = extremes[0], min = extremes[1];
      auto countAtLeast = [&](Value t) {
        return emitter.forLoop(
            zero, vocab, 1, {zero},
            [&](Value v, ValueRange n) -> SmallVector<Value> {
              Value above = cmpf(arith::CmpFPredicate::OGE,
                                 a.load(logits, {s, v}), t);
              return {a.select(above, a.addi(n[0], emitter.index(1)), n[0])};
            })[0];
      };

      // top_k: the k-th largest logit.
      Value k = a.toIndex(a.load(topK, s));
      Value useK = arith::AndIOp::create(
          b(), sampling,
          arith::AndIOp::create(b(), a.cmpi(arith::CmpIPredicate::sgt, k, zero),
                                a.cmpi(arith::CmpIPredicate::slt, k, vocab)));
      Value kThreshold = emitter.ifElse(useK, b().getF32Type(), [&] {
        return bisect(logits, s, vocab, min, max, [&](Value t) {
          return a.cmpi(arith::CmpIPredicate::sge, countAtLeast(t), k);
        });
      }, [&] { return negInf; });

      // top_p: the smallest set of top tokens holding p of the mass.
      Value p = a.load(topP, s);
      Value useP = arith::AndIOp::create(
          b(), cmpf(arith::CmpFPredicate::OLT, p, emitter.f32(1)), sampling);
      Value pThreshold = emitter.ifElse(useP, b().getF32Type(), [&] {
        Value total = emitter.forLoop(
            zero, vocab, 1, {emitter.f32(0)},
            [&](Value v, ValueRange sum) -> SmallVector<Value> {
              Value l = a.load(logits, {s, v});
              Value w = a.select(
                  cmpf(arith::CmpFPredicate::OGE, l, kThreshold),
                  a.exp(a.div(a.sub(l, max), temp)), emitter.f32(0));
              a.store(w, weights, v);
              return {a.add(sum[0], w)};
            })[0];
        Value target = a.mul(p, total);
        return bisect(logits, s, vocab, a.max(min, kThreshold), max,
                      [&](Value t) {
          Value mass = emitter.forLoop(
              zero, vocab, 1, {emitter.f32(0)},
              [&](Value v, ValueRange sum) -> SmallVector<Value> {
                Value above = cmpf(arith::CmpFPredicate::OGE,
                                   a.load(logits, {s, v}), t);
                return {a.add(sum[0], a.select(above, a.load(weights, v),
                                               emitter.f32(0)))};
              })[0];
          return cmpf(arith::CmpFPredicate::OGE, mass, target);
        });
      }, [&] { return negInf; });

      // min_p: probability at least min_p times the top token's.
      Value mp = a.load(minP, s);
      Value mThreshold = a.select(
          cmpf(arith::CmpFPredicate::OGT, mp, emitter.f32(0)),
          a.add(max, a.mul(temp, math::LogOp::create(b(), mp))), negInf);
      Value threshold = a.max(kThreshold, a.max(pThreshold, mThreshold));

      // The first index of the largest score(v); greedy rows skip the noise.
      auto argmax = [&](const std::function<Value(Value, Value)> &score) {
        return emitter.forLoop(
            zero, vocab, 1, {negInf, zero},
            [&](Value v, ValueRange acc) -> SmallVector<Value> {
              Value sv = score(v, a.load(logits, {s, v}));
              Value better = cmpf(arith::CmpFPredicate::OGT, sv, acc[0]);
              return {a.select(better, sv, acc[0]),
                      a.select(better, v, acc[1])};
            })[1];
      };
      Value seedValue = a.load(seed, s), offset = a.load(rngOffset, s);
      Value token = emitter.ifElse(
          greedy, b().getIndexType(),
          [&] { return argmax([](Value, Value logit) { return logit; }); },
          [&] {
            return argmax([&](Value v, Value logit) {
              Value noise =
                  gumbel(b(), counterUniform(b(), seedValue, offset, v));
              Value kept = cmpf(arith::CmpFPredicate::OGE, logit, threshold);
              return a.select(kept, a.add(a.div(logit, temp), noise), negInf);
            });
          });
      a.store(arith::IndexCastOp::create(b(), b().getI32Type(), token), out, s);
    });
    return rowGrid(0, kRowsPerGroup);
  }

  Operation *op;
  CpuKernelEmitter emitter;
  Arith a;
};

struct LlmserveToCpuKernelsPass
    : public mlir::llmserve::impl::LlmserveToCpuKernelsBase<
          LlmserveToCpuKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    ModuleOp kernels = getOrCreateKernelModule(module);

    int64_t counter = std::distance(kernels.getOps<func::FuncOp>().begin(),
                                    kernels.getOps<func::FuncOp>().end());
    for (Operation *op : opsToOutline(module)) {
      std::string name = dispatchKernelName(op, counter++);
      CpuKernelBuilder builder(kernels, op, dispatchSymbol(name));
      FailureOr<Grid> grid = builder.build();
      if (failed(grid))
        return signalPassFailure();
      setDispatch(op, name, *grid);
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
