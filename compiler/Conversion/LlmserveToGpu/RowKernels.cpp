//===- RowKernels.cpp - GPU kernels that process rows independently -------===//
//
// embedding, gather_rows, rms_norm, layer_norm, rope and kv_write take one
// block per row (a layer's ropes and kv_writes, one per token for all of
// them); its threads stride over the row, so consecutive threads
// touch consecutive elements (coalesced). Norm sums go through a warp
// butterfly and then the warps in order: a fixed reduction order that depends
// only on the row's width, never on the other rows (batch invariance).
// quantize_fp8 takes a warp per group of 128 columns of a row. silu_mul,
// gelu_mul, gelu and softcap are flat elementwise kernels.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LlmserveToGpu/GpuKernels.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

namespace {
constexpr int64_t kElementsPerThread = 4;
} // namespace

Grid mlir::llmserve::buildGatherKernel(GpuKernelEmitter &e, Operation *op) {
  // out[i] = source[indices[i]] (times an embedding's scale, in f32); an
  // index outside the source gives zeros rather than an out-of-bounds read.
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value source = e.binding(0), indices = e.binding(1), out = e.binding(2);
  Value i = e.blockId(0);
  Value index = a.toIndex(a.load(indices, i));
  Value valid = a.cmpi(arith::CmpIPredicate::ult, index, e.dimSize(0, 0));
  Value row = a.select(valid, index, e.index(0));
  std::optional<APFloat> scale;
  if (auto embedding = dyn_cast<EmbeddingOp>(op))
    scale = embedding.getScale();
  Type element = e.elementType(0);
  Value zero = arith::ConstantOp::create(b, b.getZeroAttr(element));
  e.threadLoop(e.dimSize(0, 1), [&](Value d) {
    if (!scale) {
      a.store(a.select(valid, a.load(source, {row, d}), zero), out, {i, d});
      return;
    }
    Value scaled = a.mul(e.loadF32(source, {row, d}), e.f32(scale->convertToDouble()));
    e.storeF32(a.select(valid, scaled, e.f32(0)), out, {i, d});
  });
  return {e.dimExpr(1, 0), "1", "1"};
}

Grid mlir::llmserve::buildNormKernel(GpuKernelEmitter &e, const NormParams &params) {
  const bool hasResidual = params.hasResidual, hasBias = params.hasBias,
             centered = params.centered;
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  // A weight narrower than the rows (per-head norms) makes each row that
  // many rows of the weight's width, a block each.
  int64_t groupWidth = e.bindingType(1).getDimSize(0);
  int64_t inputWidth = e.bindingType(0).getDimSize(1);
  int64_t groups = ShapedType::isDynamic(inputWidth) ? 1 : inputWidth / groupWidth;
  auto rows = [&](int binding) {
    return groups == 1 ? e.binding(binding)
                       : e.binding(binding, {a.muli(e.dimSize(0, 0), e.index(groups)),
                                             e.index(groupWidth)});
  };
  int next = 0;
  Value input = rows(next++), weight = e.binding(next++);
  Value bias = hasBias ? e.binding(next++) : Value();
  Value residual = hasResidual ? rows(next++) : Value();
  Value result = rows(next++);
  Value residualOut = hasResidual ? rows(next++) : Value();
  Value scratch = e.sharedBuffer({e.numWarps()}, b.getF32Type());
  Value width = groups == 1 ? e.dimSize(0, 1) : e.index(groupWidth);
  Value widthF = a.toF32(width);
  Value t = e.blockId(0);
  Value source = hasResidual ? residualOut : input;
  auto add = [&](Value x, Value y) { return a.add(x, y); };

  // Pass 1: the (residual-added) row, as stored, and its sum. A thread reads
  // back only what it wrote itself, so no barrier is needed.
  Value partial = e.threadLoop(
      width, {e.f32(0)}, [&](Value d, ValueRange acc) -> SmallVector<Value> {
        Value s = e.loadF32(input, {t, d});
        if (hasResidual) {
          s = a.add(s, e.loadF32(residual, {t, d}));
          e.storeF32(s, residualOut, {t, d});
          s = e.loadF32(residualOut, {t, d});
        }
        return {a.add(acc[0], centered ? s : a.mul(s, s))};
      })[0];
  Value sum = e.blockReduce(partial, scratch, add);
  Value mean = centered ? a.div(sum, widthF) : e.f32(0);
  Value meanSquare = sum;
  if (centered) {
    Value squares = e.threadLoop(
        width, {e.f32(0)}, [&](Value d, ValueRange acc) -> SmallVector<Value> {
          Value c = a.sub(e.loadF32(source, {t, d}), mean);
          return {a.add(acc[0], a.mul(c, c))};
        })[0];
    meanSquare = e.blockReduce(squares, scratch, add);
  }
  Value variance = a.div(meanSquare, widthF);
  Value inv = math::RsqrtOp::create(b, a.add(variance, e.f32(params.epsilon)));
  e.threadLoop(width, [&](Value d) {
    Value s = e.loadF32(source, {t, d});
    if (centered)
      s = a.sub(s, mean);
    Value w = e.loadF32(weight, d);
    if (params.weightOffset != 0)
      w = a.add(w, e.f32(params.weightOffset));
    Value y = a.mul(a.mul(s, inv), w);
    if (hasBias)
      y = a.add(y, e.loadF32(bias, d));
    e.storeF32(y, result, {t, d});
  });
  if (groups == 1)
    return {e.dimExpr(0, 0), "1", "1"};
  return {e.dimExpr(0, 0) + "*" + std::to_string(groups), "1", "1"};
}

