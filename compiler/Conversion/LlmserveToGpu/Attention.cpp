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
// position of the last row]: it gathers the K and V rows of up to a chunk of
// keys (below) through the block table into shared memory (16 bytes a
// thread), then each warp folds them, in tiles of up to 32 keys at multiples
// of the tile size, into the online softmax of each of its items at once. A lane scores one key (q, kept
// in shared memory, against the lane's K row), the warp reduces the tile's
// maximum and the sum of its weights, and each lane adds the weighted V rows
// of the tile's keys in key order into the head_dim/32 output elements it
// holds. Causality and the sliding window are per-item key ranges; a key
// outside an item's range weighs exactly zero, so an item's result depends
// only on its own keys and not on the other rows of the step.
//
// Keys are taken in chunks of kAttentionChunk at fixed positions: an item
// starts each chunk from an empty (max, sum, accumulator) and folds the
// chunk's state into its total with `mergeState`. A decode-only step (T = S)
// runs the same chunks in separate blocks instead (flash-decoding: one block
// per sequence, KV head and chunk, states to a scratch buffer), then a merge
// kernel folds them in the same order with the same function, so a decode
// row's output is bitwise the same whichever kernels the step runs.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToGpu/GpuKernels.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

namespace {
constexpr int64_t kItemsPerBlock = 16;
// A lane scores one key of a tile.
constexpr int64_t kMaxKeysPerTile = kWarpSize;
// Bytes a thread copies at once when gathering K and V rows (device buffers
// start on 256 bytes and shared tiles on 16, so a head's slice of a cache row
// is aligned whenever the head dimension is a whole number of such pieces).
// K rows in shared memory are padded by as much, so that the 16-byte loads of
// lanes reading one row each fall in distinct banks.
constexpr int64_t kGatherBytes = 16;
// The K and V tiles and the items' queries stay within this many bytes of
// shared memory.
constexpr int64_t kSharedBytes = 40 * 1024;

class PagedAttention {
public:
  PagedAttention(GpuKernelEmitter &e, PagedAttentionOp o)
      : e(e), a(e.arith()), b(e.builder()), window(o.getSlidingWindow()),
        scale(o.getScale().convertToFloat()), softcap(o.getSoftcap()),
        keyScales(o.getKeyScale()), valueScales(o.getValueScale()) {
    auto cacheType = cast<RankedTensorType>(o.getKeyCache().getType());
    blockSize = cacheType.getDimSize(1);
    kvHeads = cacheType.getDimSize(2);
    headDim = cacheType.getDimSize(3);
    heads = o.getNumHeads();
    group = heads / kvHeads;
    element = GpuKernelEmitter::storageType(cacheType.getElementType());
    // FP8 codes are decoded once, as they are gathered, rather than by each
    // warp of the GQA group that reads them, into f16, which holds every
    // e4m3 value exactly.
    tileElement = keyScales ? b.getF16Type() : element;
    int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
    perLane = (headDim + kWarpSize - 1) / kWarpSize;
    int64_t perLoad = kGatherBytes / elementBytes;
    width = headDim % perLoad == 0 ? perLoad : 1;
    zero = e.index(0);
    one = e.index(1);
    dim = e.index(headDim);
    chunk = e.index(kAttentionChunk);
    for (int64_t i = 0; i < perLane; ++i) {
      Value d = a.addi(e.laneId(), e.index(i * kWarpSize));
      laneDims.push_back(a.mini(d, e.index(headDim - 1)));
    }
  }

