//===- Logits.cpp - Logit adjustments and log-probs on the GPU ------------===//
//
// adjust_logits: a block per kAdjustLogitsChunk logits of a sequence's row
// copies them, masking them if the sequence has a mask, then its threads
// rewrite the row's entry tokens that fall in its chunk (distinct within a
// row, so no two threads touch one logit). logprobs: one block per sequence
// that asks; the log-sum-exp and each of the top entries are block
// reductions, the top entries taken one after the other in (logit
// descending, index ascending) order, as on the CPU.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToGpu/GpuKernels.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

Grid mlir::llmserve::buildAdjustLogitsKernel(GpuKernelEmitter &e) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  using I = arith::CmpIPredicate;
  Value logits = e.binding(0), start = e.binding(1), tokens = e.binding(2),
        counts = e.binding(3), bias = e.binding(4), presence = e.binding(5),
        frequency = e.binding(6), repetition = e.binding(7),
        maskIndex = e.binding(8), mask = e.binding(9), out = e.binding(10);
  Value vocab = e.dimSize(0, 1), entries = e.dimSize(2, 0),
        maskWords = e.dimSize(9, 0);
  Value zero = e.index(0), one = e.index(1);
  Value s = e.blockId(0);
  Value begin = a.muli(e.blockId(1), e.index(kAdjustLogitsChunk));
  Value end = a.mini(vocab, a.addi(begin, e.index(kAdjustLogitsChunk)));
  // The chunk's logits, `body(v)` for each v of them.
  auto chunkLoop = [&](const std::function<void(Value)> &body) {
    e.threadLoop(a.subi(end, begin), [&](Value i) { body(a.addi(begin, i)); });
  };

  // A mask row past the end of the array masks nothing. The row is the same
  // for the whole block, so every thread takes the same branch.
  Value rowWords = a.divui(a.addi(vocab, e.index(31)), e.index(32));
  Value row = arith::IndexCastOp::create(b, b.getIndexType(), a.load(maskIndex, s));
  Value masked = a.andi(a.cmpi(I::sge, row, zero),
                        a.cmpi(I::sle, a.muli(a.addi(row, one), rowWords), maskWords));
  e.ifElse(
      masked,
      [&] {
        Value rowStart = a.muli(row, rowWords);
        chunkLoop([&](Value v) {
          Value word = a.load(mask, a.addi(rowStart, a.divui(v, e.index(32))));
          Value shift = arith::IndexCastOp::create(b, b.getI32Type(),
                                                   a.remui(v, e.index(32)));
          Value bit = a.andi(arith::ShRUIOp::create(b, word, shift), e.i32(1));
          e.storeF32(a.select(a.cmpi(I::ne, bit, e.i32(0)), e.loadF32(logits, {s, v}),
                              e.f32(-INFINITY)),
                     out, {s, v});
        });
      },
      [&] {
        chunkLoop([&](Value v) {
          e.storeF32(e.loadF32(logits, {s, v}), out, {s, v});
        });
      });
  // The copy is complete before any thread rewrites a logit of the chunk.
  e.barrier();

  // The row's entries, clamped to the arrays so that a malformed entries
  // array cannot read out of bounds.
  auto clamp = [&](Value i) {
    Value x = arith::IndexCastOp::create(b, b.getIndexType(), i);
    return a.mini(a.maxi(x, zero), entries);
  };
  Value first = clamp(a.load(start, s));
  Value last = a.maxi(first, clamp(a.load(start, a.addi(s, one))));
  Value rep = a.load(repetition, s), freq = a.load(frequency, s),
        pres = a.load(presence, s);
  e.threadLoop(a.subi(last, first), [&](Value i) {
    Value entry = a.addi(first, i);
    Value token = arith::IndexCastOp::create(b, b.getIndexType(),
                                             a.load(tokens, entry));
    Value inChunk = a.andi(a.cmpi(I::sge, token, begin),
                           a.cmpi(I::slt, token, end));
    e.ifThen(inChunk, [&] {
      Value l = e.loadF32(out, {s, token});
      Value count = a.load(counts, entry);
      Value penalised = a.select(a.cmpf(arith::CmpFPredicate::OGT, l, e.f32(0)),
                                 a.div(l, rep), a.mul(l, rep));
      Value countF = arith::SIToFPOp::create(b, b.getF32Type(), count);
      penalised = a.sub(penalised, a.mul(freq, countF));
      penalised = a.sub(penalised,
                        a.select(a.cmpi(I::sgt, count, e.i32(0)), pres, e.f32(0)));
      l = a.select(a.cmpi(I::sge, count, e.i32(0)), penalised, l);
      e.storeF32(a.add(l, a.load(bias, entry)), out, {s, token});
    });
  });
  return {e.dimExpr(0, 0), ceilDivExpr(e.dimExpr(0, 1), kAdjustLogitsChunk), "1"};
}