namespace {

/// sin and cos of an f32 angle: Cody-Waite reduction by pi/2 (three-part
/// constant, exact products), polynomials on [-pi/4, pi/4], and the quadrant.
/// Rotary angles reach thousands of radians; the reduction keeps them
/// accurate to a few ulp of the reduced argument.
std::pair<Value, Value> sinCos(GpuKernelEmitter &e, Value angle) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value k = math::FloorOp::create(
      b, a.add(a.mul(angle, e.f32(2.0 / M_PI)), e.f32(0.5)));
  Value y = angle;
  for (double part : {1.5703125, 4.837512969970703125e-4,
                      7.549789954891882e-8})
    y = math::FmaOp::create(b, arith::NegFOp::create(b, k), e.f32(part), y);
  Value sinY = math::SinOp::create(b, y), cosY = math::CosOp::create(b, y);
  Value quadrant = arith::AndIOp::create(
      b, arith::FPToSIOp::create(b, b.getI32Type(), k), e.i32(3));
  auto is = [&](int q) {
    return a.cmpi(arith::CmpIPredicate::eq, quadrant, e.i32(q));
  };
  Value negSin = arith::NegFOp::create(b, sinY);
  Value negCos = arith::NegFOp::create(b, cosY);
  // Quadrants 0..3: sin = sin y, cos y, -sin y, -cos y;
  //                 cos = cos y, -sin y, -cos y, sin y.
  Value s = a.select(is(0), sinY,
                     a.select(is(1), cosY, a.select(is(2), negSin, negCos)));
  Value c = a.select(is(0), cosY,
                     a.select(is(1), negSin, a.select(is(2), negCos, sinY)));
  return {s, c};
}

} // namespace

