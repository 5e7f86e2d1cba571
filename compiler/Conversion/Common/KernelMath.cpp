//===- KernelMath.cpp -----------------------------------------------------===//

#include "compiler/Conversion/Common/KernelMath.h"
#include "compiler/Conversion/Common/KernelEmitter.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

Value Arith::exp(Value x) { return math::ExpOp::create(b, x); }
Value Arith::log(Value x) { return math::LogOp::create(b, x); }

/// ropeFrequencyTable's values.
static SmallVector<float> ropeInverseFrequencies(RopeOp o) {
  int64_t rotary = o.getRotaryDim();
  auto power = [&](int64_t i) {
    float exponent = static_cast<float>(i) / static_cast<float>(rotary);
    return std::pow(static_cast<float>(o.getTheta().convertToDouble()),
                    exponent);
  };
  SmallVector<float> inv;
  for (int64_t i = 0; i < rotary; i += 2)
    inv.push_back(1.0f / power(i));
  switch (o.getScaling()) {
  case RopeScaling::none:
    break;
  case RopeScaling::linear: {
    float factor = static_cast<float>(o.getScalingFactor()->convertToDouble());
    for (float &f : inv)
      f /= factor;
    break;
  }
  case RopeScaling::llama3: {
    // transformers' _compute_llama3_parameters, in its float32 arithmetic.
    float factor = o.getScalingFactor()->convertToDouble();
    double low = o.getLowFreqFactor()->convertToDouble();
    double high = o.getHighFreqFactor()->convertToDouble();
    double oldContext = static_cast<double>(*o.getOriginalMaxPosition());
    float lowWavelen = oldContext / low, highWavelen = oldContext / high;
    for (float &f : inv) {
      float wavelen = static_cast<float>(2 * M_PI) / f;
      float scaled = wavelen > lowWavelen ? f / factor : f;
      if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
        float smooth = (static_cast<float>(oldContext) / wavelen -
                        static_cast<float>(low)) /
                       static_cast<float>(high - low);
        scaled = (1 - smooth) * scaled / factor + smooth * scaled;
      }
      f = scaled;
    }
    break;
  }
  case RopeScaling::longrope: {
    // transformers' _compute_longrope_parameters: 1 / (factor * theta^x),
    // with the short factors and then with the long ones.
    inv.clear();
    for (DenseElementsAttr factors : {*o.getShortFactor(), *o.getLongFactor()})
      for (auto [i, factor] : llvm::enumerate(factors.getValues<float>()))
        inv.push_back(1.0f / (factor * power(2 * i)));
    break;
  }
  }
  return inv;
}

Value mlir::llmserve::ropeFrequencyTable(ImplicitLocOpBuilder &b, RopeOp o,
                                         SymbolOpInterface kernel) {
  SmallVector<float> inv = ropeInverseFrequencies(o);
  auto type =
      MemRefType::get({static_cast<int64_t>(inv.size())}, b.getF32Type());
  std::string name = (kernel.getName() + "_inv_freq").str();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(kernel);
    auto values = DenseElementsAttr::get(
        RankedTensorType::get(type.getShape(), b.getF32Type()), ArrayRef(inv));
    memref::GlobalOp::create(b, b.getStringAttr(name),
                             b.getStringAttr("private"), TypeAttr::get(type),
                             values, b.getUnitAttr(), IntegerAttr());
  }
  return memref::GetGlobalOp::create(b, type, name);
}

Value mlir::llmserve::ropeFrequencyOffset(KernelEmitter &e, RopeOp o,
                                          Value row) {
  if (o.getScaling() != RopeScaling::longrope)
    return {};
  // Bindings 2 and 3 are context_len [S] and query_start [S + 1].
  Arith &a = e.arith();
  Value seq = e.sequenceOf(e.binding(3), e.dimSize(2, 0), row);
  Value context = a.toIndex(a.load(e.binding(2), seq));
  Value longer = a.cmpi(arith::CmpIPredicate::sgt, context,
                        e.index(*o.getOriginalMaxPosition()));
  return a.select(longer, e.index(o.getRotaryDim() / 2), e.index(0));
}