Grid mlir::llmserve::buildLogprobsKernel(GpuKernelEmitter &e, LogprobsOp op) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  using F = arith::CmpFPredicate;
  using I = arith::CmpIPredicate;
  Value logits = e.binding(0), tokens = e.binding(1), num = e.binding(2),
        tokenLogprob = e.binding(3), topTokens = e.binding(4),
        topLogprobs = e.binding(5);
  const int64_t maxTop = op.getTopTokens().getType().getDimSize(1);
  Value vocab = e.dimSize(0, 1);
  Value zero = e.index(0);
  Value negInf = e.f32(-INFINITY);
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  Value scratchF = e.sharedBuffer({e.numWarps()}, f32);
  Value scratchI = e.sharedBuffer({e.numWarps()}, i32);
  Value s = e.blockId(0);
  Value isFirstThread = a.cmpi(I::eq, e.threadId(), zero);
  auto logit = [&](Value v) { return e.loadF32(logits, {s, v}); };

  Value n = a.load(num, s);
  // The same row for the whole block, so every thread takes the branch.
  e.ifThen(a.cmpi(I::sge, n, e.i32(0)), [&] {
    Value max = e.blockReduce(
        e.threadLoop(
            vocab, {negInf},
            [&](Value v, ValueRange m) -> SmallVector<Value> {
              return {a.max(m[0], logit(v))};
            },
            kVocabUnroll)[0],
        scratchF, [&](Value x, Value y) { return a.max(x, y); });
    Value sum = e.blockReduce(
        e.threadLoop(
            vocab, {e.f32(0)},
            [&](Value v, ValueRange acc) -> SmallVector<Value> {
              return {a.add(acc[0], a.exp(a.sub(logit(v), max)))};
            },
            kVocabUnroll)[0],
        scratchF, [&](Value x, Value y) { return a.add(x, y); });
    Value logZ = a.add(max, math::LogOp::create(b, sum));
    Value token = arith::IndexCastOp::create(b, b.getIndexType(),
                                             a.load(tokens, s));
    e.ifThen(isFirstThread, [&] {
      Value valid = a.andi(a.cmpi(I::sge, token, zero),
                           a.cmpi(I::slt, token, vocab));
      a.store(e.ifElse(valid, f32,
                       [&] { return a.sub(logit(token), logZ); },
                       [&] { return negInf; }),
              tokenLogprob, s);
    });

    // The top entries one after the other, each the best of the tokens
    // after the previous one in (logit descending, index ascending) order.
    Value top = arith::IndexCastOp::create(
        b, b.getIndexType(), arith::MinSIOp::create(b, n, e.i32(maxTop)));
    auto before = [&](Value l, Value v, Value bestL, Value bestV) {
      return arith::OrIOp::create(
                 b, a.cmpf(F::OGT, l, bestL),
                 a.andi(a.cmpf(F::OEQ, l, bestL), a.cmpi(I::slt, v, bestV)))
          .getResult();
    };
    e.forLoop(
        zero, top, 1, {e.f32(INFINITY), e.i32(-1)},
        [&](Value j, ValueRange prev) -> SmallVector<Value> {
          SmallVector<Value> partial = e.threadLoop(
              vocab, {negInf, e.i32(INT32_MAX)},
              [&](Value v, ValueRange acc) -> SmallVector<Value> {
                Value l = logit(v);
                Value vi = arith::IndexCastOp::create(b, i32, v);
                Value after = before(prev[0], prev[1], l, vi);
                Value better = a.andi(after, before(l, vi, acc[0], acc[1]));
                return {a.select(better, l, acc[0]),
                        a.select(better, vi, acc[1])};
              },
              kVocabUnroll);
          SmallVector<Value> best = e.blockReduce(
              partial, {scratchF, scratchI},
              [&](ValueRange x, ValueRange y) -> SmallVector<Value> {
                Value takeY = before(y[0], y[1], x[0], x[1]);
                return {a.select(takeY, y[0], x[0]),
                        a.select(takeY, y[1], x[1])};
              });
          // No logit left (fewer ordered logits than asked): token -1, and
          // no later pick finds one either.
          e.ifThen(isFirstThread, [&] {
            Value none = a.cmpi(I::eq, best[1], e.i32(INT32_MAX));
            a.store(a.select(none, e.i32(-1), best[1]), topTokens, {s, j});
            a.store(a.sub(best[0], logZ), topLogprobs, {s, j});
          });
          return best;
        });
    e.ifThen(isFirstThread, [&] {
      e.forLoop(top, e.index(maxTop), 1, [&](Value j) {
        a.store(e.i32(-1), topTokens, {s, j});
        a.store(negInf, topLogprobs, {s, j});
      });
    });
  });
  return {e.dimExpr(0, 0), "1", "1"};
}