namespace {

/// A kv_write of a kernel: where its input (none when a rope of the kernel
/// computes it), cache and slot mapping are bound.
struct KvWritePart {
  KvWriteOp op;
  std::optional<int> input;
  int cache, slots;
};

/// A rope of a kernel: where its input and positions are bound, where its
/// result is (none when only a kv_write of the kernel reads it), and the
/// kv_write that stores it (an index into the kernel's writes).
struct RopePart {
  RopeOp op;
  int input, positions;
  std::optional<int> result;
  std::optional<size_t> write;
};

struct RopeKvWriteParts {
  SmallVector<RopePart> ropes;
  SmallVector<KvWritePart> writes;
};

/// The ropes and kv_writes `op`'s kernel computes: a rope or a kv_write
/// (their operands, then a rope's result), or the ops of a dispatch region
/// (llmserve-group-sibling-ropes, llmserve-group-kv-writes): ropes of one
/// position array without context lengths (not LongRoPE) and with the same
/// attributes, then kv_writes into caches given as inputs, of an input or of
/// a rope's result. A rope's result is yielded, written, or both; a
/// kv_write's result (its cache, in place) is yielded.
FailureOr<RopeKvWriteParts> ropeKvWriteParts(GpuKernelEmitter &e,
                                             Operation *op) {
  if (auto rope = dyn_cast<RopeOp>(op))
    return RopeKvWriteParts{{{rope, 0, 1, e.numBindings() - 1, std::nullopt}},
                            {}};
  if (auto write = dyn_cast<KvWriteOp>(op))
    return RopeKvWriteParts{{}, {{write, 0, 1, 2}}};
  auto region = cast<DispatchRegionOp>(op);
  auto unsupported = [&] {
    return region.emitOpError(
               "has no GPU kernel: expected ropes of one position array, "
               "without context lengths and with the same attributes, then "
               "kv_writes of inputs or of those ropes' results into caches "
               "given as inputs"),
           failure();
  };
  auto argument = [](Value v) -> std::optional<int> {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getArgNumber();
    return std::nullopt;
  };
  // The bindings of yielded values with buffers of their own: after the
  // inputs, in the order of the region's results.
  Block &body = region.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  DenseMap<Value, int> resultBinding;
  int next = region.getNumOperands();
  for (OpResult result : region->getResults())
    if (!inPlaceOperand(result) &&
        !resultBinding
             .try_emplace(yield.getOperand(result.getResultNumber()), next++)
             .second)
      return unsupported();

  RopeKvWriteParts parts;
  for (Operation &inner : body.without_terminator()) {
    if (auto rope = dyn_cast<RopeOp>(inner)) {
      std::optional<int> input = argument(rope.getInput()),
                         positions = argument(rope.getPositions());
      RopeOp first = parts.ropes.empty() ? rope : parts.ropes.front().op;
      if (!input || !positions || rope.getContextLen() ||
          !parts.writes.empty() ||
          rope.getPositions() != first.getPositions() ||
          rope->getAttrDictionary() != first->getAttrDictionary())
        return unsupported();
      std::optional<int> result;
      if (auto it = resultBinding.find(rope.getResult());
          it != resultBinding.end())
        result = it->second;
      parts.ropes.push_back({rope, *input, *positions, result, std::nullopt});
      continue;
    }
    auto write = dyn_cast<KvWriteOp>(inner);
    if (!write)
      return unsupported();
    std::optional<int> input = argument(write.getInput()),
                       cache = argument(write.getCache()),
                       slots = argument(write.getSlotMapping());
    auto producer = llvm::find_if(parts.ropes, [&](RopePart &part) {
      return part.op.getResult() == write.getInput();
    });
    bool computed = producer != parts.ropes.end();
    if (!cache || !slots || (!input && (!computed || producer->write)) ||
        !write->hasOneUse() || *write->user_begin() != yield.getOperation())
      return unsupported();
    if (computed)
      producer->write = parts.writes.size();
    parts.writes.push_back({write, input, *cache, *slots});
  }
  // A rope's users are the yield and the kv_write that stores it.
  for (const RopePart &part : parts.ropes)
    for (Operation *user : part.op->getUsers())
      if (user != yield.getOperation() &&
          (!part.write || user != parts.writes[*part.write].op.getOperation()))
        return unsupported();
  // Every result with a buffer of its own is a rope's.
  auto yieldedRopes = llvm::count_if(parts.ropes, [](const RopePart &part) {
    return part.result.has_value();
  });
  if (static_cast<size_t>(yieldedRopes) != resultBinding.size())
    return unsupported();
  return parts;
}

} // namespace

