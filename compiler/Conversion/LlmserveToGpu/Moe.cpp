//===- Moe.cpp - Mixture-of-experts kernels on the GPU --------------------===//
//
// moe_router: a warp per token; its lanes score the experts, and each of
// the top_k picks is a warp argmax. expert_linear: all experts in one
// launch, a block per (expert, group of columns): the block lists the
// (token, slot) pairs routed to its expert in shared memory, then each warp
// computes its columns of every listed pair, a dot product per output whose
// lanes stride along K. moe_combine: a block per token. Every output's
// arithmetic depends only on its own row (batch invariance).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToGpu/GpuKernels.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

namespace {
/// Output columns of each warp of an expert_linear block.
constexpr int64_t kExpertColumnsPerWarp = 2;
/// Pairs an expert_linear block lists at a time.
constexpr int64_t kExpertPairChunk = 256;
/// Bytes of x and of a weight row a lane loads at once, where K allows.
constexpr int64_t kLoadBytes = 16;
} // namespace

/// Lane l scores experts l, l + 32, ...; a pick is the warp's highest
/// score ranked after the previous pick (lower, or equal at a higher index),
/// the lowest index among equals, as on the CPU.
Grid mlir::llmserve::buildMoeRouterKernel(GpuKernelEmitter &e, MoeRouterOp o) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value logits = e.binding(0), weights = e.binding(1), experts = e.binding(2);
  Value numExperts = e.dimSize(0, 1);
  int64_t topK = o.getTopK();
  bool softmax = o.getScoring() == MoeScoring::softmax;
  Value t = e.blockId(0), lane = e.laneId();
  auto lanes = [&](ValueRange init,
                   const std::function<SmallVector<Value>(Value, ValueRange)> &body) {
    return e.forLoop(lane, numExperts, kWarpSize, init, body);
  };
  Value max, sum;
  if (softmax) {
    max = lanes({e.f32(-INFINITY)}, [&](Value x, ValueRange m) -> SmallVector<Value> {
      return {a.max(m[0], e.loadF32(logits, {t, x}))};
    })[0];
    max = e.warpReduce(max, [&](Value x, Value y) { return a.max(x, y); });
    sum = lanes({e.f32(0)}, [&](Value x, ValueRange s) -> SmallVector<Value> {
      return {a.add(s[0], a.exp(a.sub(e.loadF32(logits, {t, x}), max)))};
    })[0];
    sum = e.warpReduce(sum, [&](Value x, Value y) { return a.add(x, y); });
  }
  auto score = [&](Value x) {
    return routerScore(a, e.loadF32(logits, {t, x}), o.getScoring(), max, sum);
  };
  auto i32 = [&](Value index) {
    return arith::IndexCastOp::create(b, b.getI32Type(), index);
  };
  // (score, index) a is better than b: higher, or equal at a lower index; an
  // index of -1 is no candidate.
  auto better = [&](Value s, Value i, Value bestS, Value bestI) {
    Value none = a.cmpi(arith::CmpIPredicate::slt, bestI, e.i32(0));
    Value higher = a.cmpf(arith::CmpFPredicate::OGT, s, bestS);
    Value tieLower = a.andi(a.cmpf(arith::CmpFPredicate::OEQ, s, bestS),
                            a.cmpi(arith::CmpIPredicate::slt, i, bestI));
    Value valid = a.cmpi(arith::CmpIPredicate::sge, i, e.i32(0));
    return a.andi(valid, arith::OrIOp::create(
                             b, none, arith::OrIOp::create(b, higher, tieLower)));
  };
  Value previousScore = e.f32(INFINITY), previousIndex = e.i32(-1);
  Value total = e.f32(0);
  SmallVector<Value> picked;
  Value first = a.cmpi(arith::CmpIPredicate::eq, lane, e.index(0));
  for (int64_t j = 0; j < topK; ++j) {
    SmallVector<Value> best = lanes(
        {e.f32(-INFINITY), e.i32(-1)}, [&](Value x, ValueRange best) -> SmallVector<Value> {
          Value s = score(x), i = i32(x);
          Value after = ranksAfter(a, s, i, previousScore, previousIndex);
          Value take = a.andi(after, better(s, i, best[0], best[1]));
          return {a.select(take, s, best[0]), a.select(take, i, best[1])};
        });
    best = e.warpReduce(best, [&](ValueRange x, ValueRange y) -> SmallVector<Value> {
      Value takeY = better(y[0], y[1], x[0], x[1]);
      return {a.select(takeY, y[0], x[0]), a.select(takeY, y[1], x[1])};
    });
    previousScore = best[0];
    previousIndex = best[1];
    total = a.add(total, best[0]);
    picked.push_back(best[0]);
    e.ifThen(first, [&] { a.store(best[1], experts, {t, e.index(j)}); });
  }
  e.ifThen(first, [&] {
    for (int64_t j = 0; j < topK; ++j)
      a.store(o.getNormalized() ? a.div(picked[j], total) : picked[j], weights,
              {t, e.index(j)});
  });
  return {e.dimExpr(0, 0), "1", "1"};
}

