//===- Sample.cpp - The sampler on the CPU --------------------------------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace mlir::llmserve;

namespace {
// Halvings of the logit range when searching a top_k / top_p threshold.
constexpr int64_t kBisectionSteps = 32;

/// The largest t in [lo, hi] with `holds(t)`, for a `holds` that is true
/// at lo and monotonically false above some point: bisection, then snapped
/// up to the smallest logit >= t so that ties are kept whole.
Value bisect(CpuKernelEmitter &e, Value logits, Value row, Value vocab,
             Value lo, Value hi, const std::function<Value(Value)> &holds) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  SmallVector<Value> range =
      e.forLoop(e.index(0), e.index(kBisectionSteps), 1, {lo, hi},
                [&](Value, ValueRange r) -> SmallVector<Value> {
                  Value mid = a.mul(a.add(r[0], r[1]), e.f32(0.5));
                  Value ok = holds(mid);
                  return {a.select(ok, mid, r[0]), a.select(ok, r[1], mid)};
                });
  return e.forLoop(
      e.index(0), vocab, 1, {e.f32(INFINITY)},
      [&](Value v, ValueRange best) -> SmallVector<Value> {
        Value l = a.load(logits, {row, v});
        Value above =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, l, range[0]);
        return {
            a.select(above, arith::MinimumFOp::create(b, l, best[0]), best[0])};
      })[0];
}

} // namespace

Grid mlir::llmserve::buildSampleKernel(CpuKernelEmitter &e) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  // temperature <= 0: argmax (lowest index on ties). Otherwise the tokens
  // that survive top_k, then top_p (over the top_k survivors), and min_p are
  // those with a logit at or above a threshold; the Gumbel-max trick then
  // samples softmax(logits / temperature) among them exactly.
  Value logits = e.binding(0), temperature = e.binding(1), topP = e.binding(2),
        topK = e.binding(3), minP = e.binding(4), seed = e.binding(5),
        rngOffset = e.binding(6), out = e.binding(7);
  Value vocab = e.dimSize(0, 1);
  Value zero = e.index(0);
  Value negInf = e.f32(-INFINITY);
  // exp((logit - max) / temperature) of the top_k survivors, for top_p.
  Value weights = memref::AllocaOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
      ValueRange{vocab});
  auto [begin, end] = e.rowRange(e.dimSize(0, 0), kRowsPerGroup);
  e.forLoop(begin, end, 1, [&](Value s) {
    Value temp = a.load(temperature, s);
    Value greedy = a.cmpf(arith::CmpFPredicate::OLE, temp, e.f32(0));
    Value sampling = arith::XOrIOp::create(
        b, greedy, arith::ConstantIntOp::create(b, b.getI1Type(), 1));
    SmallVector<Value> extremes = e.forLoop(
        zero, vocab, 1, {negInf, e.f32(INFINITY)},
        [&](Value v, ValueRange m) -> SmallVector<Value> {
          Value l = a.load(logits, {s, v});
          return {a.max(m[0], l), arith::MinimumFOp::create(b, m[1], l)};
        });
    Value max = extremes[0], min = extremes[1];
    auto countAtLeast = [&](Value t) {
      return e.forLoop(
          zero, vocab, 1, {zero},
          [&](Value v, ValueRange n) -> SmallVector<Value> {
            Value above =
                a.cmpf(arith::CmpFPredicate::OGE, a.load(logits, {s, v}), t);
            return {a.select(above, a.addi(n[0], e.index(1)), n[0])};
          })[0];
    };

    // top_k: the k-th largest logit.
    Value k = a.toIndex(a.load(topK, s));
    Value useK = arith::AndIOp::create(
        b, sampling,
        arith::AndIOp::create(b, a.cmpi(arith::CmpIPredicate::sgt, k, zero),
                              a.cmpi(arith::CmpIPredicate::slt, k, vocab)));
    Value kThreshold = e.ifElse(
        useK, b.getF32Type(),
        [&] {
          return bisect(e, logits, s, vocab, min, max, [&](Value t) {
            return a.cmpi(arith::CmpIPredicate::sge, countAtLeast(t), k);
          });
        },
        [&] { return negInf; });

    // top_p: the smallest set of top tokens holding p of the mass.
    Value p = a.load(topP, s);
    Value useP = arith::AndIOp::create(
        b, a.cmpf(arith::CmpFPredicate::OLT, p, e.f32(1)), sampling);
    Value pThreshold = e.ifElse(
        useP, b.getF32Type(),
        [&] {
          Value total =
              e.forLoop(zero, vocab, 1, {e.f32(0)},
                        [&](Value v, ValueRange sum) -> SmallVector<Value> {
                          Value l = a.load(logits, {s, v});
                          Value w = a.select(
                              a.cmpf(arith::CmpFPredicate::OGE, l, kThreshold),
                              a.exp(a.div(a.sub(l, max), temp)), e.f32(0));
                          a.store(w, weights, v);
                          return {a.add(sum[0], w)};
                        })[0];
          Value target = a.mul(p, total);
          return bisect(
              e, logits, s, vocab, a.max(min, kThreshold), max, [&](Value t) {
                Value mass = e.forLoop(
                    zero, vocab, 1, {e.f32(0)},
                    [&](Value v, ValueRange sum) -> SmallVector<Value> {
                      Value above = a.cmpf(arith::CmpFPredicate::OGE,
                                           a.load(logits, {s, v}), t);
                      return {a.add(sum[0], a.select(above, a.load(weights, v),
                                                     e.f32(0)))};
                    })[0];
                return a.cmpf(arith::CmpFPredicate::OGE, mass, target);
              });
        },
        [&] { return negInf; });

    // min_p: probability at least min_p times the top token's.
    Value mp = a.load(minP, s);
    Value mThreshold =
        a.select(a.cmpf(arith::CmpFPredicate::OGT, mp, e.f32(0)),
                 a.add(max, a.mul(temp, math::LogOp::create(b, mp))), negInf);
    Value threshold = a.max(kThreshold, a.max(pThreshold, mThreshold));

    // The first index of the largest score(v); greedy rows skip the noise.
    auto argmax = [&](const std::function<Value(Value, Value)> &score) {
      return e.forLoop(
          zero, vocab, 1, {negInf, zero},
          [&](Value v, ValueRange acc) -> SmallVector<Value> {
            Value sv = score(v, a.load(logits, {s, v}));
            Value better = a.cmpf(arith::CmpFPredicate::OGT, sv, acc[0]);
            return {a.select(better, sv, acc[0]), a.select(better, v, acc[1])};
          })[1];
    };
    Value seedValue = a.load(seed, s), offset = a.load(rngOffset, s);
    Value token = e.ifElse(
        greedy, b.getIndexType(),
        [&] { return argmax([](Value, Value logit) { return logit; }); },
        [&] {
          return argmax([&](Value v, Value logit) {
            Value noise = gumbel(b, counterUniform(b, seedValue, offset, v));
            Value kept = a.cmpf(arith::CmpFPredicate::OGE, logit, threshold);
            return a.select(kept, a.add(a.div(logit, temp), noise), negInf);
          });
        });
    a.store(arith::IndexCastOp::create(b, b.getI32Type(), token), out, s);
  });
  return e.rowGrid(0, kRowsPerGroup);
}
