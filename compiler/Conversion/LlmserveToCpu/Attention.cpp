//===- Attention.cpp - paged_attention on the CPU -------------------------===//

#include "compiler/Conversion/LlmserveToCpu/CpuKernels.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

/// The query heads one workgroup attends with: the largest divisor of the
/// GQA group of at most 4, so that each key and value row read from the
/// cache serves that many heads, while their accumulators still fit the
/// vector registers and a decode row still spreads over several workgroups.
static int64_t headsPerWorkgroup(int64_t group) {
  for (int64_t g = std::min<int64_t>(group, 4); g > 1; --g)
    if (group % g == 0)
      return g;
  return 1;
}

/// One workgroup per (query row, group of query heads sharing a KV head):
/// the row's sequence from query_start, then each head's online softmax
/// over the keys of its causal (and sliding-window) range, read through the
/// block table once for all of the workgroup's heads. Each head's
/// arithmetic is that of a head alone.
Grid mlir::llmserve::buildPagedAttentionKernel(CpuKernelEmitter &e,
                                               PagedAttentionOp o) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  auto cacheType = cast<RankedTensorType>(o.getKeyCache().getType());
  int64_t blockSize = cacheType.getDimSize(1);
  int64_t kvHeads = cacheType.getDimSize(2), headDim = cacheType.getDimSize(3);
  int64_t heads = o.getNumHeads();
  int64_t group = heads / kvHeads;
  int64_t together = headsPerWorkgroup(group);
  std::optional<uint64_t> window = o.getSlidingWindow();
  float scale = o.getScale().convertToFloat();
  std::optional<APFloat> softcap = o.getSoftcap();

  Value q = e.binding(0), keys = e.cacheSlots(1), values = e.cacheSlots(2),
        blockTable = e.binding(3), contextLen = e.binding(4),
        queryStart = e.binding(5), out = e.binding(6), lse = e.binding(7);
  Value numSeqs = e.dimSize(4, 0);
  Value zero = e.index(0), one = e.index(1);
  Value dim = e.index(headDim);

  Value row = e.workgroupId(0), firstHead = a.muli(e.workgroupId(1), e.index(together));
  e.ifThen(a.cmpi(arith::CmpIPredicate::ult, row, e.dimSize(0, 0)), [&] {
    // The sequence owning the row: the last s with query_start[s] <= row.
    Value seq = e.forLoop(
        zero, numSeqs, 1, {zero},
        [&](Value s, ValueRange found) -> SmallVector<Value> {
          Value start = a.toIndex(a.load(queryStart, s));
          return {a.select(a.cmpi(arith::CmpIPredicate::ule, start, row), s,
                           found[0])};
        })[0];
    Value qBegin = a.toIndex(a.load(queryStart, seq));
    Value qEnd = a.toIndex(a.load(queryStart, a.addi(seq, one)));
    Value context = a.toIndex(a.load(contextLen, seq));
    // Causal: the row's own position is the last key it sees.
    Value position =
        a.addi(a.subi(context, a.subi(qEnd, qBegin)), a.subi(row, qBegin));
    Value first = zero;
    if (window) {
      Value w = e.index(static_cast<int64_t>(*window) - 1);
      first = a.select(a.cmpi(arith::CmpIPredicate::ugt, position, w),
                       a.subi(position, w), zero);
    }
    Value kvHead = a.divui(firstHead, e.index(group));
    Value kvBase = a.muli(kvHead, dim);

    // head_dim as `chunks` vectors of `width` lanes.
    int64_t width = headDim % kVectorWidth == 0 ? kVectorWidth
                    : headDim % 8 == 0          ? 8
                    : headDim % 4 == 0          ? 4
                                                : 1;
    int64_t chunks = headDim / width;
    auto vectorType = VectorType::get({width}, b.getF32Type());
    auto loadVector = [&](Value memref, Value row, Value column) -> Value {
      return vector::LoadOp::create(b, vectorType, memref,
                                    ValueRange{row, column});
    };
    // A key or value row's piece as f32: FP8 codes are decoded and scaled
    // by the KV head's scale.
    bool fp8 = o.getKeyScale().has_value();
    Value keyScale = fp8 ? kvCacheScale(b, *o.getKeyScale(), kvHead) : nullptr;
    Value valueScale = fp8 ? kvCacheScale(b, *o.getValueScale(), kvHead) : nullptr;
    auto codesType = VectorType::get({width}, b.getI8Type());
    auto loadCached = [&](Value cache, Value cacheScale, Value slot,
                          Value column) -> Value {
      if (!fp8)
        return loadVector(cache, slot, column);
      return decodeE4M3(b,
                        vector::LoadOp::create(b, codesType, cache,
                                               ValueRange{slot, column}),
                        cacheScale);
    };
    auto chunkColumn = [&](Value base, int64_t c) {
      return a.addi(base, e.index(c * width));
    };
    // query[h][c]: chunk c of the workgroup's head h.
    SmallVector<Value> qBase;
    SmallVector<SmallVector<Value>> query(together);
    for (int64_t h = 0; h < together; ++h) {
      qBase.push_back(a.muli(a.addi(firstHead, e.index(h)), dim));
      for (int64_t c = 0; c < chunks; ++c)
        query[h].push_back(loadVector(q, row, chunkColumn(qBase[h], c)));
    }

    // Online softmax over the keys in tiles of one KV block, each head on
    // its own: the scores of a tile first (each a fixed-order vector dot
    // product; -inf for the tile's keys outside the row's range), their
    // exponentials as one vector, one rescale of the running sums if the
    // tile's maximum is larger, then the weighted values in key order.
    // Tiles follow the key positions, never the batch. The loop state is
    // each head's maximum, sum and `chunks` accumulators, in turn.
    Value bs = e.index(blockSize);
    Value last = a.addi(position, one);
    Value firstTile = a.muli(a.divui(first, bs), bs);
    auto scoresType = MemRefType::get({together, blockSize}, b.getF32Type());
    auto tileType = VectorType::get({blockSize}, b.getF32Type());
    Value scores = memref::AllocaOp::create(b, scoresType);
    Value weights = memref::AllocaOp::create(b, scoresType);
    Value noScores = arith::ConstantOp::create(
        b, tileType, DenseElementsAttr::get(tileType, -INFINITY));
    Value zeros = arith::ConstantOp::create(
        b, vectorType, DenseElementsAttr::get(vectorType, 0.0f));
    const int64_t stride = 2 + chunks;
    SmallVector<Value> init;
    for (int64_t h = 0; h < together; ++h) {
      init.append({e.f32(-INFINITY), e.f32(0)});
      init.append(chunks, zeros);
    }
    SmallVector<Value> state = e.forLoop(
        firstTile, last, blockSize, init,
        [&](Value tile, ValueRange s) -> SmallVector<Value> {
          Value block = a.toIndex(a.load(blockTable, {seq, a.divui(tile, bs)}));
          Value slot0 =
              a.subi(a.muli(block, bs), tile); // slot of key j: slot0 + j
          Value lo = a.maxi(first, tile);
          Value hi = a.mini(last, a.addi(tile, bs));
          SmallVector<Value> noMax(together, e.f32(-INFINITY));
          for (int64_t h = 0; h < together; ++h)
            vector::StoreOp::create(b, noScores, scores, ValueRange{e.index(h), zero});
          SmallVector<Value> tileMax = e.forLoop(
              lo, hi, 1, noMax,
              [&](Value j, ValueRange m) -> SmallVector<Value> {
                Value slot = a.addi(slot0, j);
                SmallVector<Value> key;
                for (int64_t c = 0; c < chunks; ++c)
                  key.push_back(loadCached(keys, keyScale, slot,
                                           chunkColumn(kvBase, c)));
                SmallVector<Value> next;
                for (int64_t h = 0; h < together; ++h) {
                  Value products = zeros;
                  for (int64_t c = 0; c < chunks; ++c)
                    products = vector::FMAOp::create(b, query[h][c], key[c], products);
                  Value dot = vector::ReductionOp::create(
                      b, vector::CombiningKind::ADD, products,
                      arith::FastMathFlags::reassoc);
                  Value score = a.mul(dot, e.f32(scale));
                  if (softcap) {
                    Value cap = e.f32(softcap->convertToDouble());
                    score = a.mul(cap, math::TanhOp::create(b, a.div(score, cap)));
                  }
                  a.store(score, scores, {e.index(h), a.subi(j, tile)});
                  next.push_back(a.max(m[h], score));
                }
                return next;
              });
          SmallVector<Value> maxNew, alphas, result;
          for (int64_t h = 0; h < together; ++h) {
            Value runningMax = s[h * stride];
            maxNew.push_back(a.max(runningMax, tileMax[h]));
            // The running sums rescale only when the maximum grows.
            Value alpha = e.ifElse(
                a.cmpf(arith::CmpFPredicate::OGT, maxNew[h], runningMax), b.getF32Type(),
                [&] { return a.exp(a.sub(runningMax, maxNew[h])); },
                [&] { return e.f32(1); });
            Value tileScores = vector::LoadOp::create(b, tileType, scores,
                                                      ValueRange{e.index(h), zero});
            Value tileWeights = a.exp(a.sub(
                tileScores, vector::BroadcastOp::create(b, tileType, maxNew[h])));
            vector::StoreOp::create(b, tileWeights, weights, ValueRange{e.index(h), zero});
            Value tileSum = vector::ReductionOp::create(
                b, vector::CombiningKind::ADD, tileWeights,
                arith::FastMathFlags::reassoc);
            alphas.push_back(vector::BroadcastOp::create(b, vectorType, alpha));
            result.append({maxNew[h], a.add(a.mul(s[h * stride + 1], alpha), tileSum)});
          }
          SmallVector<Value> rescaled;
          for (int64_t h = 0; h < together; ++h)
            for (int64_t c = 0; c < chunks; ++c)
              rescaled.push_back(a.mul(s[h * stride + 2 + c], alphas[h]));
          SmallVector<Value> sums = e.forLoop(
              lo, hi, 1, rescaled,
              [&](Value j, ValueRange acc) -> SmallVector<Value> {
                Value slot = a.addi(slot0, j);
                SmallVector<Value> value;
                for (int64_t c = 0; c < chunks; ++c)
                  value.push_back(loadCached(values, valueScale, slot,
                                             chunkColumn(kvBase, c)));
                SmallVector<Value> next;
                for (int64_t h = 0; h < together; ++h) {
                  Value weight = vector::BroadcastOp::create(
                      b, vectorType, a.load(weights, {e.index(h), a.subi(j, tile)}));
                  for (int64_t c = 0; c < chunks; ++c)
                    next.push_back(
                        vector::FMAOp::create(b, weight, value[c], acc[h * chunks + c]));
                }
                return next;
              });
          // Back in the loop state's order: each head's maximum, sum and sums.
          SmallVector<Value> ordered;
          for (int64_t h = 0; h < together; ++h) {
            ordered.append({result[2 * h], result[2 * h + 1]});
            ordered.append(sums.begin() + h * chunks, sums.begin() + (h + 1) * chunks);
          }
          return ordered;
        });
    for (int64_t h = 0; h < together; ++h) {
      Value sum = vector::BroadcastOp::create(b, vectorType, state[h * stride + 1]);
      for (int64_t c = 0; c < chunks; ++c)
        vector::StoreOp::create(b, a.div(state[h * stride + 2 + c], sum), out,
                                ValueRange{row, chunkColumn(qBase[h], c)});
      a.store(a.add(state[h * stride], math::LogOp::create(b, state[h * stride + 1])), lse,
              {row, a.addi(firstHead, e.index(h))});
    }
  });
  return Grid{e.dimExpr(0, 0), std::to_string(heads / together), "1"};
}
