//===- Logits.cpp - Logit adjustments and log-probs on the CPU ------------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

/// Each row as its sequence samples from it: the allowed-token mask applied
/// while the row is copied, then its entries' penalties (vLLM semantics) and
/// biases.
Grid mlir::llmserve::buildAdjustLogitsKernel(CpuKernelEmitter &e) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  using I = arith::CmpIPredicate;
  Value logits = e.binding(0), start = e.binding(1), tokens = e.binding(2),
        counts = e.binding(3), bias = e.binding(4), presence = e.binding(5),
        frequency = e.binding(6), repetition = e.binding(7),
        maskIndex = e.binding(8), mask = e.binding(9), out = e.binding(10);
  Value vocab = e.dimSize(0, 1), entries = e.dimSize(2, 0),
        maskWords = e.dimSize(9, 0);
  Value zero = e.index(0), one = e.index(1), fzero = e.f32(0);
  Value rowWords = a.divui(a.addi(vocab, e.index(31)), e.index(32));
  auto [begin, end] = e.rowRange(e.dimSize(0, 0), kRowsPerGroup);
  e.forLoop(begin, end, 1, [&](Value s) {
    // A mask row past the end of the array masks nothing.
    Value row = a.toIndex(a.load(maskIndex, s));
    Value masked = a.andi(
        a.cmpi(I::sge, row, zero),
        a.cmpi(I::sle, a.muli(a.addi(row, one), rowWords), maskWords));
    e.ifElse(
        masked,
        [&] {
          Value rowStart = a.muli(row, rowWords);
          e.forLoop(zero, vocab, 1, [&](Value v) {
            Value word = a.load(mask, a.addi(rowStart, a.divui(v, e.index(32))));
            Value shift = arith::IndexCastOp::create(b, b.getI32Type(),
                                                     a.remui(v, e.index(32)));
            Value bit = a.andi(arith::ShRUIOp::create(b, word, shift), e.i32(1));
            Value allowed = a.cmpi(I::ne, bit, e.i32(0));
            a.store(a.select(allowed, a.load(logits, {s, v}), e.f32(-INFINITY)),
                    out, {s, v});
          });
        },
        [&] {
          e.forLoop(zero, vocab, 1, [&](Value v) {
            a.store(a.load(logits, {s, v}), out, {s, v});
          });
        });
    Value rep = a.load(repetition, s), freq = a.load(frequency, s),
          pres = a.load(presence, s);
    // The row's entries, clamped to the arrays so that a malformed
    // entries array cannot read out of bounds.
    auto clamp = [&](Value i) {
      return a.mini(a.maxi(a.toIndex(i), zero), entries);
    };
    Value first = clamp(a.load(start, s));
    Value last = a.maxi(first, clamp(a.load(start, a.addi(s, one))));
    e.forLoop(first, last, 1, [&](Value entry) {
      Value token = a.toIndex(a.load(tokens, entry));
      Value inVocab = a.andi(a.cmpi(I::sge, token, zero),
                             a.cmpi(I::slt, token, vocab));
      e.ifThen(inVocab, [&] {
        Value l = a.load(out, {s, token});
        Value count = a.load(counts, entry);
        Value penalised = a.select(
            a.cmpf(arith::CmpFPredicate::OGT, l, fzero), a.div(l, rep),
            a.mul(l, rep));
        Value countF = arith::SIToFPOp::create(b, b.getF32Type(), count);
        penalised = a.sub(penalised, a.mul(freq, countF));
        penalised = a.sub(penalised, a.select(a.cmpi(I::sgt, count, e.i32(0)),
                                              pres, fzero));
        l = a.select(a.cmpi(I::sge, count, e.i32(0)), penalised, l);
        a.store(a.add(l, a.load(bias, entry)), out, {s, token});
      });
    });
  });
  return e.rowGrid(0, kRowsPerGroup);
}

