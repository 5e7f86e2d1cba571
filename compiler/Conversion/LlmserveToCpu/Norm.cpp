//===- Norm.cpp - rms_norm and layer_norm on the CPU ----------------------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::llmserve;

/// rms_norm and layer_norm as linalg on tensor views of the workgroup's
/// rows ([rows, D]; with a weight of G < D, rows of G: each row of the input
/// is D / G of them): s = input (+ residual, which is stored to
/// residual_out); per row the sum of s² (layer_norm: the sum of s, then of
/// (s - mean)²) into a stack buffer; rsqrt(sum / D + epsilon) in place;
/// then (s - mean) · rsqrt · weight (+ bias) into the result. The CPU
/// schedule (cpu-kernels.mlir) walks each row in 16-wide vectors, so a
/// row's sums depend on D alone, not on the rows beside it.
Grid mlir::llmserve::buildNormKernel(CpuKernelEmitter &e, const NormParams &params) {
  const bool hasResidual = params.hasResidual, hasBias = params.hasBias,
             centered = params.centered;
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  int next = 0;
  int input = next++, weight = next++;
  std::optional<int> bias = hasBias ? std::optional<int>(next++) : std::nullopt;
  std::optional<int> residual =
      hasResidual ? std::optional<int>(next++) : std::nullopt;
  int result = next++;
  std::optional<int> residualOut =
      hasResidual ? std::optional<int>(next++) : std::nullopt;
  // A weight has a static shape. A weight narrower than the rows (per-head
  // norms) makes each row that many rows of the weight's width.
  int64_t width = e.bindingType(weight).getDimSize(0);
  int64_t inputWidth = e.bindingType(input).getDimSize(1);
  int64_t groups = ShapedType::isDynamic(inputWidth) ? 1 : inputWidth / width;
  Value totalRows = e.dimSize(0, 0);
  if (groups > 1)
    totalRows = a.muli(totalRows, e.index(groups));
  auto [first, end] = e.rowRange(totalRows, kRowsPerGroup);
  // A plain variable: the lambdas below capture it (C++17 lambdas cannot
  // capture structured bindings).
  Value begin = first;
  OpFoldResult rows = a.subi(end, begin);
  auto rowsView = [&](int binding) {
    Value rowsOfWidth = groups == 1 ? e.binding(binding)
                                    : e.binding(binding, {totalRows, e.index(width)});
    return e.subview(rowsOfWidth, {begin, b.getIndexAttr(0)},
                     {rows, b.getIndexAttr(width)});
  };
  MLIRContext *ctx = b.getContext();
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
  auto rowGeneric = [&](ArrayRef<std::pair<Value, AffineMap>> inputs,
                        Value init, AffineMap initMap,
                        utils::IteratorType columns, Body body) {
    SmallVector<Value> values;
    SmallVector<AffineMap> maps;
    for (auto [value, map] : inputs) {
      values.push_back(value);
      maps.push_back(map);
    }
    maps.push_back(initMap);
    return linalg::GenericOp::create(
               b, init.getType(), values, init, maps,
               SmallVector<utils::IteratorType>{parallel, columns},
               yielding(body))
        .getResult(0);
  };
  // Per row, the sum of `term(args)` over the row, into a stack buffer.
  auto rowSum = [&](ArrayRef<std::pair<Value, AffineMap>> inputs, Body term) {
    auto type = MemRefType::get({kRowsPerGroup}, b.getF32Type());
    Value buffer = e.subview(memref::AllocaOp::create(b, type),
                             {b.getIndexAttr(0)}, {rows});
    Value zeros = linalg::FillOp::create(
                      b, ValueRange{e.f32(0)},
                      ValueRange{e.tensorOf(buffer, /*writable=*/true)})
                      .getResult(0);
    return rowGeneric(inputs, zeros, perRow, reduction,
                      [&](Arith &x, ValueRange args) {
                        return x.add(args.back(), term(x, args.drop_back()));
                      });
  };

  Value s = e.tensorOf(rowsView(input), /*writable=*/false);
  if (residual) {
    Value outView = rowsView(*residualOut);
    s = rowGeneric(
        {{s, element},
         {e.tensorOf(rowsView(*residual), /*writable=*/false), element}},
        e.tensorOf(outView, /*writable=*/true), element, parallel,
        [](Arith &x, ValueRange args) { return x.add(args[0], args[1]); });
    e.storeInto(s, outView);
  }
  Value widthF = e.f32(static_cast<double>(width)), epsilonF = e.f32(params.epsilon);
  Value sums, meanSource;
  if (centered) {
    meanSource = rowSum({{s, element}},
                        [](Arith &, ValueRange args) { return args[0]; });
    sums = rowSum({{s, element}, {meanSource, perRow}},
                  [&](Arith &x, ValueRange args) {
                    Value c = x.sub(args[0], x.div(args[1], widthF));
                    return x.mul(c, c);
                  });
  } else {
    sums = rowSum({{s, element}}, [](Arith &x, ValueRange args) {
      return x.mul(args[0], args[0]);
    });
  }
  // rsqrt(sum / D + epsilon) per row, in place (a rank-1 elementwise generic).
  Value inv =
      linalg::GenericOp::create(
          b, sums.getType(), ValueRange{}, sums,
          SmallVector<AffineMap>{b.getMultiDimIdentityMap(1)},
          SmallVector<utils::IteratorType>{parallel},
          yielding([&](Arith &x, ValueRange args) -> Value {
            Value variance = x.div(args[0], widthF);
            return math::RsqrtOp::create(x.b, x.add(variance, epsilonF));
          }))
          .getResult(0);

  SmallVector<std::pair<Value, AffineMap>> inputs = {
      {s, element},
      {inv, perRow},
      {e.tensorOf(e.binding(weight), /*writable=*/false), perColumn}};
  if (centered)
    inputs.push_back({meanSource, perRow});
  if (bias)
    inputs.push_back(
        {e.tensorOf(e.binding(*bias), /*writable=*/false), perColumn});
  Value resultView = rowsView(result);
  Value y = rowGeneric(inputs, e.tensorOf(resultView, /*writable=*/true),
                       element, parallel, [&](Arith &x, ValueRange args) {
                         Value v = args[0];
                         if (centered)
                           v = x.sub(v, x.div(args[3], widthF));
                         Value w = args[2];
                         if (params.weightOffset != 0)
                           w = x.add(w, arith::ConstantOp::create(
                                            x.b, x.b.getF32FloatAttr(params.weightOffset)));
                         Value scaled = x.mul(x.mul(v, args[1]), w);
                         // The bias is the last input (args end with the init).
                         return bias ? x.add(scaled, args[inputs.size() - 1])
                                     : scaled;
                       });
  e.storeInto(y, resultView);
  if (groups == 1)
    return e.rowGrid(0, kRowsPerGroup);
  return {ceilDivExpr(e.dimExpr(0, 0) + "*" + std::to_string(groups), kRowsPerGroup),
          "1", "1"};
}