FailureOr<Grid> mlir::llmserve::buildRopeKvWriteKernel(GpuKernelEmitter &e,
                                                       Operation *op) {
  FailureOr<RopeKvWriteParts> parts = ropeKvWriteParts(e, op);
  if (failed(parts))
    return failure();
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value t = e.blockId(0);

  // Each write's cache as rows of slots, and the token's slot (read once
  // per slot mapping).
  SmallVector<Value> caches, slots;
  DenseMap<int, Value> slotIn;
  for (const KvWritePart &write : parts->writes) {
    caches.push_back(e.cacheSlots(write.cache));
    Value &slot = slotIn[write.slots];
    if (!slot)
      slot = a.toIndex(a.load(e.binding(write.slots), t));
    slots.push_back(slot);
  }
  // Element `column` of the token's row, `value` (f32, of the written
  // tensor's element type), into write `w`'s cache. Negative (padding) or
  // out-of-pool slots write nothing.
  auto storeToCache = [&](size_t w, Value column, Value value) {
    KvWritePart &write = parts->writes[w];
    Value numSlots =
        a.muli(e.dimSize(write.cache, 0), e.dimSize(write.cache, 1));
    e.ifThen(a.cmpi(arith::CmpIPredicate::ult, slots[w], numSlots), [&] {
      std::optional<ArrayRef<float>> scales = write.op.getScale();
      if (!scales)
        return e.storeF32(value, caches[w], {slots[w], column});
      Value kvHead = a.divui(column, e.dimSize(write.cache, 3));
      a.store(encodeE4M3(b, value, kvCacheScale(b, *scales, kvHead)), caches[w],
              {slots[w], column});
    });
  };

  if (!parts->ropes.empty()) {
    // The ropes have one set of attributes: one frequency table.
    RopeOp o = parts->ropes.front().op;
    int64_t headDim = o.getHeadDim(), rotary = o.getRotaryDim();
    int64_t half = rotary / 2;
    bool neox = o.getStyle() == RopeStyle::neox;
    Value table = ropeFrequencyTable(b, o, e.function());
    Value pos = a.toF32(
        a.toIndex(a.load(e.binding(parts->ropes.front().positions), t)));
    // longrope: the table's long-factor half for a long sequence's token.
    Value offset = ropeFrequencyOffset(e, o, t);
    // Each rope in turn: the token's row of its input, to its result, its
    // cache, or both.
    for (const RopePart &part : parts->ropes) {
      Value x = e.binding(part.input);
      Value y = part.result ? e.binding(*part.result) : Value();
      Type element = e.elementType(part.input);
      // A written value is the result's (rounded to its type) as the cache
      // receives it.
      auto store = [&](Value value, Value column) {
        if (y)
          e.storeF32(value, y, {t, column});
        if (!part.write)
          return;
        if (!element.isF32())
          value = arith::ExtFOp::create(
              b, b.getF32Type(),
              arith::TruncFOp::create(b, element, value).getResult());
        storeToCache(*part.write, column, value);
      };
      int64_t heads = e.bindingType(part.input).getDimSize(1) / headDim;
      // One thread per rotated pair of a head.
      e.threadLoop(e.index(heads * half), [&](Value p) {
        Value h = a.divui(p, e.index(half)), i = a.remui(p, e.index(half));
        Value base = a.muli(h, e.index(headDim));
        auto [s, c] = sinCos(
            e, a.mul(pos, a.load(table, offset ? a.addi(offset, i) : i)));
        if (std::optional<APFloat> factor = o.getAttentionFactor()) {
          Value scale = e.f32(factor->convertToDouble());
          c = a.mul(c, scale);
          s = a.mul(s, scale);
        }
        // NeoX pairs element i with i + rotary/2; GPT-J pairs 2i with 2i+1.
        Value first =
            neox ? a.addi(base, i) : a.addi(base, a.muli(i, e.index(2)));
        Value second = a.addi(first, e.index(neox ? half : 1));
        Value x1 = e.loadF32(x, {t, first}), x2 = e.loadF32(x, {t, second});
        store(a.sub(a.mul(x1, c), a.mul(x2, s)), first);
        store(a.add(a.mul(x2, c), a.mul(x1, s)), second);
      });
      if (rotary < headDim) {
        int64_t rest = headDim - rotary;
        e.threadLoop(e.index(heads * rest), [&](Value p) {
          Value col =
              a.addi(a.muli(a.divui(p, e.index(rest)), e.index(headDim)),
                     a.addi(a.remui(p, e.index(rest)), e.index(rotary)));
          store(e.loadF32(x, {t, col}), col);
        });
      }
    }
  }
  // The writes of inputs: the token's row, copied (or encoded as FP8).
  for (size_t w = 0; w < parts->writes.size(); ++w) {
    std::optional<int> input = parts->writes[w].input;
    if (!input)
      continue;
    Value row = e.binding(*input);
    e.threadLoop(e.dimSize(*input, 1), [&](Value d) {
      storeToCache(w, d, e.loadF32(row, {t, d}));
    });
  }
  int rows = parts->ropes.empty() ? *parts->writes.front().input
                                  : parts->ropes.front().input;
  return Grid{e.dimExpr(rows, 0), "1", "1"};
}

Grid mlir::llmserve::buildQuantizeFp8Kernel(GpuKernelEmitter &e) {
  // A warp per group of 128 columns of a row, 4 consecutive columns a lane
  // (a warp's loads are one contiguous run): the group's largest magnitude
  // by the warp's butterfly (a max, exact in any order), then each lane's
  // codes by the same division and rounding as the CPU's.
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value input = e.binding(0), codes = e.binding(1), scales = e.binding(2);
  constexpr int64_t perLane = kFp8BlockSize / kWarpSize;
  Value t = e.blockId(0);
  Value group = a.addi(a.muli(e.blockId(1), e.index(e.numWarps())), e.warpId());
  Value width = e.dimSize(0, 1);
  e.ifThen(a.cmpi(arith::CmpIPredicate::ult, group, e.dimSize(2, 1)), [&] {
    Value first =
        a.addi(a.muli(group, e.index(kFp8BlockSize)), a.muli(e.laneId(), e.index(perLane)));
    SmallVector<Value> columns, values;
    Value largest = e.f32(0);
    for (int64_t i = 0; i < perLane; ++i) {
      Value k = a.addi(first, e.index(i));
      Value inside = a.cmpi(arith::CmpIPredicate::ult, k, width);
      Value x = a.select(inside, e.loadF32(input, {t, a.select(inside, k, e.index(0))}), e.f32(0));
      largest = a.max(largest, math::AbsFOp::create(b, x));
      columns.push_back(k);
      values.push_back(x);
    }
    largest = e.warpReduce(largest, [&](Value p, Value q) { return a.max(p, q); });
    Value scale = a.div(a.max(largest, e.f32(kFp8ActivationFloor)), e.f32(kFp8Largest));
    for (int64_t i = 0; i < perLane; ++i)
      e.ifThen(a.cmpi(arith::CmpIPredicate::ult, columns[i], width), [&] {
        a.store(encodeE4M3(b, values[i], scale), codes, {t, columns[i]});
      });
    e.ifThen(a.cmpi(arith::CmpIPredicate::eq, e.laneId(), e.index(0)), [&] {
      a.store(scale, scales, {t, group});
    });
  });
  int64_t groups = e.bindingType(2).getDimSize(1);
  return {e.dimExpr(0, 0),
          ShapedType::isDynamic(groups)
              ? ceilDivExpr(e.dimExpr(2, 1), e.numWarps())
              : std::to_string(llvm::divideCeilSigned(groups, e.numWarps())),
          "1"};
}

