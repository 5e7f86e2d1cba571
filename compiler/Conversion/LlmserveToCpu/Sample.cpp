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

/// One row's draw, with the CPU kernel's semantics: temperature <= 0 takes
/// the argmax (lowest index on ties). Otherwise the tokens that survive
/// top_k, then top_p (over the top_k survivors), and min_p are those with a
/// logit at or above a threshold, and the Gumbel-max trick samples
/// softmax(logits / temperature) among them exactly.
class RowSampler {
public:
  RowSampler(CpuKernelEmitter &e, Value row, Value weights, Value candidates)
      : e(e), a(e.arith()), b(e.builder()), row(row), weights(weights),
        candidates(candidates), logits(e.binding(0)), vocab(e.dimSize(0, 1)),
        zero(e.index(0)), negInf(e.f32(-INFINITY)),
        temp(a.load(e.binding(1), row)) {}

  /// The token drawn, as an index.
  Value draw() {
    Value greedy = a.cmpf(arith::CmpFPredicate::OLE, temp, e.f32(0));
    return e.ifElse(
        greedy, b.getIndexType(), [&] { return argmax(identity())[1]; },
        [&] { return gumbelMax(threshold()); });
  }

private:
  using Score = std::function<Value(Value, Value)>;
  using Fold = std::function<SmallVector<Value>(Value, ValueRange)>;

  Value logit(Value v) { return a.load(logits, {row, v}); }
  static Score identity() {
    return [](Value, Value logit) { return logit; };
  }

  /// (the largest score(v, logit), its first index); (-inf, 0) for none.
  SmallVector<Value> argmax(const Score &score) {
    return e.forLoop(zero, vocab, 1, {negInf, zero},
                     [&](Value v, ValueRange acc) -> SmallVector<Value> {
                       Value sv = score(v, logit(v));
                       Value better =
                           a.cmpf(arith::CmpFPredicate::OGT, sv, acc[0]);
                       return {a.select(better, sv, acc[0]),
                               a.select(better, v, acc[1])};
                     });
  }

  /// The lowest logit a sampled token may have: the largest of the top_k,
  /// top_p and min_p thresholds.
  Value threshold() {
    SmallVector<Value> extremes = e.forLoop(
        zero, vocab, 1, {negInf, e.f32(INFINITY)},
        [&](Value v, ValueRange m) -> SmallVector<Value> {
          Value l = logit(v);
          return {a.max(m[0], l), arith::MinimumFOp::create(b, m[1], l)};
        });
    max = extremes[0];
    min = extremes[1];
    Value kThreshold = topKThreshold();
    Value pThreshold = topPThreshold(kThreshold);
    // min_p: probability at least min_p times the top token's.
    Value mp = a.load(e.binding(4), row);
    Value mThreshold =
        a.select(a.cmpf(arith::CmpFPredicate::OGT, mp, e.f32(0)),
                 a.add(max, a.mul(temp, math::LogOp::create(b, mp))), negInf);
    return a.max(kThreshold, a.max(pThreshold, mThreshold));
  }

