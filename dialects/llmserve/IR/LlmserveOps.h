//===- LlmserveOps.h - llmserve tensor-level ops ----------------*- C++ -*-===//

#ifndef LLMSERVE_IR_LLMSERVEOPS_H
#define LLMSERVE_IR_LLMSERVEOPS_H

#include "llmserve/IR/LlmserveDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::llmserve {
/// Columns of a group of int4_group128, which share a scale.
inline constexpr int64_t kInt4GroupColumns = 128;
/// The rows and columns of a block of an FP8 checkpoint's weight that share
/// a scale (fp8_block128).
inline constexpr int64_t kFp8BlockSize = 128;
/// e4m3's largest value, which llmserve.quantize_fp8 maps a group's largest
/// magnitude to, and the magnitude below which a group's scale stops
/// shrinking (an all-zero group gets codes of zero).
inline constexpr float kFp8Largest = 448.0f;
inline constexpr float kFp8ActivationFloor = 1e-10f;
/// The scales of a linear's quantized weight of type `weight`: [N] for i8
/// values (int8_channel), [N, K / 128] for i4 (int4_group128), [ceil(N /
/// 128), ceil(K / 128)] for f8E4M3FN (fp8_block128).
Type quantizedScalesType(Type weight);
/// The narrow float type `name` spells ("bf16" or "f16"); null for another
/// name.
inline FloatType narrowFloatType(MLIRContext *ctx, StringRef name) {
  if (name == "bf16")
    return BFloat16Type::get(ctx);
  if (name == "f16")
    return Float16Type::get(ctx);
  return {};
}
/// Whether `checkpoint` stores linears in 4 bits (GPTQ, AWQ, compressed-
/// tensors' pack-quantized), the layouts int4_group128 can read as stored;
/// the others are dequantized as they load.
inline bool isFourBit(std::optional<QuantizedCheckpoint> checkpoint) {
  return checkpoint && (*checkpoint == QuantizedCheckpoint::gptq ||
                        *checkpoint == QuantizedCheckpoint::gptq_v2 ||
                        *checkpoint == QuantizedCheckpoint::awq ||
                        *checkpoint == QuantizedCheckpoint::compressed_tensors_int4);
}
/// The zero points of a linear's i4 weight [N, K]: i8 [N, K / 128].
Type quantizedZerosType(Type weight);
/// The scales of an expert_linear's i8 weight [E, N, K]: f32 [E, N].
Type expertScalesType(Type weight);
/// The scales of x [M, K] quantized to FP8 by llmserve.quantize_fp8: f32
/// [M, ceil(K / 128)], one per row and group of 128 columns.
Type activationScalesType(Type input);
} // namespace mlir::llmserve

#define GET_OP_CLASSES
#include "llmserve/IR/LlmserveOps.h.inc"

#endif // LLMSERVE_IR_LLMSERVEOPS_H