  /// Any mix of prefill chunks and decode rows; no work when T = S.
  Grid buildMixed() {
    int64_t rowsPerTile = std::max<int64_t>(1, kItemsPerBlock / group);
    int64_t items = rowsPerTile * group;
    int64_t itemsPerWarp = (items + e.numWarps() - 1) / e.numWarps();
    Value queryStart = e.binding(5), numSeqs = e.dimSize(4, 0);
    Value kvHead = e.blockId(1), tile = e.blockId(0);
    allocateTiles(itemsPerWarp * e.numWarps());
    setCacheScales(kvHead);

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
          Value hit = a.andi(
              arith::XOrIOp::create(
                  b, st[3], arith::ConstantIntOp::create(b, b.getI1Type(), 1)),
              a.cmpi(P::ult, tile, next));
          return {next, a.select(hit, s, st[1]),
                  a.select(hit, a.subi(tile, st[0]), st[2]),
                  arith::OrIOp::create(b, st[3], hit)};
        });
    e.ifThen(found[3], [&] {
      Sequence seq = sequence(found[1]);
      Value r0 = a.addi(seq.qBegin, a.muli(found[2], e.index(rowsPerTile)));
      Value rowCount = a.mini(e.index(rowsPerTile), a.subi(seq.qEnd, r0));
      Value lo = firstKeyOf(seq.positionOf(a, r0));
      Value hiEnd =
          a.addi(seq.positionOf(a, a.subi(a.addi(r0, rowCount), one)), one);

      SmallVector<Item> itemsOfWarp;
      for (int64_t j = 0; j < itemsPerWarp; ++j) {
        Value it = a.addi(e.warpId(), e.index(j * e.numWarps()));
        Value qr = a.divui(it, e.index(group));
        Value valid = a.andi(a.cmpi(P::ult, it, e.index(items)),
                             a.cmpi(P::ult, qr, rowCount));
        Value row = a.select(valid, a.addi(r0, qr), r0);
        Value head =
            a.addi(a.muli(kvHead, e.index(group)), a.remui(it, e.index(group)));
        itemsOfWarp.push_back(item(seq, valid, row, head, it));
      }

      // Chunk by chunk, each folded into the items' totals.
      Value firstChunk = a.divui(lo, chunk);
      Value endChunk = a.divui(a.addi(hiEnd, e.index(kAttentionChunk - 1)), chunk);
      SmallVector<Value> total = e.forLoop(
          firstChunk, endChunk, 1, emptyStates(itemsPerWarp),
          [&](Value c, ValueRange total) -> SmallVector<Value> {
            Value from = a.maxi(lo, a.muli(c, chunk));
            Value to = a.mini(hiEnd, a.muli(a.addi(c, one), chunk));
            SmallVector<Value> local =
                walkKeys(seq.index, kvHead, itemsOfWarp, from, to);
            SmallVector<Value> merged;
            for (int64_t j = 0; j < itemsPerWarp; ++j)
              merged.append(mergeState(state(total, j), state(local, j)));
            return merged;
          });
      for (int64_t j = 0; j < itemsPerWarp; ++j)
        e.ifThen(itemsOfWarp[j].valid, [&] {
          writeOutput(itemsOfWarp[j].row, itemsOfWarp[j].head, state(total, j));
        });
    });
    std::string tiles = ceilDivExpr(e.dimExpr(0, 0), rowsPerTile) + "+" +
                        e.dimExpr(4, 0);
    return {"(" + tiles + ")*" + moreTokensThanSequences(), std::to_string(kvHeads),
            "1"};
  }

  /// A decode-only step: block (sequence, KV head, chunk) writes the chunk's
  /// state of each query head of the KV head to the scratch buffer.
  Grid buildDecode() {
    int64_t itemsPerWarp = (group + e.numWarps() - 1) / e.numWarps();
    Value seqIndex = e.blockId(0), kvHead = e.blockId(1), c = e.blockId(2);
    allocateTiles(itemsPerWarp * e.numWarps());
    setCacheScales(kvHead);
    Sequence seq = sequence(seqIndex);
    Value numChunks = a.divui(a.addi(seq.context, e.index(kAttentionChunk - 1)), chunk);
    e.ifThen(a.cmpi(P::ult, c, numChunks), [&] {
      Value row = seq.qBegin;
      SmallVector<Item> itemsOfWarp;
      for (int64_t j = 0; j < itemsPerWarp; ++j) {
        Value it = a.addi(e.warpId(), e.index(j * e.numWarps()));
        Value valid = a.cmpi(P::ult, it, e.index(group));
        Value head = a.addi(a.muli(kvHead, e.index(group)),
                            a.remui(it, e.index(group)));
        itemsOfWarp.push_back(item(seq, valid, row, head, it));
      }
      Value from = a.maxi(firstKeyOf(seq.positionOf(a, row)), a.muli(c, chunk));
      Value to = a.mini(seq.context, a.muli(a.addi(c, one), chunk));
      SmallVector<Value> local = walkKeys(seq.index, kvHead, itemsOfWarp, from, to);
      Value partials = scratch();
      for (int64_t j = 0; j < itemsPerWarp; ++j) {
        ValueRange s = state(local, j);
        e.ifThen(itemsOfWarp[j].valid, [&] {
          Value base = scratchOffset(seq.index, itemsOfWarp[j].head, c);
          e.ifThen(a.cmpi(P::eq, e.laneId(), zero), [&] {
            a.store(s[0], partials, base);
            a.store(s[1], partials, a.addi(base, one));
          });
          for (int64_t i = 0; i < perLane; ++i)
            e.ifThen(laneInside(i), [&] {
              a.store(s[2 + i], partials,
                      a.addi(base, a.addi(e.index(2), laneDims[i])));
            });
        });
      }
    });
    return {e.dimExpr(4, 0) + "*(1-" + moreTokensThanSequences() + ")",
            std::to_string(kvHeads), maxChunksExpr()};
  }

  /// A decode-only step: one warp per (sequence, query head) folds the
  /// chunks' states in order and writes the output and log-sum-exp.
  Grid buildMerge() {
    Value seqIndex = e.blockId(0), head = e.blockId(1);
    Sequence seq = sequence(seqIndex);
    Value numChunks = a.divui(a.addi(seq.context, e.index(kAttentionChunk - 1)), chunk);
    Value partials = scratch();
    SmallVector<Value> total = e.forLoop(
        zero, numChunks, 1, emptyStates(1),
        [&](Value c, ValueRange total) -> SmallVector<Value> {
          Value base = scratchOffset(seqIndex, head, c);
          SmallVector<Value> local = {a.load(partials, base),
                                      a.load(partials, a.addi(base, one))};
          for (int64_t i = 0; i < perLane; ++i)
            local.push_back(a.load(
                partials, a.addi(base, a.addi(e.index(2), laneDims[i]))));
          return mergeState(total, local);
        });
    writeOutput(seq.qBegin, head, total);
    return {e.dimExpr(4, 0) + "*(1-" + moreTokensThanSequences() + ")",
            std::to_string(heads), "1"};
  }