namespace {

/// Elementwise kernels see every binding as a flat vector; a block takes
/// kElementsPerThread * blockSize consecutive elements, a thread every
/// blockSize-th of them.
Grid elementwise(GpuKernelEmitter &e, int numBindings,
                 const std::function<Value(ArrayRef<Value>)> &fn) {
  Arith &a = e.arith();
  Value n = e.numElements(0);
  SmallVector<Value> flat;
  for (int i = 0; i < numBindings; ++i)
    flat.push_back(e.binding(i, {e.numElements(i)}));
  int64_t perBlock = kElementsPerThread * e.blockSize();
  Value base = a.addi(a.muli(e.blockId(0), e.index(perBlock)), e.threadId());
  for (int64_t j = 0; j < kElementsPerThread; ++j) {
    Value i = a.addi(base, e.index(j * e.blockSize()));
    e.ifThen(a.cmpi(arith::CmpIPredicate::ult, i, n), [&] {
      SmallVector<Value> inputs;
      for (int k = 0; k + 1 < numBindings; ++k)
        inputs.push_back(e.loadF32(flat[k], i));
      e.storeF32(fn(inputs), flat.back(), i);
    });
  }
  return {ceilDivExpr(e.numElementsExpr(0), perBlock), "1", "1"};
}

} // namespace

Grid mlir::llmserve::buildSiluMulKernel(GpuKernelEmitter &e) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  return elementwise(e, 3, [&](ArrayRef<Value> in) {
    Value denominator = a.add(e.f32(1), a.exp(arith::NegFOp::create(b, in[0])));
    return a.mul(a.div(in[0], denominator), in[1]);
  });
}

namespace {

/// 0.5 x (1 + erf(x / sqrt 2)), or with tanh(sqrt(2/pi) (x + 0.044715 x^3)).
Value gelu(GpuKernelEmitter &e, Value x, GeluApproximation approximation) {
  Arith &a = e.arith();
  ImplicitLocOpBuilder &b = e.builder();
  Value inner;
  if (approximation == GeluApproximation::tanh) {
    Value cube = a.mul(a.mul(x, x), x);
    Value arg =
        a.mul(e.f32(std::sqrt(2.0 / M_PI)), a.add(x, a.mul(e.f32(0.044715), cube)));
    inner = math::TanhOp::create(b, arg);
  } else {
    inner = math::ErfOp::create(b, a.mul(x, e.f32(M_SQRT1_2)));
  }
  return a.mul(a.mul(e.f32(0.5), x), a.add(e.f32(1), inner));
}

} // namespace

Grid mlir::llmserve::buildGeluKernel(GpuKernelEmitter &e, GeluOp o) {
  return elementwise(e, 2, [&](ArrayRef<Value> in) {
    return gelu(e, in[0], o.getApproximation());
  });
}

Grid mlir::llmserve::buildSoftcapKernel(GpuKernelEmitter &e, SoftcapOp o) {
  Arith &a = e.arith();
  Value cap = e.f32(o.getCap().convertToDouble());
  return elementwise(e, 2, [&](ArrayRef<Value> in) {
    return a.mul(cap, math::TanhOp::create(e.builder(), a.div(in[0], cap)));
  });
}

Grid mlir::llmserve::buildGeluMulKernel(GpuKernelEmitter &e, GeluMulOp o) {
  return elementwise(e, 3, [&](ArrayRef<Value> in) {
    return e.arith().mul(gelu(e, in[0], o.getApproximation()), in[1]);
  });
}
