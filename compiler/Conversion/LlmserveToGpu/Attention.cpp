//===- Attention.cpp - paged_attention on the GPU -------------------------===//
//
// One kernel for any mix of prefill chunks and decode tokens. A block (4
// warps) takes a tile of up to BQ consecutive query rows of one sequence and
// one KV head, and all the query heads that share that KV head (GQA): BQ is
// chosen so that a tile holds about 16 (row, head) items. Block x indexes the
// tiles of all sequences in order (a sequence of q rows has ceil(q / BQ)
// tiles, so ceil(T / BQ) + S blocks always suffice; the spare ones exit).
//
// The block walks the keys its rows see, [first key of the first row, own
// position of the last row], in tiles of BK keys: it gathers the tile's K and
// V rows through the block table into shared memory, then each warp runs the
// online softmax of its items over the tile, one key at a time: the lanes hold
// head_dim/32 elements of q and of the output, a butterfly sums q·k. Causality
// and the sliding window are per-row key ranges. Every row sees its keys one
// by one in increasing order with the same arithmetic whatever the tile, so
// its result does not depend on the other rows of the step.
//
// Decode rows get one tile each; a context split over several blocks with a
// log-sum-exp merge (flash-decoding) is future work (docs/compiler.md).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToGpu/GpuKernels.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

namespace {
constexpr int64_t kItemsPerBlock = 16;
constexpr int64_t kMaxKeysPerTile = 32;
// K and V tiles together stay within this many bytes of shared memory.
constexpr int64_t kTileBytes = 32 * 1024;
} // namespace