Value mlir::llmserve::counterUniform(ImplicitLocOpBuilder &b, Value seed,
                                     Value offset, Value token) {
  auto i64 = b.getI64Type();
  auto c = [&](uint64_t v) {
    return arith::ConstantIntOp::create(b, i64, static_cast<int64_t>(v));
  };
  auto mix = [&](Value z, int shift, uint64_t mult) {
    z = arith::XOrIOp::create(b, z, arith::ShRUIOp::create(b, z, c(shift)));
    return arith::MulIOp::create(b, z, c(mult));
  };
  Value z = arith::AddIOp::create(
      b, arith::MulIOp::create(b, seed, c(0x9E3779B97F4A7C15ull)),
      arith::AddIOp::create(
          b,
          arith::MulIOp::create(b, arith::ExtSIOp::create(b, i64, offset),
                                c(0xD1B54A32D192ED03ull)),
          arith::IndexCastOp::create(b, i64, token)));
  z = mix(z, 30, 0xBF58476D1CE4E5B9ull);
  z = mix(z, 27, 0x94D049BB133111EBull);
  z = arith::XOrIOp::create(b, z, arith::ShRUIOp::create(b, z, c(31)));
  // The top 23 bits, centred in their interval: (bits + 0.5) / 2^23 is
  // exact in f32, so u is at most 1 - 2^-24 and the noise finite (24 bits
  // would round the largest draw up to 1 and give its token infinite noise).
  Value bits = arith::ShRUIOp::create(b, z, c(64 - kUniformBits));
  Value f = arith::UIToFPOp::create(b, b.getF32Type(), bits);
  auto f32 = [&](float v) {
    return arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(v));
  };
  return arith::MulFOp::create(b, arith::AddFOp::create(b, f, f32(0.5f)),
                               f32(1.0f / (1 << kUniformBits)));
}

Value mlir::llmserve::gumbel(ImplicitLocOpBuilder &b, Value u) {
  return arith::NegFOp::create(
      b, math::LogOp::create(
             b, arith::NegFOp::create(b, math::LogOp::create(b, u))));
}

Value mlir::llmserve::routerScore(Arith &a, Value logit, MoeScoring scoring,
                                  Value max, Value sum) {
  if (scoring == MoeScoring::softmax)
    return a.div(a.exp(a.sub(logit, max)), sum);
  Type f32 = logit.getType();
  Value one = arith::ConstantOp::create(a.b, f32, a.b.getFloatAttr(f32, 1.0));
  return a.div(one, a.add(one, a.exp(arith::NegFOp::create(a.b, logit))));
}

Value mlir::llmserve::ranksAfter(Arith &a, Value score, Value index,
                                 Value previous, Value previousIndex) {
  return arith::OrIOp::create(
      a.b, a.cmpf(arith::CmpFPredicate::OLT, score, previous),
      a.andi(a.cmpf(arith::CmpFPredicate::OEQ, score, previous),
             a.cmpi(arith::CmpIPredicate::sgt, index, previousIndex)));
}

Type mlir::llmserve::withElement(Type type, Type element) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.clone(element);
  return element;
}

namespace {

/// A constant of `type` (scalar or vector), every element `value`.
Value splat(ImplicitLocOpBuilder &b, Type type, TypedAttr value) {
  if (auto vector = dyn_cast<VectorType>(type))
    return arith::ConstantOp::create(b, DenseElementsAttr::get(vector, value));
  return arith::ConstantOp::create(b, value);
}

Value i32Splat(ImplicitLocOpBuilder &b, Type type, int32_t value) {
  return splat(b, type, b.getI32IntegerAttr(value));
}

} // namespace

Value mlir::llmserve::f32Splat(ImplicitLocOpBuilder &b, Type type,
                               float value) {
  return splat(b, type, b.getF32FloatAttr(value));
}

namespace {

// e4m3: 1 sign, 4 exponent (bias 7) and 3 mantissa bits. A normal value's
// code is its f32 bits with the exponent rebased by 127 - 7 and the low 20
// mantissa bits rounded off; below 2^-6 the codes count steps of 2^-9.
constexpr int32_t kMantissaShift = 20;
constexpr int32_t kRebase = (127 - 7) << 23;
constexpr float kSmallestNormal = 0x1p-6f;
constexpr float kSubnormalStep = 0x1p-9f;
constexpr float kLargest = 448.0f;
constexpr int32_t kNaN = 0x7f;

} // namespace

Value mlir::llmserve::broadcastF32(ImplicitLocOpBuilder &b, Type type,
                                   Value scalar) {
  if (!isa<VectorType>(type))
    return scalar;
  FloatAttr constant;
  if (matchPattern(scalar, m_Constant(&constant)))
    return f32Splat(b, type, constant.getValue().convertToFloat());
  return vector::BroadcastOp::create(b, type, scalar);
}

