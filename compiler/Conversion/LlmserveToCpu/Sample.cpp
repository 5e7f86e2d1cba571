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
// Above every Gumbel noise the sampler draws (at most -log(-log(1 - 2^-24))
// = 16.64).
constexpr float kNoiseBound = 18.0f;

/// The largest t in [lo, hi] with `holds(t, count)`, for a `holds` that is
/// true at lo and monotonically false above some point: bisection, then
/// snapped up to the smallest logit >= t so that ties are kept whole. Every
/// t tried is above the range's low end, so a step needs only the logits at
/// or above it: `candidates` lists their indices in index order (its first
/// `count`), compacted as the low end rises, and `holds` folds over them.
/// A sum over the candidates in index order is then bitwise the sum over
/// the whole row, whose other terms are zero.
Value bisect(CpuKernelEmitter &e, Value logits, Value row, Value vocab,
             Value candidates, Value lo, Value hi,
             const std::function<Value(Value, Value)> &holds) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value zero = e.index(0);
  auto logitOf = [&](Value index32) {
    return a.load(logits, {row, a.toIndex(index32)});
  };
  // Keeps the indices `indexAt(i)` (i32) for i < n whose logit is at or
  // above t, in order; the store is unconditional, since the write position
  // never passes the read one. Returns how many were kept.
  auto keepAtLeast = [&](Value n, Value t,
                         const std::function<Value(Value)> &indexAt) {
    return e.forLoop(zero, n, 1, {zero},
                     [&](Value i, ValueRange kept) -> SmallVector<Value> {
                       Value v = indexAt(i);
                       a.store(v, candidates, kept[0]);
                       Value atLeast =
                           a.cmpf(arith::CmpFPredicate::OGE, logitOf(v), t);
                       return {a.select(atLeast, a.addi(kept[0], e.index(1)),
                                        kept[0])};
                     })[0];
  };
  auto candidateAt = [&](Value i) { return a.load(candidates, i); };
  Value initial = keepAtLeast(vocab, lo, [&](Value v) {
    return arith::IndexCastOp::create(b, b.getI32Type(), v).getResult();
  });
  SmallVector<Value> range = e.forLoop(
      zero, e.index(kBisectionSteps), 1, {lo, hi, initial},
      [&](Value, ValueRange r) -> SmallVector<Value> {
        Value mid = a.mul(a.add(r[0], r[1]), e.f32(0.5));
        Value ok = holds(mid, r[2]);
        Value count = e.ifElse(
            ok, b.getIndexType(),
            [&] { return keepAtLeast(r[2], mid, candidateAt); },
            [&] { return r[2]; });
        return {a.select(ok, mid, r[0]), a.select(ok, r[1], mid), count};
      });
  return e.forLoop(
      zero, range[2], 1, {e.f32(INFINITY)},
      [&](Value i, ValueRange best) -> SmallVector<Value> {
        Value l = logitOf(candidateAt(i));
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
  // exp((logit - max) / temperature) of the top_k survivors, for top_p; the
  // indices of the logits a bisection still looks at.
  Value weights = memref::AllocaOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
      ValueRange{vocab});
  Value candidates = memref::AllocaOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI32Type()),
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
    // Folds body(v) over the first `count` candidates' indices v.
    auto overCandidates = [&](Value count, ValueRange init,
                              const std::function<SmallVector<Value>(
                                  Value, ValueRange)> &body) {
      return e.forLoop(zero, count, 1, init,
                       [&](Value i, ValueRange acc) -> SmallVector<Value> {
                         return body(a.toIndex(a.load(candidates, i)), acc);
                       });
    };
    auto countAtLeast = [&](Value t, Value count) {
      return overCandidates(
          count, {zero}, [&](Value v, ValueRange n) -> SmallVector<Value> {
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
          return bisect(e, logits, s, vocab, candidates, min, max,
                        [&](Value t, Value count) {
                          return a.cmpi(arith::CmpIPredicate::sge,
                                        countAtLeast(t, count), k);
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
                          // Only the top_k survivors pay for an exp.
                          Value w = e.ifElse(
                              a.cmpf(arith::CmpFPredicate::OGE, l, kThreshold),
                              b.getF32Type(),
                              [&] { return a.exp(a.div(a.sub(l, max), temp)); },
                              [&] { return e.f32(0); });
                          a.store(w, weights, v);
                          return {a.add(sum[0], w)};
                        })[0];
          Value target = a.mul(p, total);
          return bisect(
              e, logits, s, vocab, candidates, a.max(min, kThreshold), max,
              [&](Value t, Value count) {
                Value mass = overCandidates(
                    count, {e.f32(0)},
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

    // The first index of the largest score(v, logit) (-inf for none).
    auto argmax = [&](const std::function<Value(Value, Value)> &score) {
      return e.forLoop(
          zero, vocab, 1, {negInf, zero},
          [&](Value v, ValueRange acc) -> SmallVector<Value> {
            Value sv = score(v, a.load(logits, {s, v}));
            Value better = a.cmpf(arith::CmpFPredicate::OGT, sv, acc[0]);
            return {a.select(better, sv, acc[0]), a.select(better, v, acc[1])};
          });
    };
    auto greedyArgmax = [&] {
      return argmax([](Value, Value logit) { return logit; });
    };
    // Gumbel-max: the largest logit / temperature + noise among the tokens
    // kept. The noise is below kNoiseBound, so a token whose logit /
    // temperature + kNoiseBound (rounded, as the score is) falls short of
    // the score of the largest logit's token, which is kept, can neither win
    // nor tie: it skips its noise.
    Value seedValue = a.load(seed, s), offset = a.load(rngOffset, s);
    auto noisy = [&](Value v, Value logit) {
      return a.add(a.div(logit, temp),
                   gumbel(b, counterUniform(b, seedValue, offset, v)));
    };
    Value token = e.ifElse(
        greedy, b.getIndexType(), [&] { return greedyArgmax()[1]; },
        [&] {
          SmallVector<Value> top = greedyArgmax();
          Value floor = noisy(top[1], top[0]);
          return argmax([&](Value v, Value logit) {
            Value bound = a.add(a.div(logit, temp), e.f32(kNoiseBound));
            Value contends =
                a.andi(a.cmpf(arith::CmpFPredicate::OGE, logit, threshold),
                       a.cmpf(arith::CmpFPredicate::OGE, bound, floor));
            return e.ifElse(contends, b.getF32Type(),
                            [&] { return noisy(v, logit); },
                            [&] { return negInf; });
          })[1];
        });
    a.store(arith::IndexCastOp::create(b, b.getI32Type(), token), out, s);
  });
  return e.rowGrid(0, kRowsPerGroup);
}
