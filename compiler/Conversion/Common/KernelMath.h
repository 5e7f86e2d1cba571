//===- KernelMath.h - Arithmetic shared by the CPU and GPU kernels --------===//
//
// What both targets must compute the same way: scalar arithmetic shorthands,
// the rotary inverse frequencies, the sampler's counter-based noise (so
// that a seed samples the same tokens on either target), and the FP8
// conversions of the KV cache.
//
//===----------------------------------------------------------------------===//

#ifndef LLMSERVE_CONVERSION_COMMON_KERNELMATH_H
#define LLMSERVE_CONVERSION_COMMON_KERNELMATH_H

#include "llmserve/IR/LlmserveOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::llmserve {

/// Arithmetic shorthands over a builder.
struct Arith {
  ImplicitLocOpBuilder &b;
  arith::FastMathFlagsAttr reassoc;

  explicit Arith(ImplicitLocOpBuilder &b)
      : b(b), reassoc(arith::FastMathFlagsAttr::get(
                  b.getContext(), arith::FastMathFlags::reassoc |
                                      arith::FastMathFlags::contract)) {}
  Value add(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, x, y); }
  Value max(Value x, Value y) { return arith::MaximumFOp::create(b, x, y); }
  Value min(Value x, Value y) { return arith::MinimumFOp::create(b, x, y); }
  Value exp(Value x);
  Value log(Value x);
  /// A sum term whose order the backend may vectorize (used for dot
  /// products: the order is still fixed by the compiled code, never by the
  /// batch).
  Value addReassoc(Value x, Value y) {
    return arith::AddFOp::create(b, x, y, reassoc);
  }
  Value mulReassoc(Value x, Value y) {
    return arith::MulFOp::create(b, x, y, reassoc);
  }
  Value addi(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value subi(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value muli(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value divui(Value x, Value y) { return arith::DivUIOp::create(b, x, y); }
  Value remui(Value x, Value y) { return arith::RemUIOp::create(b, x, y); }
  Value mini(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
  Value maxi(Value x, Value y) { return arith::MaxSIOp::create(b, x, y); }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  Value cmpf(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, p, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, c, x, y);
  }
  Value andi(Value x, Value y) { return arith::AndIOp::create(b, x, y); }
  Value toIndex(Value i32) {
    return arith::IndexCastOp::create(b, b.getIndexType(), i32);
  }
  Value toF32(Value index) {
    Value i64 = arith::IndexCastOp::create(b, b.getI64Type(), index);
    return arith::SIToFPOp::create(b, b.getF32Type(), i64);
  }
  Value load(Value memref, ValueRange indices) {
    return memref::LoadOp::create(b, memref, indices);
  }
  void store(Value v, Value memref, ValueRange indices) {
    memref::StoreOp::create(b, v, memref, indices);
  }
};

/// The rotary inverse frequencies of `op`, computed the way Hugging Face
/// computes them (in float32), with the op's scaling applied: rotary_dim / 2
/// of them, or for longrope the short factors' and then the long ones'. They
/// are a constant global, "<kernel's name>_inv_freq", placed before `kernel`;
/// returns it as a memref, got at the builder's point.
Value ropeFrequencyTable(ImplicitLocOpBuilder &b, RopeOp op,
                         SymbolOpInterface kernel);

class KernelEmitter;
/// Where the frequencies of token `row` start in ropeInverseFrequencies(op),
/// for a kernel binding the op's operands in order: for longrope, rotary_dim
/// / 2 (the long factors') when the row's sequence is longer than
/// original_max_position after the step, else 0; null for other scalings.
Value ropeFrequencyOffset(KernelEmitter &e, RopeOp op, Value row);

/// A uniform f32 in [2^-24, 1 - 2^-24] from (seed i64, offset i32, token
/// index): the top kUniformBits of splitmix64, so a sequence's random stream
/// depends only on its own seed and position.
inline constexpr int kUniformBits = 23;
Value counterUniform(ImplicitLocOpBuilder &b, Value seed, Value offset,
                     Value token);

/// The Gumbel noise -log(-log(u)) of a uniform u.
Value gumbel(ImplicitLocOpBuilder &b, Value u);

/// moe_router's score of `logit`: exp(logit - max) / sum for a softmax (the
/// row's largest logit and sum of exponentials), 1 / (1 + exp(-logit)) for a
/// sigmoid.
Value routerScore(Arith &a, Value logit, MoeScoring scoring, Value max,
                  Value sum);
/// Whether (score, index) ranks after (previous, previousIndex) in
/// moe_router's order of picks: a lower score, or the same at a higher index.
Value ranksAfter(Arith &a, Value score, Value index, Value previous,
                 Value previousIndex);

/// `type` with its element type replaced: a scalar or a vector of the same
/// shape.
Type withElement(Type type, Type element);
/// A constant of `type` (f32, or a vector of f32), every element `value`.
Value f32Splat(ImplicitLocOpBuilder &b, Type type, float value);

/// The scale of KV head `kvHead` (an index) of an FP8 KV cache with
/// `scales` (kv_write's or paged_attention's: one, or one per KV head), as
/// an f32: a constant where every head has the same, null where that is 1.
Value kvCacheScale(ImplicitLocOpBuilder &b, ArrayRef<float> scales,
                   Value kvHead);

/// OCP FP8 e4m3 (`f8E4M3FN`), whose codes kernels hold as i8, with a scale
/// (an f32 from kvCacheScale; null for 1): `x` (f32, or a vector of f32) /
/// `scale` to its codes, rounded to the nearest value (ties to even) and
/// saturated to +-448, NaN to NaN; and codes back to f32 times `scale`.
/// Integer arithmetic, so that both targets convert bit for bit alike,
/// whatever their handling of subnormal floats.
Value encodeE4M3(ImplicitLocOpBuilder &b, Value x, Value scale);
Value decodeE4M3(ImplicitLocOpBuilder &b, Value codes, Value scale);

/// The f32 `scalar` as `type` (f32, or a vector of f32): itself, or each
/// element it (a splat constant for a constant).
Value broadcastF32(ImplicitLocOpBuilder &b, Type type, Value scalar);

} // namespace mlir::llmserve

#endif
