//===- Sample.cpp - The sampler on the GPU --------------------------------===//
//
// One block per sequence, with the CPU kernel's semantics: temperature <= 0
// takes the argmax (lowest index on ties); otherwise the tokens that survive
// top_k, then top_p (over the top_k survivors), and min_p are those with a
// logit at or above a threshold found by bisection over the logit range, and
// the Gumbel-max trick samples softmax(logits / temperature) among them with
// noise splitmix64(seed, rng_offset, token) — the CPU kernel's noise, so a
// seed picks the same token on both targets unless a top_p mass sum (summed
// here in a different order) falls on the other side of its threshold.
// Every pass over the vocabulary is a block reduction, each thread reading
// kVocabUnroll logits at once; its result is the same in every thread, so
// all threads take the same branches.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToGpu/GpuKernels.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

namespace {
// Halvings of the logit range when searching a top_k / top_p threshold (as
// on the CPU).
constexpr int64_t kBisectionSteps = 32;
} // namespace

Grid mlir::llmserve::buildSampleKernel(GpuKernelEmitter &e) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  using F = arith::CmpFPredicate;
  Value logits = e.binding(0), temperature = e.binding(1),
        topP = e.binding(2), topK = e.binding(3), minP = e.binding(4),
        seed = e.binding(5), rngOffset = e.binding(6), out = e.binding(7);
  Value vocab = e.dimSize(0, 1);
  Value zero = e.index(0);
  Value negInf = e.f32(-INFINITY), posInf = e.f32(INFINITY);
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  Value scratchF = e.sharedBuffer({e.numWarps()}, f32);
  Value scratchG = e.sharedBuffer({e.numWarps()}, f32);
  Value scratchI = e.sharedBuffer({e.numWarps()}, i32);
  Value s = e.blockId(0);

  auto logit = [&](Value v) { return e.loadF32(logits, {s, v}); };
  // The sum over the vocabulary of term(v) (f32), reduced in a fixed order.
  auto sumOver = [&](const std::function<Value(Value)> &term) {
    Value partial = e.threadLoop(
        vocab, {e.f32(0)},
        [&](Value v, ValueRange acc) -> SmallVector<Value> {
          return {a.add(acc[0], term(v))};
        },
        kVocabUnroll)[0];
    return e.blockReduce(partial, scratchF,
                         [&](Value x, Value y) { return a.add(x, y); });
  };
  auto countAtLeast = [&](Value t) {
    Value partial = e.threadLoop(
        vocab, {e.i32(0)},
        [&](Value v, ValueRange n) -> SmallVector<Value> {
          Value above = a.cmpf(F::OGE, logit(v), t);
          return {a.select(above, a.addi(n[0], e.i32(1)), n[0])};
        },
        kVocabUnroll)[0];
    return e.blockReduce(partial, scratchI,
                         [&](Value x, Value y) { return a.addi(x, y); });
  };
  // The largest t in [lo, hi] with holds(t), snapped up to the smallest
  // logit >= t so that ties are kept whole.
  auto bisect = [&](Value lo, Value hi,
                    const std::function<Value(Value)> &holds) {
    SmallVector<Value> range = e.forLoop(
        zero, e.index(kBisectionSteps), 1, {lo, hi},
        [&](Value, ValueRange r) -> SmallVector<Value> {
          Value mid = a.mul(a.add(r[0], r[1]), e.f32(0.5));
          Value ok = holds(mid);
          return {a.select(ok, mid, r[0]), a.select(ok, r[1], mid)};
        });
    Value partial = e.threadLoop(
        vocab, {posInf},
        [&](Value v, ValueRange best) -> SmallVector<Value> {
          Value l = logit(v);
          return {a.select(a.cmpf(F::OGE, l, range[0]), a.min(l, best[0]),
                           best[0])};
        },
        kVocabUnroll)[0];
    return e.blockReduce(partial, scratchF,
                         [&](Value x, Value y) { return a.min(x, y); });
  };

  Value temp = a.load(temperature, s);
  Value greedy = a.cmpf(F::OLE, temp, e.f32(0));
  Value sampling = arith::XOrIOp::create(
      b, greedy, arith::ConstantIntOp::create(b, b.getI1Type(), 1));
  SmallVector<Value> extremes = e.threadLoop(
      vocab, {negInf, posInf},
      [&](Value v, ValueRange m) -> SmallVector<Value> {
        Value l = logit(v);
        return {a.max(m[0], l), a.min(m[1], l)};
      },
      kVocabUnroll);
  SmallVector<Value> range = e.blockReduce(
      extremes, {scratchF, scratchG},
      [&](ValueRange x, ValueRange y) -> SmallVector<Value> {
        return {a.max(x[0], y[0]), a.min(x[1], y[1])};
      });
  Value max = range[0], min = range[1];

  // top_k: the k-th largest logit.
  Value k = a.load(topK, s);
  Value useK = a.andi(
      sampling, a.andi(a.cmpi(arith::CmpIPredicate::sgt, k, e.i32(0)),
                       a.cmpi(arith::CmpIPredicate::slt, k,
                              arith::IndexCastOp::create(b, i32, vocab))));
  Value kThreshold = e.ifElse(
      useK, f32,
      [&] {
        return bisect(min, max, [&](Value t) {
          return a.cmpi(arith::CmpIPredicate::sge, countAtLeast(t), k);
        });
      },
      [&] { return negInf; });

  // top_p: the smallest set of top tokens holding p of the mass.
  Value p = a.load(topP, s);
  Value useP = a.andi(a.cmpf(F::OLT, p, e.f32(1)), sampling);
  auto weight = [&](Value l) {
    return a.select(a.cmpf(F::OGE, l, kThreshold),
                    a.exp(a.div(a.sub(l, max), temp)), e.f32(0));
  };
  Value pThreshold = e.ifElse(
      useP, f32,
      [&] {
        Value total = sumOver([&](Value v) { return weight(logit(v)); });
        Value target = a.mul(p, total);
        return bisect(a.max(min, kThreshold), max, [&](Value t) {
          Value mass = sumOver([&](Value v) {
            Value l = logit(v);
            return a.select(a.cmpf(F::OGE, l, t), weight(l), e.f32(0));
          });
          return a.cmpf(F::OGE, mass, target);
        });
      },
      [&] { return negInf; });

  // min_p: probability at least min_p times the top token's.
  Value mp = a.load(minP, s);
  Value mThreshold =
      a.select(a.cmpf(F::OGT, mp, e.f32(0)),
               a.add(max, a.mul(temp, math::LogOp::create(b, mp))), negInf);
  Value threshold = a.max(kThreshold, a.max(pThreshold, mThreshold));

  // The first index of the largest score(v); greedy rows skip the noise.
  Value seedValue = a.load(seed, s), offset = a.load(rngOffset, s);
  auto score = [&](Value v) {
    Value l = logit(v);
    Value noise = gumbel(b, counterUniform(b, seedValue, offset, v));
    Value kept = a.cmpf(F::OGE, l, threshold);
    Value sampled = a.select(kept, a.add(a.div(l, temp), noise), negInf);
    return a.select(greedy, l, sampled);
  };
  SmallVector<Value> best = e.threadLoop(
      vocab, {negInf, e.i32(0)},
      [&](Value v, ValueRange acc) -> SmallVector<Value> {
        Value sv = score(v);
        Value better = a.cmpf(F::OGT, sv, acc[0]);
        return {a.select(better, sv, acc[0]),
                a.select(better, arith::IndexCastOp::create(b, i32, v),
                         acc[1])};
      },
      kVocabUnroll);
  SmallVector<Value> winner = e.blockReduce(
      best, {scratchF, scratchI},
      [&](ValueRange x, ValueRange y) -> SmallVector<Value> {
        Value takeY = arith::OrIOp::create(
            b, a.cmpf(F::OGT, y[0], x[0]),
            a.andi(a.cmpf(F::OEQ, y[0], x[0]),
                   a.cmpi(arith::CmpIPredicate::slt, y[1], x[1])));
        return {a.select(takeY, y[0], x[0]), a.select(takeY, y[1], x[1])};
      });
  e.ifThen(a.cmpi(arith::CmpIPredicate::eq, e.threadId(), zero),
           [&] { a.store(winner[1], out, s); });
  return {e.dimExpr(0, 0), "1", "1"};
}
