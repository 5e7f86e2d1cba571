//===- Moe.cpp - Mixture-of-experts kernels on the CPU --------------------===//
//
// moe_router and moe_combine take kRowsPerGroup tokens a workgroup, each by
// scalar loops over its experts or slots. expert_linear runs every expert in
// one launch: a workgroup takes one expert and a block of output columns,
// gathers the (token, slot) pairs routed to the expert, and computes them in
// tiles of dotTile, so the expert's weight block is read once for all of
// them while it is in cache.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

namespace {
/// Output columns of an expert_linear workgroup.
constexpr int64_t kExpertColumnsPerGroup = 64;
/// (token, slot) pairs an expert_linear workgroup scans at a time; those
/// routed to its expert are gathered into a list of at most this many.
constexpr int64_t kExpertSlotChunk = 256;
/// Rows x columns of expert_linear's register tiles (1 x 8 for lone rows).
constexpr int64_t kExpertTileRows = 4;
constexpr int64_t kExpertTileColumns = 4;
constexpr int64_t kExpertSingleRowColumns = 8;
} // namespace

/// For each token: the scores (softmax or sigmoid) of its logits, then the
/// top_k picked one at a time: the next is the highest score ranked after
/// the previous pick (lower scores, or the same score at a higher index),
/// the lowest index among equals.
Grid mlir::llmserve::buildMoeRouterKernel(CpuKernelEmitter &e, MoeRouterOp o) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value logits = e.binding(0), weights = e.binding(1), experts = e.binding(2);
  Value numExperts = e.dimSize(0, 1);
  int64_t topK = o.getTopK();
  bool softmax = o.getScoring() == MoeScoring::softmax;
  Value zero = e.index(0);
  auto [begin, end] = e.rowRange(e.dimSize(0, 0), kRowsPerGroup);
  e.forLoop(begin, end, 1, [&](Value t) {
    // A softmax needs the row's largest logit and sum of exponentials.
    Value max, sum;
    if (softmax) {
      max = e.forLoop(zero, numExperts, 1, {e.f32(-INFINITY)},
                      [&](Value x, ValueRange m) -> SmallVector<Value> {
                        return {a.max(m[0], a.load(logits, {t, x}))};
                      })[0];
      sum = e.forLoop(zero, numExperts, 1, {e.f32(0)},
                      [&](Value x, ValueRange s) -> SmallVector<Value> {
                        return {a.add(s[0], a.exp(a.sub(a.load(logits, {t, x}), max)))};
                      })[0];
    }
    auto score = [&](Value x) {
      return routerScore(a, a.load(logits, {t, x}), o.getScoring(), max, sum);
    };
    // The previous pick (score, index); the first pick ranks after +inf.
    Value previousScore = e.f32(INFINITY), previousIndex = e.index(-1);
    Value total = e.f32(0);
    SmallVector<Value> picked;
    for (int64_t j = 0; j < topK; ++j) {
      SmallVector<Value> best = e.forLoop(
          zero, numExperts, 1, {e.f32(-INFINITY), e.index(-1)},
          [&](Value x, ValueRange best) -> SmallVector<Value> {
            Value s = score(x);
            Value after = ranksAfter(a, s, x, previousScore, previousIndex);
            // Strictly greater: the lowest index wins among equals.
            Value better = a.andi(
                after, arith::OrIOp::create(
                           b, a.cmpf(arith::CmpFPredicate::OGT, s, best[0]),
                           a.cmpi(arith::CmpIPredicate::slt, best[1], zero)));
            return {a.select(better, s, best[0]), a.select(better, x, best[1])};
          });
      previousScore = best[0];
      previousIndex = best[1];
      total = a.add(total, best[0]);
      picked.push_back(best[0]);
      Value id = arith::IndexCastOp::create(b, b.getI32Type(), best[1]);
      a.store(id, experts, {t, e.index(j)});
    }
    for (int64_t j = 0; j < topK; ++j)
      a.store(o.getNormalized() ? a.div(picked[j], total) : picked[j], weights,
              {t, e.index(j)});
  });
  return e.rowGrid(0, kRowsPerGroup);
}