/// Block (x, y): expert y's columns [cx, cx + c) for c = warps x
/// kExpertColumnsPerWarp. Thread 0 lists the expert's pairs of each chunk
/// of kExpertPairChunk in shared memory; then warp w computes columns
/// cx + w * kExpertColumnsPerWarp + i of every listed pair, its lanes
/// reading 16 bytes of x and of each column's weights at a time (one
/// element where K is no multiple of 16 bytes' worth).
Grid mlir::llmserve::buildExpertLinearKernel(GpuKernelEmitter &e,
                                             ExpertLinearOp o) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  auto weightType = cast<RankedTensorType>(o.getWeight().getType());
  int64_t numExperts = weightType.getDimSize(0), n = weightType.getDimSize(1),
          depth = weightType.getDimSize(2);
  int64_t topK = cast<RankedTensorType>(o.getExperts().getType()).getDimSize(1);
  int64_t columnsPerBlock = e.numWarps() * kExpertColumnsPerWarp;
  Value x = e.binding(0);
  Value w = e.binding(1, {e.index(numExperts * n), e.index(depth)});
  Value experts = e.binding(2), y = e.binding(3);
  Value pairs = a.muli(e.dimSize(2, 0), e.index(topK));
  Value expert = e.blockId(1);
  Value expertId = arith::IndexCastOp::create(b, b.getI32Type(), expert);
  Value weightRow0 = a.muli(expert, e.index(n));
  Value warpColumn0 = a.addi(a.muli(e.blockId(0), e.index(columnsPerBlock)),
                             a.muli(e.warpId(), e.index(kExpertColumnsPerWarp)));
  Value inputRows = e.sharedBuffer({kExpertPairChunk}, b.getI32Type());
  Value resultRows = e.sharedBuffer({kExpertPairChunk}, b.getI32Type());
  Value listed = e.sharedBuffer({1}, b.getI32Type());
  Value zero = e.index(0), one = e.index(1);
  Value leader = a.cmpi(arith::CmpIPredicate::eq, e.threadId(), zero);
  e.waitForPrerequisites();
  e.forLoop(zero, pairs, kExpertPairChunk, [&](Value chunk) {
    Value chunkEnd = a.mini(a.addi(chunk, e.index(kExpertPairChunk)), pairs);
    e.ifThen(leader, [&] {
      Value count = e.forLoop(
          chunk, chunkEnd, 1, {zero}, [&](Value pair, ValueRange count) -> SmallVector<Value> {
            Value token = a.divui(pair, e.index(topK));
            Value slot = a.remui(pair, e.index(topK));
            Value mine = a.cmpi(arith::CmpIPredicate::eq,
                                a.load(experts, {token, slot}), expertId);
            e.ifThen(mine, [&] {
              Value row = o.getPerSlot() ? pair : token;
              a.store(arith::IndexCastOp::create(b, b.getI32Type(), row), inputRows,
                      count[0]);
              a.store(arith::IndexCastOp::create(b, b.getI32Type(), pair), resultRows,
                      count[0]);
            });
            return {a.select(mine, a.addi(count[0], one), count[0])};
          })[0];
      a.store(arith::IndexCastOp::create(b, b.getI32Type(), count), listed, zero);
    });
    e.barrier();
    Value count = a.toIndex(a.load(listed, zero));
    // A lane reads `width` consecutive elements of x and of each column's
    // weights at a time: 16 bytes where K allows.
    int64_t elementBytes = weightType.getElementTypeBitWidth() / 8;
    int64_t width = depth % (kLoadBytes / elementBytes) == 0 ? kLoadBytes / elementBytes : 1;
    auto load = [&](Value memref, Value r, Value k) {
      SmallVector<Value> elements;
      if (width == 1)
        return SmallVector<Value>{e.loadF32(memref, {r, k})};
      auto type = cast<MemRefType>(memref.getType());
      Value v = vector::LoadOp::create(
          b, VectorType::get({width}, type.getElementType()), memref, ValueRange{r, k},
          /*nontemporal=*/false, llvm::MaybeAlign(kLoadBytes));
      for (int64_t t = 0; t < width; ++t) {
        Value element = vector::ExtractOp::create(b, v, t);
        elements.push_back(element.getType().isF32()
                               ? element
                               : arith::ExtFOp::create(b, b.getF32Type(), element));
      }
      return elements;
    };
    e.forLoop(zero, count, 1, [&](Value i) {
      Value row = a.toIndex(a.load(inputRows, i));
      Value outRow = a.toIndex(a.load(resultRows, i));
      // The warp's columns past N read row N - 1 and store nothing, so that
      // every lane reaches the shuffles.
      SmallVector<Value> columns, weightRows;
      for (int64_t c = 0; c < kExpertColumnsPerWarp; ++c) {
        columns.push_back(a.addi(warpColumn0, e.index(c)));
        weightRows.push_back(a.addi(weightRow0, a.mini(columns.back(), e.index(n - 1))));
      }
      SmallVector<Value> partial = e.forLoop(
          a.muli(e.laneId(), e.index(width)), e.index(depth), kWarpSize * width,
          SmallVector<Value>(kExpertColumnsPerWarp, e.f32(0)),
          [&](Value k, ValueRange acc) -> SmallVector<Value> {
            SmallVector<Value> xs = load(x, row, k), next;
            for (int64_t c = 0; c < kExpertColumnsPerWarp; ++c) {
              SmallVector<Value> ws = load(w, weightRows[c], k);
              Value sum = acc[c];
              for (int64_t t = 0; t < width; ++t)
                sum = a.add(sum, a.mul(xs[t], ws[t]));
              next.push_back(sum);
            }
            return next;
          });
      for (int64_t c = 0; c < kExpertColumnsPerWarp; ++c) {
        Value sum = e.warpReduce(partial[c], [&](Value p, Value q) { return a.add(p, q); });
        e.ifThen(a.andi(a.cmpi(arith::CmpIPredicate::eq, e.laneId(), zero),
                        a.cmpi(arith::CmpIPredicate::ult, columns[c], e.index(n))),
                 [&] { e.storeF32(sum, y, {outRow, columns[c]}); });
      }
    });
    // The list is rewritten by the next chunk.
    e.barrier();
  });
  return {std::to_string((n + columnsPerBlock - 1) / columnsPerBlock),
          std::to_string(numExperts), "1"};
}

/// result[t] = sum_j weights[t, j] * input[t * k + j], j in order.
Grid mlir::llmserve::buildMoeCombineKernel(GpuKernelEmitter &e, MoeCombineOp o) {
  Arith &a = e.arith();
  Value input = e.binding(0), weights = e.binding(1), y = e.binding(2);
  int64_t topK = cast<RankedTensorType>(o.getWeights().getType()).getDimSize(1);
  Value t = e.blockId(0);
  SmallVector<Value> w;
  for (int64_t j = 0; j < topK; ++j)
    w.push_back(a.load(weights, {t, e.index(j)}));
  Value first = a.muli(t, e.index(topK));
  e.threadLoop(e.dimSize(0, 1), [&](Value c) {
    Value sum = e.f32(0);
    for (int64_t j = 0; j < topK; ++j)
      sum = a.add(sum, a.mul(w[j], e.loadF32(input, {a.addi(first, e.index(j)), c})));
    e.storeF32(sum, y, {t, c});
  });
  return {e.dimExpr(1, 0), "1", "1"};
}
