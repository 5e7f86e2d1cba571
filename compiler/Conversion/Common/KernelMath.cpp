//===- KernelMath.cpp -----------------------------------------------------===//

#include "compiler/Conversion/Common/KernelMath.h"
#include "compiler/Conversion/Common/KernelEmitter.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmserve;

Value Arith::exp(Value x) { return math::ExpOp::create(b, x); }
Value Arith::log(Value x) { return math::LogOp::create(b, x); }

SmallVector<float> mlir::llmserve::ropeInverseFrequencies(RopeOp o) {
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
  // The top 24 bits, centred in their interval.
  Value bits = arith::ShRUIOp::create(b, z, c(40));
  Value f = arith::UIToFPOp::create(b, b.getF32Type(), bits);
  auto f32 = [&](float v) {
    return arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(v));
  };
  return arith::MulFOp::create(b, arith::AddFOp::create(b, f, f32(0.5f)),
                               f32(1.0f / (1 << 24)));
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