/// For each row that asks (num_logprobs >= 0): the log-softmax of its
/// sampled token, and of its num_logprobs largest logits (at most K).
Grid mlir::llmserve::buildLogprobsKernel(CpuKernelEmitter &e, LogprobsOp o) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value logits = e.binding(0), tokens = e.binding(1), num = e.binding(2),
        tokenLogprob = e.binding(3), topTokens = e.binding(4),
        topLogprobs = e.binding(5);
  int64_t maxTop = o.getTopTokens().getType().getDimSize(1);
  Value vocab = e.dimSize(0, 1);
  Value zero = e.index(0);
  Value negInf = e.f32(-INFINITY);
  // A row's top entries so far, sorted (logit descending, index ascending).
  Value topValues = memref::AllocaOp::create(
      b, MemRefType::get({std::max<int64_t>(maxTop, 1)}, b.getF32Type()));
  Value topIndices = memref::AllocaOp::create(
      b, MemRefType::get({std::max<int64_t>(maxTop, 1)}, b.getIndexType()));
  auto [begin, end] = e.rowRange(e.dimSize(0, 0), kRowsPerGroup);
  e.forLoop(begin, end, 1, [&](Value s) {
    Value n = a.toIndex(a.load(num, s));
    e.ifThen(a.cmpi(arith::CmpIPredicate::sge, n, zero), [&] {
      Value max = e.forLoop(zero, vocab, 1, {negInf},
                            [&](Value v, ValueRange m) -> SmallVector<Value> {
                              return {a.max(m[0], a.load(logits, {s, v}))};
                            })[0];
      Value sum = e.forLoop(
          zero, vocab, 1, {e.f32(0)},
          [&](Value v, ValueRange acc) -> SmallVector<Value> {
            return {a.add(acc[0], a.exp(a.sub(a.load(logits, {s, v}), max)))};
          })[0];
      Value logZ = a.add(max, math::LogOp::create(b, sum));
      Value token = a.toIndex(a.load(tokens, s));
      Value valid = arith::AndIOp::create(
          b, a.cmpi(arith::CmpIPredicate::sge, token, zero),
          a.cmpi(arith::CmpIPredicate::slt, token, vocab));
      a.store(e.ifElse(
                  valid, b.getF32Type(),
                  [&] {
                    return a.sub(a.load(logits, {s, token}), logZ);
                  },
                  [&] { return negInf; }),
              tokenLogprob, s);
      // The n largest in (logit descending, index ascending) order, in one
      // pass: a logit that ranks before the last of the sorted list (or any
      // while it has room) goes in after every equal one, the last dropping
      // out of a full list. NaN ranks nowhere.
      Value top = arith::MinSIOp::create(b, n, e.index(maxTop));
      Value one = e.index(1);
      Value yes = arith::ConstantIntOp::create(b, b.getI1Type(), 1);
      Value listed = e.forLoop(
          zero, vocab, 1, {zero},
          [&](Value v, ValueRange size) -> SmallVector<Value> {
            Value l = a.load(logits, {s, v});
            Value room = a.cmpi(arith::CmpIPredicate::slt, size[0], top);
            Value last = a.load(topValues, a.maxi(a.subi(size[0], one), zero));
            Value enters = a.andi(
                a.andi(a.cmpf(arith::CmpFPredicate::ORD, l, l),
                       a.cmpi(arith::CmpIPredicate::sgt, top, zero)),
                arith::OrIOp::create(b, room,
                                     a.cmpf(arith::CmpFPredicate::OGT, l, last)));
            Value grown = a.select(room, a.addi(size[0], one), size[0]);
            return {e.ifElse(
                enters, b.getIndexType(),
                [&] {
                  // Moves the entries below l down a place, from the end.
                  Value at = e.forLoop(
                      zero, a.subi(grown, one), 1, {a.subi(grown, one), yes},
                      [&](Value, ValueRange st) -> SmallVector<Value> {
                        Value above = a.subi(st[0], one);
                        Value moves = a.andi(
                            st[1], a.cmpf(arith::CmpFPredicate::OLT,
                                          a.load(topValues, above), l));
                        e.ifThen(moves, [&] {
                          a.store(a.load(topValues, above), topValues, st[0]);
                          a.store(a.load(topIndices, above), topIndices, st[0]);
                        });
                        return {a.select(moves, above, st[0]), moves};
                      })[0];
                  a.store(l, topValues, at);
                  a.store(v, topIndices, at);
                  return grown;
                },
                [&] { return size[0]; })};
          })[0];
      // Past the listed ones (a row of fewer ordered logits than asked):
      // token -1, as no logit.
      e.forLoop(zero, top, 1, [&](Value j) {
        SmallVector<Value> entry = e.ifElse(
            a.cmpi(arith::CmpIPredicate::slt, j, listed),
            TypeRange{b.getIndexType(), b.getF32Type()},
            [&]() -> SmallVector<Value> {
              return {a.load(topIndices, j), a.load(topValues, j)};
            },
            [&]() -> SmallVector<Value> { return {e.index(-1), negInf}; });
        a.store(arith::IndexCastOp::create(b, b.getI32Type(), entry[0]),
                topTokens, {s, j});
        a.store(a.sub(entry[1], logZ), topLogprobs, {s, j});
      });
      e.forLoop(top, e.index(maxTop), 1, [&](Value j) {
        a.store(e.i32(-1), topTokens, {s, j});
        a.store(negInf, topLogprobs, {s, j});
      });
    });
  });
  return e.rowGrid(0, kRowsPerGroup);
}