private:
  using P = arith::CmpIPredicate;

  struct Sequence {
    Value index, qBegin, qEnd, context;
    /// Causal: a row's own position is the last key it sees.
    Value positionOf(Arith &a, Value row) const {
      return a.addi(a.subi(context, a.subi(qEnd, qBegin)), a.subi(row, qBegin));
    }
  };

  /// A (row, query head), its key range [first, last) (empty for invalid
  /// items) and the row of the shared query tile that holds its q.
  struct Item {
    Value valid, row, head, first, last, slot;
  };

  Sequence sequence(Value index) {
    Value queryStart = e.binding(5), contextLen = e.binding(4);
    return {index, a.toIndex(a.load(queryStart, index)),
            a.toIndex(a.load(queryStart, a.addi(index, one))),
            a.toIndex(a.load(contextLen, index))};
  }

  Value firstKeyOf(Value position) {
    if (!window)
      return zero;
    Value w = e.index(static_cast<int64_t>(*window) - 1);
    return a.select(a.cmpi(P::sgt, position, w), a.subi(position, w), zero);
  }

  Value laneInside(int64_t i) {
    return a.cmpi(P::ult, a.addi(e.laneId(), e.index(i * kWarpSize)), dim);
  }

  /// The item of warp-uniform `slot`; its warp stores its q as f32 in the
  /// query tile (read after the first gather's barriers).
  Item item(const Sequence &seq, Value valid, Value row, Value head, Value slot) {
    Item item{valid, row, head, Value(), Value(), slot};
    Value position = seq.positionOf(a, row);
    item.first = firstKeyOf(position);
    item.last = a.select(valid, a.addi(position, one), item.first);
    Value q = e.binding(0), base = a.muli(head, dim);
    for (int64_t i = 0; i < perLane; ++i)
      e.ifThen(laneInside(i), [&] {
        a.store(e.loadF32(q, {row, a.addi(base, laneDims[i])}), qTile,
                {slot, laneDims[i]});
      });
    return item;
  }

  int64_t stateSize() const { return 2 + perLane; }
  /// Per item: max, sum, perLane accumulator elements; empty: -inf, 0, 0.
  SmallVector<Value> emptyStates(int64_t numItems) {
    SmallVector<Value> states;
    for (int64_t j = 0; j < numItems; ++j) {
      states.push_back(e.f32(-INFINITY));
      states.push_back(e.f32(0));
      states.append(perLane, e.f32(0));
    }
    return states;
  }
  ValueRange state(ValueRange states, int64_t j) {
    return states.slice(j * stateSize(), stateSize());
  }

  /// `total` with `local` folded in. An empty state (max -inf) changes
  /// nothing and is replaced by anything; otherwise both rescale to the
  /// larger maximum, with explicit fma so that every kernel rounds alike.
  SmallVector<Value> mergeState(ValueRange total, ValueRange local) {
    Value negInf = e.f32(-INFINITY);
    Value localEmpty = a.cmpf(arith::CmpFPredicate::OEQ, local[0], negInf);
    Value totalEmpty = a.cmpf(arith::CmpFPredicate::OEQ, total[0], negInf);
    Value maxNew = a.max(total[0], local[0]);
    Value alphaTotal = a.exp(a.sub(total[0], maxNew));
    Value alphaLocal = a.exp(a.sub(local[0], maxNew));
    auto fold = [&](Value t, Value l) -> Value {
      Value merged =
          math::FmaOp::create(b, t, alphaTotal, a.mul(l, alphaLocal));
      return a.select(localEmpty, t, a.select(totalEmpty, l, merged));
    };
    SmallVector<Value> result = {
        a.select(localEmpty, total[0], a.select(totalEmpty, local[0], maxNew))};
    for (int64_t i = 1; i < stateSize(); ++i)
      result.push_back(fold(total[i], local[i]));
    return result;
  }

  /// The shared K and V buffers (K rows padded by kGatherBytes) and the f32
  /// query tile of `slots` items, within kSharedBytes. A tile is the largest
  /// power of two of keys, at most a warp's lanes, that fits; the buffers
  /// hold the largest power of two of tiles, at most a chunk, that fits, so
  /// one gather between two barriers serves them all and neither a tile nor
  /// a gather crosses a chunk.
  void allocateTiles(int64_t slots) {
    int64_t elementBytes = tileElement.getIntOrFloatBitWidth() / 8;
    int64_t pad = kGatherBytes / elementBytes;
    auto bytes = [&](int64_t keys) {
      return keys * (2 * headDim + pad) * elementBytes + slots * headDim * 4;
    };
    keysPerTile = kMaxKeysPerTile;
    while (keysPerTile > 1 && bytes(keysPerTile) > kSharedBytes)
      keysPerTile /= 2;
    keysPerGather = keysPerTile;
    while (2 * keysPerGather <= kAttentionChunk &&
           bytes(2 * keysPerGather) <= kSharedBytes)
      keysPerGather *= 2;
    kTile = e.sharedBuffer({keysPerGather, headDim + pad}, tileElement);
    vTile = e.sharedBuffer({keysPerGather, headDim}, tileElement);
    qTile = e.sharedBuffer({slots, headDim}, b.getF32Type());
  }

  /// The online softmax of `items` over keys [from, to) of sequence `seq`,
  /// from empty states: the keys of each gather span, then its tiles one at
  /// a time.
  SmallVector<Value> walkKeys(Value seq, Value kvHead, ArrayRef<Item> items,
                              Value from, Value to) {
    auto alignDown = [&](Value key, int64_t multiple) {
      Value m = e.index(multiple);
      return a.muli(a.divui(key, m), m);
    };
    return e.forLoop(
        alignDown(from, keysPerGather), to, keysPerGather, emptyStates(items.size()),
        [&](Value g0, ValueRange st) -> SmallVector<Value> {
          Value begin = a.maxi(g0, from);
          Value end = a.mini(a.addi(g0, e.index(keysPerGather)), to);
          e.barrier();
          gatherKeys(seq, kvHead, g0, begin, end);
          e.barrier();
          return e.forLoop(
              alignDown(begin, keysPerTile), end, keysPerTile, st,
              [&](Value j0, ValueRange tileState) -> SmallVector<Value> {
                return foldTile(items, tileState, g0, j0, a.maxi(j0, begin),
                                a.mini(a.addi(j0, e.index(keysPerTile)), end));
              });
        });
  }

  /// Keys [begin, end) of sequence `seq` to rows key - g0 of the K and V
  /// buffers, `width` elements a thread; FP8 codes as their values in f16
  /// (exact, decodeE4M3ToF16), which `widen` scales.
  void gatherKeys(Value seq, Value kvHead, Value g0, Value begin, Value end) {
    Value keys = e.cacheSlots(1), values = e.cacheSlots(2),
          blockTable = e.binding(3);
    Value pieces = e.index(headDim / width);
    Value count = a.maxi(a.subi(end, begin), zero);
    e.threadLoop(a.muli(count, pieces), [&](Value flat) {
      Value key = a.addi(begin, a.divui(flat, pieces));
      Value k = a.subi(key, g0);
      Value d = a.muli(a.remui(flat, pieces), e.index(width));
      Value block = a.toIndex(
          a.load(blockTable, {seq, a.divui(key, e.index(blockSize))}));
      Value slot = a.addi(a.muli(block, e.index(blockSize)),
                          a.remui(key, e.index(blockSize)));
      Value col = a.addi(a.muli(kvHead, dim), d);
      auto copy = [&](Value cache, Value tile) {
        Value v = width == 1
                      ? a.load(cache, {slot, col})
                      : vector::LoadOp::create(
                            b, VectorType::get({width}, element), cache,
                            ValueRange{slot, col}, /*nontemporal=*/false,
                            llvm::MaybeAlign(kGatherBytes));
        if (keyScales)
          v = decodeE4M3ToF16(v);
        if (width == 1)
          return a.store(v, tile, {k, d});
        vector::StoreOp::create(b, v, tile, ValueRange{k, d},
                                /*nontemporal=*/false,
                                llvm::MaybeAlign(kGatherBytes));
      };
      copy(keys, kTile);
      copy(values, vTile);
    });
  }

  /// FP8 e4m3 codes (i8: a scalar, or a vector of an even count) as their
  /// values in f16, two at a time by the hardware's conversion
  /// (cvt.rn.f16x2.e4m3x2, sm_89 and later): exact, so the same values
  /// decodeE4M3 gives, at a tenth of its instructions.
  Value decodeE4M3ToF16(Value codes) {
    auto pairType = VectorType::get({2}, b.getI8Type());
    auto halvesType = VectorType::get({2}, b.getF16Type());
    Type e4m3 = b.getType<Float8E4M3FNType>();
    auto convert = [&](Value pair) -> Value {
      return NVVM::ConvertF8x2ToF16x2Op::create(b, halvesType, pair,
                                                /*relu=*/false, e4m3);
    };
    auto vectorType = dyn_cast<VectorType>(codes.getType());
    if (!vectorType)
      return vector::ExtractOp::create(
          b, convert(vector::BroadcastOp::create(b, pairType, codes)), 0);
    SmallVector<Value> values;
    for (int64_t i = 0; i < vectorType.getNumElements(); i += 2) {
      Value halves = convert(vector::FromElementsOp::create(
          b, pairType,
          ValueRange{vector::ExtractOp::create(b, codes, i),
                     vector::ExtractOp::create(b, codes, i + 1)}));
      values.push_back(vector::ExtractOp::create(b, halves, 0));
      values.push_back(vector::ExtractOp::create(b, halves, 1));
    }
    return vector::FromElementsOp::create(
        b, VectorType::get({vectorType.getNumElements()}, b.getF16Type()), values);
  }

  /// The block's KV head's key and value scales, where the cache is FP8
  /// (see kvCacheScale).
  void setCacheScales(Value kvHead) {
    if (!keyScales)
      return;
    keyScale = kvCacheScale(b, *keyScales, kvHead);
    valueScale = kvCacheScale(b, *valueScales, kvHead);
  }

  /// Elements (a scalar or a vector) of a shared tile as f32; those of an
  /// FP8 cache times `cacheScale` (null for 1), as decodeE4M3 gives them.
  Value widen(Value x, Value cacheScale) {
    Type f32 = withElement(x.getType(), b.getF32Type());
    if (x.getType() != f32)
      x = arith::ExtFOp::create(b, f32, x);
    if (!cacheScale)
      return x;
    return a.mul(x, broadcastF32(b, f32, cacheScale));
  }

  /// `width` consecutive elements of row `row` of a shared tile from `d0`,
  /// as f32 (see widen).
  SmallVector<Value> loadPiece(Value tile, Value row, Value d0,
                               Value cacheScale) {
    if (width == 1)
      return {widen(a.load(tile, {row, d0}), cacheScale)};
    auto tileType = cast<MemRefType>(tile.getType());
    int64_t bytes = width * tileType.getElementTypeBitWidth() / 8;
    Value v = widen(vector::LoadOp::create(
                        b, VectorType::get({width}, tileType.getElementType()),
                        tile, ValueRange{row, d0}, /*nontemporal=*/false,
                        llvm::MaybeAlign(std::min<int64_t>(bytes, kGatherBytes))),
                    cacheScale);
    SmallVector<Value> elements;
    for (int64_t t = 0; t < width; ++t)
      elements.push_back(vector::ExtractOp::create(b, v, t));
    return elements;
  }

  /// The tile's keys [begin, end) (the tile starts at key j0; key k is at
  /// row k - g0 of the buffers), folded into each item's state. Lane l
  /// scores key j0 + l against each item's q (an f32 fma chain over the head
  /// dimension); a key outside the item's range scores -inf and weighs 0.
  /// The tile's maximum and the sum of its weights are warp reductions, and
  /// each lane's output elements gather the weighted V rows key by key (the
  /// weights broadcast from their lanes). A tile without a key of the item
  /// leaves its state as it is.
  SmallVector<Value> foldTile(ArrayRef<Item> items, ValueRange st, Value g0,
                              Value j0, Value begin, Value end) {
    int64_t n = items.size();
    Value lane = e.laneId();
    Value key = a.addi(j0, lane);
    Value tileRow = a.subi(j0, g0);
    Value keyRow = a.addi(tileRow, a.mini(lane, e.index(keysPerTile - 1)));
    SmallVector<Value> dots = e.forLoop(
        zero, dim, width, SmallVector<Value>(n, e.f32(0)),
        [&](Value d0, ValueRange acc) -> SmallVector<Value> {
          SmallVector<Value> k = loadPiece(kTile, keyRow, d0, keyScale);
          SmallVector<Value> next(acc);
          for (int64_t j = 0; j < n; ++j) {
            SmallVector<Value> q =
                loadPiece(qTile, items[j].slot, d0, nullptr);
            for (int64_t t = 0; t < width; ++t)
              next[j] = math::FmaOp::create(b, q[t], k[t], next[j]);
          }
          return next;
        });

    Value negInf = e.f32(-INFINITY);
    SmallVector<Value> maxNew, alpha, weight, sum, any;
    for (int64_t j = 0; j < n; ++j) {
      Value score = a.mul(dots[j], e.f32(scale));
      if (softcap) {
        Value cap = e.f32(softcap->convertToDouble());
        score = a.mul(cap, math::TanhOp::create(b, a.div(score, cap)));
      }
      Value lo = a.maxi(items[j].first, begin);
      Value hi = a.mini(items[j].last, end);
      Value inside = a.andi(a.cmpi(P::sge, key, lo), a.cmpi(P::slt, key, hi));
      score = a.select(inside, score, negInf);
      Value tileMax = e.warpReduce(score, [&](Value x, Value y) { return a.max(x, y); });
      Value oldMax = state(st, j)[0];
      any.push_back(a.cmpf(arith::CmpFPredicate::OGT, tileMax, negInf));
      maxNew.push_back(a.max(oldMax, tileMax));
      alpha.push_back(a.exp(a.sub(oldMax, maxNew[j])));
      weight.push_back(a.exp(a.sub(score, maxNew[j])));
      sum.push_back(e.warpReduce(weight[j], [&](Value x, Value y) { return a.add(x, y); }));
    }

    // Weighted V rows in key order; V is read once for all items.
    Value width32 = arith::ConstantIntOp::create(b, b.getI32Type(), kWarpSize);
    SmallVector<Value> partial = e.forLoop(
        a.subi(a.mini(begin, end), j0), a.subi(end, j0), 1,
        SmallVector<Value>(n * perLane, e.f32(0)),
        [&](Value k, ValueRange acc) -> SmallVector<Value> {
          SmallVector<Value> v;
          for (int64_t i = 0; i < perLane; ++i)
            v.push_back(widen(a.load(vTile, {a.addi(tileRow, k), laneDims[i]}),
                              valueScale));
          Value source = arith::IndexCastOp::create(b, b.getI32Type(), k);
          SmallVector<Value> next(acc);
          for (int64_t j = 0; j < n; ++j) {
            Value w = gpu::ShuffleOp::create(b, weight[j], source, width32,
                                             gpu::ShuffleMode::IDX)
                          .getShuffleResult();
            for (int64_t i = 0; i < perLane; ++i)
              next[j * perLane + i] =
                  math::FmaOp::create(b, w, v[i], next[j * perLane + i]);
          }
          return next;
        });

    SmallVector<Value> result;
    for (int64_t j = 0; j < n; ++j) {
      ValueRange s = state(st, j);
      result.push_back(a.select(any[j], maxNew[j], s[0]));
      result.push_back(
          a.select(any[j], math::FmaOp::create(b, s[1], alpha[j], sum[j]), s[1]));
      for (int64_t i = 0; i < perLane; ++i)
        result.push_back(a.select(
            any[j],
            math::FmaOp::create(b, s[2 + i], alpha[j], partial[j * perLane + i]),
            s[2 + i]));
    }
    return result;
  }

  void writeOutput(Value row, Value head, ValueRange s) {
    Value out = e.binding(6), lse = e.binding(7);
    Value base = a.muli(head, dim);
    for (int64_t i = 0; i < perLane; ++i)
      e.ifThen(laneInside(i), [&] {
        e.storeF32(a.div(s[2 + i], s[1]), out, {row, a.addi(base, laneDims[i])});
      });
    e.ifThen(a.cmpi(P::eq, e.laneId(), zero), [&] {
      a.store(a.add(s[0], a.log(s[1])), lse, {row, head});
    });
  }

  /// 1 when the step has a prefill chunk (T > S), else 0.
  std::string moreTokensThanSequences() const {
    return "min(" + e.dimExpr(0, 0) + "-" + e.dimExpr(4, 0) + ",1)";
  }
  /// Chunks of the longest context a block table row can address.
  std::string maxChunksExpr() const {
    return ceilDivExpr(e.dimExpr(3, 1) + "*" + std::to_string(blockSize),
                       kAttentionChunk);
  }
  Value maxChunks() {
    return a.divui(a.addi(a.muli(e.dimSize(3, 1), e.index(blockSize)),
                          e.index(kAttentionChunk - 1)),
                   chunk);
  }

  /// The scratch binding ([S, heads, max chunks, 2 + head_dim] f32) and the
  /// offset of a (sequence, head, chunk) state in it.
  Value scratch() {
    Value size = a.muli(
        a.muli(a.muli(e.dimSize(4, 0), e.index(heads)), maxChunks()),
        e.index(2 + headDim));
    return e.binding(kAttentionScratchBinding, {size});
  }
  Value scratchOffset(Value seq, Value head, Value c) {
    Value slot = a.addi(a.muli(a.addi(a.muli(seq, e.index(heads)), head),
                               maxChunks()),
                        c);
    return a.muli(slot, e.index(2 + headDim));
  }

  GpuKernelEmitter &e;
  Arith &a;
  ImplicitLocOpBuilder &b;
  std::optional<uint64_t> window;
  float scale;
  std::optional<APFloat> softcap; // tanh soft-capping of the scores
  // An FP8 cache's scales, and those of the block's KV head; the tiles
  // then hold its values unscaled (f16).
  std::optional<ArrayRef<float>> keyScales, valueScales;
  Value keyScale, valueScale;
  int64_t blockSize, kvHeads, headDim, heads, group, perLane, width,
      keysPerTile = 0, keysPerGather = 0;
  Type element, tileElement; // the cache's storage type, and the tiles'

  Value zero, one, dim, chunk, kTile, vTile, qTile;
  SmallVector<Value> laneDims;
};

} // namespace

Grid mlir::llmserve::buildPagedAttentionKernel(GpuKernelEmitter &e,
                                               PagedAttentionOp o) {
  return PagedAttention(e, o).buildMixed();
}

Grid mlir::llmserve::buildDecodeAttentionKernel(GpuKernelEmitter &e,
                                                PagedAttentionOp o) {
  return PagedAttention(e, o).buildDecode();
}

Grid mlir::llmserve::buildAttentionMergeKernel(GpuKernelEmitter &e,
                                               PagedAttentionOp o) {
  return PagedAttention(e, o).buildMerge();
}

SmallVector<std::string>
mlir::llmserve::attentionScratchShape(GpuKernelEmitter &e, PagedAttentionOp o) {
  auto cacheType = cast<RankedTensorType>(o.getKeyCache().getType());
  int64_t blockSize = cacheType.getDimSize(1), headDim = cacheType.getDimSize(3);
  return {e.dimExpr(4, 0), std::to_string(o.getNumHeads()),
          ceilDivExpr(e.dimExpr(3, 1) + "*" + std::to_string(blockSize),
                      kAttentionChunk),
          std::to_string(2 + headDim)};
}
