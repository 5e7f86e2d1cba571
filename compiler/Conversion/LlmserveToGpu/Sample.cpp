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
// Logits a thread lists in shared memory for a bisection's later passes.
constexpr int64_t kListLength = 16;
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
  // A bisection's count beside its sum, which may itself be an i32 count.
  Value scratchCount = e.sharedBuffer({e.numWarps()}, i32);
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
  // A bisection for a threshold looks only at the logits at or above its
  // range's low end. Once no thread has more than kListLength of them, each
  // thread lists its own in shared memory, in its order over the row (the
  // i-th at lists[i * blockSize + thread]), and later passes read the lists:
  // a thread's partial sums are those of a pass over the whole row, whose
  // other terms are zero.
  Value lists = e.sharedBuffer({kListLength * e.blockSize()}, f32);
  auto listSlot = [&](Value i) {
    return a.addi(a.muli(i, e.index(e.blockSize())), e.threadId());
  };
  using Fold = std::function<SmallVector<Value>(Value, ValueRange)>;
  // Folds body(logit, acc) over this thread's logits: its list's first
  // `count` when `listed` (the same in every thread), else its part of the row.
  auto foldOver = [&](Value listed, Value count, ValueRange init,
                      const Fold &body) {
    return e.ifElse(
        listed, TypeRange(init),
        [&] {
          return e.forLoop(zero, count, 1, init,
                           [&](Value i, ValueRange acc) {
                             return body(a.load(lists, listSlot(i)), acc);
                           });
        },
        [&] {
          return e.threadLoop(
              vocab, init,
              [&](Value v, ValueRange acc) { return body(logit(v), acc); },
              kVocabUnroll);
        });
  };
  // This thread's list: its logits at or above t, from its list (listed)
  // or its part of the row; returns their number.
  auto listAtLeast = [&](Value listed, Value count, Value t) {
    return e.ifElse(
        listed, b.getIndexType(),
        [&] {
          // In place: the write position never passes the read one.
          return e.forLoop(
              zero, count, 1, {zero},
              [&](Value i, ValueRange kept) -> SmallVector<Value> {
                Value l = a.load(lists, listSlot(i));
                a.store(l, lists, listSlot(kept[0]));
                return {a.select(a.cmpf(F::OGE, l, t),
                                 a.addi(kept[0], e.index(1)), kept[0])};
              })[0];
        },
        [&] {
          return e.threadLoop(
              vocab, {zero},
              [&](Value v, ValueRange kept) -> SmallVector<Value> {
                Value l = logit(v);
                Value atLeast = a.cmpf(F::OGE, l, t);
                e.ifThen(atLeast,
                         [&] { a.store(l, lists, listSlot(kept[0])); });
                return {a.select(atLeast, a.addi(kept[0], e.index(1)),
                                 kept[0])};
              })[0];
        });
  };
  // The largest t in [lo, hi] with holds(the block's sum of term(l, t) over
  // the logits l), snapped up to the smallest logit >= t so that ties are
  // kept whole. `none` is the sum of no terms (i32 or f32).
  auto bisect = [&](Value lo, Value hi, Value none,
                    const std::function<Value(Value, Value)> &term,
                    const std::function<Value(Value)> &holds) {
    Value scratchSum = none.getType() == f32 ? scratchF : scratchI;
    auto add = [&](Value x, Value y) {
      return x.getType() == f32 ? a.add(x, y) : a.addi(x, y);
    };
    Value notListed = arith::ConstantIntOp::create(b, b.getI1Type(), 0);
    SmallVector<Value> state = e.forLoop(
        zero, e.index(kBisectionSteps), 1, {lo, hi, notListed, zero},
        [&](Value, ValueRange r) -> SmallVector<Value> {
          Value mid = a.mul(a.add(r[0], r[1]), e.f32(0.5));
          // The sum, and how many of its logits are at or above mid.
          SmallVector<Value> partial = foldOver(
              r[2], r[3], {none, e.i32(0)},
              [&](Value l, ValueRange acc) -> SmallVector<Value> {
                Value atLeast = a.cmpf(F::OGE, l, mid);
                return {add(acc[0], term(l, mid)),
                        a.select(atLeast, a.addi(acc[1], e.i32(1)), acc[1])};
              });
          SmallVector<Value> total = e.blockReduce(
              partial, {scratchSum, scratchCount},
              [&](ValueRange x, ValueRange y) -> SmallVector<Value> {
                return {add(x[0], y[0]), a.maxi(x[1], y[1])};
              });
          Value ok = holds(total[0]);
          Value fits = a.cmpi(arith::CmpIPredicate::sle, total[1],
                              e.i32(kListLength));
          Value listedNext = a.andi(ok, arith::OrIOp::create(b, r[2], fits));
          Value count = e.ifElse(
              listedNext, b.getIndexType(),
              [&] { return listAtLeast(r[2], r[3], mid); },
              [&] { return r[3]; });
          return {a.select(ok, mid, r[0]), a.select(ok, r[1], mid),
                  arith::OrIOp::create(b, r[2], listedNext), count};
        });
    Value partial = foldOver(
        state[2], state[3], {posInf},
        [&](Value l, ValueRange best) -> SmallVector<Value> {
          return {a.select(a.cmpf(F::OGE, l, state[0]), a.min(l, best[0]),
                           best[0])};
        })[0];
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
        return bisect(
            min, max, e.i32(0),
            [&](Value l, Value t) {
              return a.select(a.cmpf(F::OGE, l, t), e.i32(1), e.i32(0));
            },
            [&](Value count) {
              return a.cmpi(arith::CmpIPredicate::sge, count, k);
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
        return bisect(
            a.max(min, kThreshold), max, e.f32(0),
            [&](Value l, Value t) {
              return a.select(a.cmpf(F::OGE, l, t), weight(l), e.f32(0));
            },
            [&](Value mass) { return a.cmpf(F::OGE, mass, target); });
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