GpuGrid mlir::llmserve::buildPagedAttentionKernel(GpuKernelEmitter &e,
                                                  PagedAttentionOp o) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  using P = arith::CmpIPredicate;
  auto cacheType = cast<RankedTensorType>(o.getKeyCache().getType());
  int64_t blockSize = cacheType.getDimSize(1);
  int64_t kvHeads = cacheType.getDimSize(2), headDim = cacheType.getDimSize(3);
  int64_t heads = o.getNumHeads();
  int64_t group = heads / kvHeads;
  std::optional<uint64_t> window = o.getSlidingWindow();
  float scale = o.getScale().convertToFloat();
  Type element = cacheType.getElementType();
  int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;

  int64_t rowsPerTile = std::max<int64_t>(1, kItemsPerBlock / group);
  int64_t items = rowsPerTile * group;
  int64_t itemsPerWarp = (items + e.numWarps() - 1) / e.numWarps();
  int64_t perLane = (headDim + kWarpSize - 1) / kWarpSize;
  int64_t keysPerTile = std::clamp<int64_t>(
      kTileBytes / (2 * headDim * elementBytes), 1, kMaxKeysPerTile);

  Value q = e.binding(0), keys = cacheSlots(e, 1), values = cacheSlots(e, 2),
        blockTable = e.binding(3), contextLen = e.binding(4),
        queryStart = e.binding(5), out = e.binding(6), lse = e.binding(7);
  Value kTile = e.sharedBuffer({keysPerTile, headDim}, element);
  Value vTile = e.sharedBuffer({keysPerTile, headDim}, element);
  Value numSeqs = e.dimSize(4, 0);
  Value zero = e.index(0), one = e.index(1);
  Value dim = e.index(headDim);
  Value kvHead = e.blockId(1);
  Value tile = e.blockId(0);
  Value lane = e.laneId(), warp = e.warpId();

  // The sequence and tile-in-sequence of this block.
  Value falseValue = arith::ConstantIntOp::create(b, b.getI1Type(), 0);
  SmallVector<Value> found = e.forLoop(
      zero, numSeqs, 1, {zero, zero, zero, falseValue},
      [&](Value s, ValueRange st) -> SmallVector<Value> {
        Value begin = a.toIndex(a.load(queryStart, s));
        Value end = a.toIndex(a.load(queryStart, a.addi(s, one)));
        Value tiles = a.divui(a.addi(a.subi(end, begin),
                                     e.index(rowsPerTile - 1)),
                              e.index(rowsPerTile));
        Value next = a.addi(st[0], tiles);
        Value hit = a.andi(arith::XOrIOp::create(
                               b, st[3],
                               arith::ConstantIntOp::create(b, b.getI1Type(), 1)),
                           a.cmpi(P::ult, tile, next));
        return {next, a.select(hit, s, st[1]),
                a.select(hit, a.subi(tile, st[0]), st[2]),
                arith::OrIOp::create(b, st[3], hit)};
      });
  e.ifThen(found[3], [&] {
    Value seq = found[1], local = found[2];
    Value qBegin = a.toIndex(a.load(queryStart, seq));
    Value qEnd = a.toIndex(a.load(queryStart, a.addi(seq, one)));
    Value context = a.toIndex(a.load(contextLen, seq));
    Value r0 = a.addi(qBegin, a.muli(local, e.index(rowsPerTile)));
    Value rowCount = a.mini(e.index(rowsPerTile), a.subi(qEnd, r0));
    // Causal: a row's own position is the last key it sees.
    Value past = a.subi(context, a.subi(qEnd, qBegin));
    auto positionOf = [&](Value row) {
      return a.addi(past, a.subi(row, qBegin));
    };
    auto firstKeyOf = [&](Value position) {
      if (!window)
        return zero;
      Value w = e.index(static_cast<int64_t>(*window) - 1);
      return a.select(a.cmpi(P::sgt, position, w), a.subi(position, w), zero);
    };
    Value lo = firstKeyOf(positionOf(r0));
    Value hiEnd =
        a.addi(positionOf(a.subi(a.addi(r0, rowCount), one)), one);

    // The warp's items: (row, query head), their key ranges and q.
    struct Item {
      Value valid, row, head, first, last;
      SmallVector<Value> q;
    };
    SmallVector<Item> itemsOfWarp;
    SmallVector<Value> laneDims;
    for (int64_t i = 0; i < perLane; ++i) {
      Value d = a.addi(lane, e.index(i * kWarpSize));
      laneDims.push_back(a.mini(d, e.index(headDim - 1)));
    }
    auto laneInside = [&](int64_t i) {
      return a.cmpi(P::ult, a.addi(lane, e.index(i * kWarpSize)), dim);
    };
    for (int64_t j = 0; j < itemsPerWarp; ++j) {
      Item item;
      Value it = a.addi(warp, e.index(j * e.numWarps()));
      Value qr = a.divui(it, e.index(group));
      item.valid = a.andi(a.cmpi(P::ult, it, e.index(items)),
                          a.cmpi(P::ult, qr, rowCount));
      item.row = a.select(item.valid, a.addi(r0, qr), r0);
      item.head =
          a.addi(a.muli(kvHead, e.index(group)), a.remui(it, e.index(group)));
      Value position = positionOf(item.row);
      item.first = firstKeyOf(position);
      // An invalid item gets an empty key range.
      item.last = a.select(item.valid, a.addi(position, one), item.first);
      Value base = a.muli(item.head, dim);
      for (int64_t i = 0; i < perLane; ++i) {
        Value v = e.loadF32(q, {item.row, a.addi(base, laneDims[i])});
        item.q.push_back(a.select(laneInside(i), v, e.f32(0)));
      }
      itemsOfWarp.push_back(std::move(item));
    }

    // Per item: running max, running sum, perLane output elements.
    int64_t stateSize = 2 + perLane;
    SmallVector<Value> init;
    for (int64_t j = 0; j < itemsPerWarp; ++j) {
      init.push_back(e.f32(-INFINITY));
      init.push_back(e.f32(0));
      init.append(perLane, e.f32(0));
    }
    SmallVector<Value> state = e.forLoop(
        lo, hiEnd, keysPerTile, init,
        [&](Value j0, ValueRange st) -> SmallVector<Value> {
          // Gather the tile's keys and values through the block table.
          e.barrier();
          Value tileEnd = a.mini(a.addi(j0, e.index(keysPerTile)), hiEnd);
          Value tileKeys = a.subi(tileEnd, j0);
          e.threadLoop(a.muli(tileKeys, dim), [&](Value flat) {
            Value k = a.divui(flat, dim), d = a.remui(flat, dim);
            Value key = a.addi(j0, k);
            Value block = a.toIndex(a.load(
                blockTable, {seq, a.divui(key, e.index(blockSize))}));
            Value slot = a.addi(a.muli(block, e.index(blockSize)),
                                a.remui(key, e.index(blockSize)));
            Value col = a.addi(a.muli(kvHead, dim), d);
            a.store(a.load(keys, {slot, col}), kTile, {k, d});
            a.store(a.load(values, {slot, col}), vTile, {k, d});
          });
          e.barrier();
          SmallVector<Value> next;
          for (int64_t j = 0; j < itemsPerWarp; ++j) {
            const Item &item = itemsOfWarp[j];
            ValueRange s = st.slice(j * stateSize, stateSize);
            Value kb = a.maxi(item.first, j0);
            Value ke = a.maxi(a.mini(item.last, tileEnd), kb);
            SmallVector<Value> updated = e.forLoop(
                a.subi(kb, j0), a.subi(ke, j0), 1, s,
                [&](Value k, ValueRange s) -> SmallVector<Value> {
                  Value partial = e.f32(0);
                  for (int64_t i = 0; i < perLane; ++i)
                    partial = a.add(partial,
                                    a.mul(item.q[i],
                                          e.loadF32(kTile, {k, laneDims[i]})));
                  Value dot = e.warpReduce(
                      partial, [&](Value x, Value y) { return a.add(x, y); });
                  Value score = a.mul(dot, e.f32(scale));
                  Value maxNew = a.max(s[0], score);
                  // The running sums rescale only when the maximum grows.
                  Value grows =
                      a.cmpf(arith::CmpFPredicate::OGT, score, s[0]);
                  Value alpha =
                      a.select(grows, a.exp(a.sub(s[0], maxNew)), e.f32(1));
                  Value weight = a.exp(a.sub(score, maxNew));
                  SmallVector<Value> r{maxNew,
                                       a.add(a.mul(s[1], alpha), weight)};
                  for (int64_t i = 0; i < perLane; ++i)
                    r.push_back(a.add(
                        a.mul(s[2 + i], alpha),
                        a.mul(weight, e.loadF32(vTile, {k, laneDims[i]}))));
                  return r;
                });
            next.append(updated);
          }
          return next;
        });

    for (int64_t j = 0; j < itemsPerWarp; ++j) {
      const Item &item = itemsOfWarp[j];
      ValueRange s = ArrayRef(state).slice(j * stateSize, stateSize);
      e.ifThen(item.valid, [&] {
        Value base = a.muli(item.head, dim);
        for (int64_t i = 0; i < perLane; ++i)
          e.ifThen(laneInside(i), [&] {
            e.storeF32(a.div(s[2 + i], s[1]), out,
                       {item.row, a.addi(base, laneDims[i])});
          });
        e.ifThen(a.cmpi(P::eq, lane, zero), [&] {
          a.store(a.add(s[0], a.log(s[1])), lse, {item.row, item.head});
        });
      });
    }
  });
  return {ceilDivExpr(e.dimExpr(0, 0), rowsPerTile) + "+" + e.dimExpr(4, 0),
          std::to_string(kvHeads), "1"};
}