  /// The largest t in [lo, hi] with `holds(t, count)`, for a `holds` that is
  /// true at lo and monotonically false above some point: bisection, then
  /// snapped up to the smallest logit >= t so that ties are kept whole. Every
  /// t tried is above the range's low end, so a step needs only the logits at
  /// or above it: `candidates` lists their indices in index order (its first
  /// `count`), compacted as the low end rises, and `holds` folds over them.
  /// A sum over the candidates in index order is then bitwise the sum over
  /// the whole row, whose other terms are zero.
  Value bisect(Value lo, Value hi,
               const std::function<Value(Value, Value)> &holds) {
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

  /// Folds body(v) over the first `count` candidates' indices v.
  SmallVector<Value> overCandidates(Value count, ValueRange init,
                                    const Fold &body) {
    return e.forLoop(zero, count, 1, init,
                     [&](Value i, ValueRange acc) -> SmallVector<Value> {
                       return body(a.toIndex(a.load(candidates, i)), acc);
                     });
  }

  /// top_k: the k-th largest logit (-inf when top_k is off).
  Value topKThreshold() {
    Value k = a.toIndex(a.load(e.binding(3), row));
    Value useK = a.andi(a.cmpi(arith::CmpIPredicate::sgt, k, zero),
                        a.cmpi(arith::CmpIPredicate::slt, k, vocab));
    return e.ifElse(
        useK, b.getF32Type(),
        [&] {
          return bisect(
              min, max,
              [&](Value t, Value count) {
                Value atLeast = overCandidates(
                    count, {zero},
                    [&](Value v, ValueRange n) -> SmallVector<Value> {
                      Value above =
                          a.cmpf(arith::CmpFPredicate::OGE, logit(v), t);
                      return {a.select(above, a.addi(n[0], e.index(1)), n[0])};
                    })[0];
                return a.cmpi(arith::CmpIPredicate::sge, atLeast, k);
              });
        },
        [&] { return negInf; });
  }

  /// top_p: the smallest set of top tokens (of the top_k survivors, those
  /// at or above `kThreshold`) holding p of their mass (-inf when off).
  Value topPThreshold(Value kThreshold) {
    Value p = a.load(e.binding(2), row);
    return e.ifElse(
        a.cmpf(arith::CmpFPredicate::OLT, p, e.f32(1)), b.getF32Type(),
        [&] {
          Value total = e.forLoop(
              zero, vocab, 1, {e.f32(0)},
              [&](Value v, ValueRange sum) -> SmallVector<Value> {
                Value l = logit(v);
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
              a.max(min, kThreshold), max,
              [&](Value t, Value count) {
                Value mass = overCandidates(
                    count, {e.f32(0)},
                    [&](Value v, ValueRange sum) -> SmallVector<Value> {
                      Value above =
                          a.cmpf(arith::CmpFPredicate::OGE, logit(v), t);
                      return {a.add(sum[0], a.select(above, a.load(weights, v),
                                                     e.f32(0)))};
                    })[0];
                return a.cmpf(arith::CmpFPredicate::OGE, mass, target);
              });
        },
        [&] { return negInf; });
  }

  /// Gumbel-max: the largest logit / temperature + noise among the tokens
  /// at or above `threshold`. The noise is below kNoiseBound, so a token
  /// whose logit / temperature + kNoiseBound (rounded, as the score is)
  /// falls short of the score of the largest logit's token, which every
  /// threshold keeps, can neither win nor tie: it skips its noise.
  Value gumbelMax(Value threshold) {
    Value seed = a.load(e.binding(5), row), offset = a.load(e.binding(6), row);
    auto noisy = [&](Value v, Value logit) {
      return a.add(a.div(logit, temp),
                   gumbel(b, counterUniform(b, seed, offset, v)));
    };
    SmallVector<Value> top = argmax(identity());
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
  }

  CpuKernelEmitter &e;
  Arith &a;
  ImplicitLocOpBuilder &b;
  Value row, weights, candidates, logits, vocab, zero, negInf, temp;
  Value max, min; // the row's extreme logits, once threshold() found them
};

} // namespace

Grid mlir::llmserve::buildSampleKernel(CpuKernelEmitter &e) {
  ImplicitLocOpBuilder &b = e.builder();
  Value vocab = e.dimSize(0, 1);
  // Per row: exp((logit - max) / temperature) of the top_k survivors, for
  // top_p; the indices of the logits a bisection still looks at.
  Value weights = memref::AllocaOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
      ValueRange{vocab});
  Value candidates = memref::AllocaOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI32Type()),
      ValueRange{vocab});
  Value out = e.binding(7);
  auto [begin, end] = e.rowRange(e.dimSize(0, 0), kRowsPerGroup);
  e.forLoop(begin, end, 1, [&](Value s) {
    Value token = RowSampler(e, s, weights, candidates).draw();
    e.arith().store(arith::IndexCastOp::create(b, b.getI32Type(), token), out,
                    s);
  });
  return e.rowGrid(0, kRowsPerGroup);
}