/// Workgroup (x, y) computes output columns [64x, 64x + 64) of the pairs
/// routed to expert y. It scans the pairs kExpertSlotChunk at a time,
/// listing those of its expert (their input row and their result row), then
/// computes the list in tiles of rows x columns; i8 values are converted to
/// f32 as they are read and each sum is times its row's scale.
Grid mlir::llmserve::buildExpertLinearKernel(CpuKernelEmitter &e,
                                             ExpertLinearOp o) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  auto weightType = cast<RankedTensorType>(o.getWeight().getType());
  int64_t numExperts = weightType.getDimSize(0), n = weightType.getDimSize(1),
          depth = weightType.getDimSize(2);
  int64_t topK = cast<RankedTensorType>(o.getExperts().getType()).getDimSize(1);
  Value x = e.binding(0);
  // Expert e's row c is row e * N + c of the stacked weight (and of its
  // scales, for i8 values).
  Value w = e.binding(1, {e.index(numExperts * n), e.index(depth)});
  int expertsBinding = o.getScales() ? 3 : 2;
  Value scales = o.getScales() ? e.binding(2, {e.index(numExperts * n)}) : Value();
  Value experts = e.binding(expertsBinding), y = e.binding(expertsBinding + 1);
  Value pairs = a.muli(e.dimSize(expertsBinding, 0), e.index(topK));
  Value expert = e.workgroupId(1);
  Value expertId = arith::IndexCastOp::create(b, b.getI32Type(), expert);
  Value nBegin = a.muli(e.workgroupId(0), e.index(kExpertColumnsPerGroup));
  Value nEnd = a.mini(a.addi(nBegin, e.index(kExpertColumnsPerGroup)), e.index(n));
  Value weightRow0 = a.muli(expert, e.index(n));

  auto listType = MemRefType::get({kExpertSlotChunk}, b.getIndexType());
  Value inputRows = memref::AllocaOp::create(b, listType);
  Value resultRows = memref::AllocaOp::create(b, listType);
  Value zero = e.index(0), one = e.index(1);
  e.forLoop(zero, pairs, kExpertSlotChunk, [&](Value chunk) {
    Value chunkEnd = a.mini(a.addi(chunk, e.index(kExpertSlotChunk)), pairs);
    Value count = e.forLoop(
        chunk, chunkEnd, 1, {zero}, [&](Value pair, ValueRange count) -> SmallVector<Value> {
          Value token = a.divui(pair, e.index(topK));
          Value slot = a.remui(pair, e.index(topK));
          Value mine = a.cmpi(arith::CmpIPredicate::eq,
                              a.load(experts, {token, slot}), expertId);
          e.ifThen(mine, [&] {
            a.store(o.getPerSlot() ? pair : token, inputRows, count[0]);
            a.store(pair, resultRows, count[0]);
          });
          return {a.select(mine, a.addi(count[0], one), count[0])};
        })[0];
    forEachTile(e, zero, count, kExpertTileRows, [&](Value i0, int64_t mr) {
      SmallVector<Value> rows, outRows;
      for (int64_t i = 0; i < mr; ++i) {
        Value at = a.addi(i0, e.index(i));
        rows.push_back(a.load(inputRows, at));
        outRows.push_back(a.load(resultRows, at));
      }
      forEachTile(e, nBegin, nEnd,
                  mr == 1 ? kExpertSingleRowColumns : kExpertTileColumns,
                  [&](Value n0, int64_t nr) {
        SmallVector<Value> cols;
        for (int64_t j = 0; j < nr; ++j)
          cols.push_back(a.addi(weightRow0, a.addi(n0, e.index(j))));
        SmallVector<Value> sums = dotTile(e, x, rows, w, cols);
        for (int64_t i = 0; i < mr; ++i)
          for (int64_t j = 0; j < nr; ++j) {
            Value sum = sums[i * nr + j];
            if (scales)
              sum = a.mul(sum, a.load(scales, cols[j]));
            a.store(sum, y, {outRows[i], a.addi(n0, e.index(j))});
          }
      });
    });
  });
  return {std::to_string((n + kExpertColumnsPerGroup - 1) / kExpertColumnsPerGroup),
          std::to_string(numExperts), "1"};
}

/// result[t] = sum_j weights[t, j] * input[t * k + j], j in order.
Grid mlir::llmserve::buildMoeCombineKernel(CpuKernelEmitter &e, MoeCombineOp o) {
  Arith &a = e.arith();
  Value input = e.binding(0), weights = e.binding(1), y = e.binding(2);
  int64_t topK = cast<RankedTensorType>(o.getWeights().getType()).getDimSize(1);
  Value width = e.dimSize(0, 1);
  auto [begin, end] = e.rowRange(e.dimSize(1, 0), kRowsPerGroup);
  e.forLoop(begin, end, 1, [&](Value t) {
    SmallVector<Value> w;
    for (int64_t j = 0; j < topK; ++j)
      w.push_back(a.load(weights, {t, e.index(j)}));
    Value first = a.muli(t, e.index(topK));
    e.forLoop(e.index(0), width, 1, [&](Value c) {
      Value sum = e.f32(0);
      for (int64_t j = 0; j < topK; ++j)
        sum = a.add(sum, a.mul(w[j], a.load(input, {a.addi(first, e.index(j)), c})));
      a.store(sum, y, {t, c});
    });
  });
  return e.rowGrid(1, kRowsPerGroup);
}
