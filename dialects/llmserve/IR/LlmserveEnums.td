//===- LlmserveEnums.td - llmserve enum attributes ---------*- tablegen -*-===//

#ifndef LLMSERVE_IR_LLMSERVEENUMS_TD
#define LLMSERVE_IR_LLMSERVEENUMS_TD

include "llmserve/IR/LlmserveBase.td"
include "mlir/IR/EnumAttr.td"

// Enum attributes print their value with a leading space (after the mnemonic
// in the generic form), so op formats put `` before them to avoid a double
// space: `style neox`, not `style  neox`.

def Llmserve_RopeStyle : I32Enum<"RopeStyle",
    "which pairs of a head's channels rotary embedding rotates together", [
      // Channel i pairs with channel i + rotary_dim / 2 (rotate-half).
      I32EnumCase<"neox", 0>,
      // Channel 2i pairs with channel 2i + 1 (interleaved).
      I32EnumCase<"gptj", 1>
    ]> {
  let cppNamespace = "::mlir::llmserve";
}
def Llmserve_RopeStyleAttr
    : EnumAttr<Llmserve_Dialect, Llmserve_RopeStyle, "rope_style">;

def Llmserve_RopeScaling : I32Enum<"RopeScaling",
    "how rotary embedding frequencies are rescaled for long contexts", [
      I32EnumCase<"none", 0>,
      // Positions are divided by scaling_factor.
      I32EnumCase<"linear", 1>,
      // Llama 3.1: low frequencies divided by scaling_factor, high ones kept,
      // a smooth blend in between.
      I32EnumCase<"llama3", 2>,
      // LongRoPE (Phi-3): per-pair factors, short ones for a sequence up to
      // the original context and long ones past it, and cos and sin scaled.
      I32EnumCase<"longrope", 3>
    ]> {
  let cppNamespace = "::mlir::llmserve";
}
def Llmserve_RopeScalingAttr
    : EnumAttr<Llmserve_Dialect, Llmserve_RopeScaling, "rope_scaling">;

def Llmserve_GeluApproximation : I32Enum<"GeluApproximation",
    "how GELU evaluates the normal CDF", [
      // x * 0.5 * (1 + erf(x / sqrt(2)))
      I32EnumCase<"none", 0>,
      // x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
      I32EnumCase<"tanh", 1>
    ]> {
  let cppNamespace = "::mlir::llmserve";
}
def Llmserve_GeluApproximationAttr
    : EnumAttr<Llmserve_Dialect, Llmserve_GeluApproximation,
               "gelu_approximation">;

def Llmserve_MoeScoring : I32Enum<"MoeScoring",
    "how a mixture-of-experts router turns logits into expert scores", [
      // softmax over all experts (Mixtral, Qwen3-MoE)
      I32EnumCase<"softmax", 0>,
      // each expert's sigmoid on its own (DeepSeek-V3's scoring_func)
      I32EnumCase<"sigmoid", 1>
    ]> {
  let cppNamespace = "::mlir::llmserve";
}
def Llmserve_MoeScoringAttr
    : EnumAttr<Llmserve_Dialect, Llmserve_MoeScoring, "moe_scoring">;

def Llmserve_WeightQuantization : I32Enum<"WeightQuantization",
    "how a quantized weight stores an f32 matrix", [
      // Each row (output channel) n of [N, K]: int8 values q and one f32
      // scale s, with w[n, k] ~ q[n, k] * s[n]; s[n] = max_k |w[n, k]| / 127
      // (1 for an all-zero row) and q rounded to nearest, ties to even.
      I32EnumCase<"int8_channel", 0>,
      // Each row n and group of 128 columns g of [N, K] (K a multiple of
      // 128): int4 values q in [-8, 7] (values [N, K] i4) and one f32 scale
      // s (scales [N, K / 128]), with w[n, k] ~ q[n, k] * s[n, k / 128]; s is
      // the group's first element of largest magnitude over -8 (1 for a
      // group of zeros), q rounded to nearest, ties to even.
      I32EnumCase<"int4_group128", 1>,
      // An FP8 checkpoint's weight as it stores it (`from fp8_block128`
      // only; never quantized at load): e4m3 codes q (values [N, K]
      // f8E4M3FN) and one f32 scale per block of 128 x 128 (scales
      // [ceil(N / 128), ceil(K / 128)], the checkpoint's `_scale_inv`), with
      // w[n, k] = q[n, k] * s[n / 128, k / 128].
      I32EnumCase<"fp8_block128", 2>
    ]> {
  let cppNamespace = "::mlir::llmserve";
}
def Llmserve_WeightQuantizationAttr
    : EnumAttr<Llmserve_Dialect, Llmserve_WeightQuantization,
               "weight_quantization">;

def Llmserve_QuantizedPart : I32Enum<"QuantizedPart",
    "which array of a quantized weight a weight op reads", [
      I32EnumCase<"values", 0>,
      I32EnumCase<"scales", 1>,
      // int4_group128 from a checkpoint with zero points: z in [0, 16] per
      // row and group, w ~ (q + 8 - z) * s.
      I32EnumCase<"zeros", 2>
    ]> {
  let cppNamespace = "::mlir::llmserve";
}
def Llmserve_QuantizedPartAttr
    : EnumAttr<Llmserve_Dialect, Llmserve_QuantizedPart, "quantized_part">;

def Llmserve_QuantizedCheckpoint : I32Enum<"QuantizedCheckpoint",
    "the layout of a checkpoint that stores a weight quantized", [
      // AutoGPTQ: qweight int32 [K / 8, N] packed along K, qzeros int32
      // [K / G, N / 8] holding each zero point minus one, scales [K / G, N],
      // g_idx [K].
      I32EnumCase<"gptq", 0>,
      // GPTQModel's gptq_v2: the same with the zero points as they are.
      I32EnumCase<"gptq_v2", 1>,
      // AutoAWQ's GEMM layout: qweight int32 [K, N / 8] and qzeros int32
      // [K / G, N / 8] packed along N in the order 0, 2, 4, 6, 1, 3, 5, 7;
      // scales [K / G, N].
      I32EnumCase<"awq", 2>,
      // quant_method fp8 with weight_block_size [128, 128]: the weight F8_E4M3
      // [N, K] and its `<weight>_scale_inv` [ceil(N / 128), ceil(K / 128)],
      // w = weight * scale of its block.
      I32EnumCase<"fp8_block128", 3>,
      // compressed-tensors' float-quantized and int-quantized formats
      // (llm-compressor): the weight F8_E4M3 or I8 [N, K] and
      // `<module>.weight_scale` per tensor [1], per row [N, 1], per group
      // [N, K / G] or per block [ceil(N / 128), ceil(K / 128)];
      // w = weight * scale.
      I32EnumCase<"compressed_tensors", 4>,
      // compressed-tensors' pack-quantized format in symmetric 4-bit groups
      // of 128: `<module>.weight_packed` int32 [N, K / 8] packed along K
      // (column 8j + i at bits 4i, stored plus 8), `<module>.weight_scale`
      // [N, K / 128] and `<module>.weight_shape` [N, K].
      I32EnumCase<"compressed_tensors_int4", 5>
    ]> {
  let cppNamespace = "::mlir::llmserve";
}
def Llmserve_QuantizedCheckpointAttr
    : EnumAttr<Llmserve_Dialect, Llmserve_QuantizedCheckpoint,
               "quantized_checkpoint">;

#endif // LLMSERVE_IR_LLMSERVEENUMS_TD