Value mlir::llmserve::kvCacheScale(ImplicitLocOpBuilder &b,
                                   ArrayRef<float> scales, Value kvHead) {
  assert(!scales.empty() && "an FP8 KV cache has at least one scale");
  if (llvm::all_equal(scales)) {
    if (scales.front() == 1.0f)
      return nullptr;
    return arith::ConstantOp::create(b, b.getF32FloatAttr(scales.front()));
  }
  // Heads are few (8 in most models): a chain of selects, evaluated once
  // per kernel instance, rather than a table in memory.
  Value scale = arith::ConstantOp::create(b, b.getF32FloatAttr(scales.front()));
  for (auto [head, value] : llvm::enumerate(scales.drop_front())) {
    Value isHead = arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq, kvHead,
        arith::ConstantIndexOp::create(b, static_cast<int64_t>(head) + 1));
    scale = arith::SelectOp::create(
        b, isHead, arith::ConstantOp::create(b, b.getF32FloatAttr(value)), scale);
  }
  return scale;
}

Value mlir::llmserve::encodeE4M3(ImplicitLocOpBuilder &b, Value x,
                                 Value scale) {
  Type f32 = x.getType(), i32 = withElement(f32, b.getI32Type());
  auto i32Of = [&](int32_t v) { return i32Splat(b, i32, v); };
  auto f32Of = [&](float v) { return f32Splat(b, f32, v); };
  if (scale)
    x = arith::DivFOp::create(b, x, broadcastF32(b, f32, scale));
  Value bits = arith::BitcastOp::create(b, i32, x);
  Value sign = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, bits, i32Of(24)), i32Of(0x80));
  Value magnitude = arith::BitcastOp::create(
      b, f32, arith::AndIOp::create(b, bits, i32Of(0x7fffffff)));
  Value clamped = arith::MinimumFOp::create(b, magnitude, f32Of(kLargest));

  // Normal: round to nearest even at the 20th bit of the rebased bits.
  Value rebased = arith::SubIOp::create(
      b, arith::BitcastOp::create(b, i32, clamped), i32Of(kRebase));
  Value odd = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, rebased, i32Of(kMantissaShift)), i32Of(1));
  Value rounded = arith::AddIOp::create(
      b, rebased,
      arith::AddIOp::create(b, odd, i32Of((1 << (kMantissaShift - 1)) - 1)));
  Value normal = arith::ShRUIOp::create(b, rounded, i32Of(kMantissaShift));
  // Subnormal: steps of 2^-9, rounded to nearest even (8 steps round up to
  // the smallest normal's code).
  Value steps = math::RoundEvenOp::create(
      b, arith::MulFOp::create(b, clamped, f32Of(1 / kSubnormalStep)));
  Value subnormal = arith::FPToSIOp::create(b, i32, steps);
  Value small = arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, clamped,
                                      f32Of(kSmallestNormal));
  Value code = arith::SelectOp::create(b, small, subnormal, normal);
  Value nan = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, x, x);
  code = arith::SelectOp::create(b, nan, i32Of(kNaN), code);
  return arith::TruncIOp::create(
      b, withElement(f32, b.getI8Type()), arith::OrIOp::create(b, code, sign));
}

Value mlir::llmserve::decodeE4M3(ImplicitLocOpBuilder &b, Value codes,
                                 Value scale) {
  Type i32 = withElement(codes.getType(), b.getI32Type()),
       f32 = withElement(codes.getType(), b.getF32Type());
  auto i32Of = [&](int32_t v) { return i32Splat(b, i32, v); };
  Value c = arith::ExtUIOp::create(b, i32, codes);
  Value sign = arith::ShLIOp::create(b, arith::AndIOp::create(b, c, i32Of(0x80)),
                                     i32Of(24));
  Value magnitude = arith::AndIOp::create(b, c, i32Of(0x7f));
  Value normal = arith::AddIOp::create(
      b, arith::ShLIOp::create(b, magnitude, i32Of(kMantissaShift)),
      i32Of(kRebase));
  Value subnormal = arith::BitcastOp::create(
      b, i32,
      arith::MulFOp::create(b, arith::SIToFPOp::create(b, f32, magnitude),
                            f32Splat(b, f32, kSubnormalStep)));
  Value small = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, magnitude,
                                      i32Of(1 << 3));
  Value bits = arith::SelectOp::create(b, small, subnormal, normal);
  Value nan = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, magnitude,
                                    i32Of(kNaN));
  bits = arith::SelectOp::create(b, nan, i32Of(0x7fc00000), bits);
  Value x =
      arith::BitcastOp::create(b, f32, arith::OrIOp::create(b, bits, sign));
  if (!scale)
    return x;
  return arith::MulFOp::create(b, x, broadcastF32(b, f32, scale));
}
