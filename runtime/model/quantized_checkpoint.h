// Weights a checkpoint stores quantized: linears in 4 bits (GPTQ, AWQ),
// unpacked into int4_group128 arrays with zero points, and FP8 weights with
// block scales, dequantized (docs/bundle.md).
#ifndef LLMSERVE_MODEL_QUANTIZED_CHECKPOINT_H
#define LLMSERVE_MODEL_QUANTIZED_CHECKPOINT_H

#include "model/safetensors.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

enum class QuantizedCheckpoint {
  // AutoGPTQ: qweight int32 [K / 8, N], eight 4-bit values along K a word
  // (row k at bits 4 (k % 8)); qzeros int32 [K / G, N / 8] along N, each the
  // zero point minus one; scales [K / G, N]; g_idx int32 [K], the group of
  // each row of K.
  Gptq,
  // GPTQModel's gptq_v2: as Gptq, with the zero points as they are.
  GptqV2,
  // AutoAWQ's GEMM layout: qweight int32 [K, N / 8] and qzeros int32
  // [K / G, N / 8], eight values along N a word in the order 0, 2, 4, 6, 1,
  // 3, 5, 7 (word bits 4i hold column 8j + order[i]); scales [K / G, N].
  Awq,
  // quant_method fp8 with weight_block_size [128, 128] (Qwen3-8B-FP8,
  // DeepSeek-V3): weight F8_E4M3 [N, K] and weight_scale_inv F32 or BF16
  // [ceil(N / 128), ceil(K / 128)], w[n, k] = weight[n, k] *
  // weight_scale_inv[n / 128, k / 128].
  Fp8Block128,
  // compressed-tensors' float-quantized and int-quantized formats: weight
  // F8_E4M3 or I8 [N, K] and <module>.weight_scale F32, BF16 or F16 with one
  // scale for the tensor ([] or [1]), per row ([N, 1]), per group of columns
  // ([N, K / G]) or per block of 128 x 128 ([ceil(N / 128), ceil(K / 128)]);
  // w = weight * scale.
  CompressedTensors,
  // compressed-tensors' pack-quantized format in symmetric 4-bit groups of
  // 128: weight_packed I32 [N, K / 8], eight values along K a word (column
  // 8j + i at bits 4i, stored plus 8), weight_scale [N, K / 128] and
  // weight_shape [N, K].
  CompressedTensorsInt4,
};

// Whether `c` stores linears in 4 bits with zero points (GPTQ, AWQ,
// compressed-tensors' pack-quantized), which int4_group128 can read as
// stored; the others are dequantized as they load.
inline bool is_four_bit(QuantizedCheckpoint c) {
  return c == QuantizedCheckpoint::Gptq || c == QuantizedCheckpoint::GptqV2 ||
         c == QuantizedCheckpoint::Awq || c == QuantizedCheckpoint::CompressedTensorsInt4;
}

// The bundle's spellings: "gptq", "gptq_v2", "awq", "fp8_block128",
// "compressed_tensors", "compressed_tensors_int4".
const char *quantized_checkpoint_name(QuantizedCheckpoint c);
std::optional<QuantizedCheckpoint> parse_quantized_checkpoint(std::string_view name);

// One linear y = x·Wᵀ of [N, K] in groups of 128 inputs with zero points:
// W[n, k] = (values[n, k] + 8 - zeros[n, g]) * scales[n, g] for k's group
// g = group[k], values in [-8, 7] and zeros in [0, 16] (GPTQ's stored zero
// point plus one, as its kernels compute it), row-major, one a byte. Its
// groups are k / 128 (int4_group128 as stored) unless the checkpoint is
// act-order (GPTQ's desc_act), whose g_idx assigns them.
struct Int4WithZeros {
  int64_t rows = 0, cols = 0;
  std::vector<int8_t> values; // [rows, cols]
  std::vector<float> scales;  // [rows, cols / 128]
  std::vector<int8_t> zeros;  // [rows, cols / 128]
  std::vector<int32_t> group; // [cols]
  bool act_order = false;     // some group[k] != k / 128
};

// Unpacks a linear's tensors (g_idx only for GPTQ, and optional there).
// Throws std::runtime_error naming the tensor at fault: a dtype or shape
// that is not the layout's, a group size other than 128, a g_idx entry
// outside the groups, a non-finite scale.
Int4WithZeros unpack_int4_checkpoint(QuantizedCheckpoint layout, const TensorView &qweight,
                                     const TensorView &qzeros, const TensorView &scales,
                                     const TensorView *g_idx);

// Unpacks a compressed-tensors pack-quantized linear (zero points of 8).
// Throws std::runtime_error naming the tensor at fault: a dtype or shape
// that is not the layout's, a group size other than 128, a non-finite scale.
Int4WithZeros unpack_compressed_int4(const TensorView &weight_packed,
                                     const TensorView &weight_scale,
                                     const TensorView &weight_shape);

// W of an unpacked linear as f32 [N, K], row-major.
std::vector<float> dequantize_int4(const Int4WithZeros &linear);

// The name of an FP8 weight's block scales: "<weight>_scale_inv".
std::string fp8_scale_name(const std::string &weight);

// Checks that an FP8 weight is a 2-D F8_E4M3 tensor; throws
// std::runtime_error naming the tensor otherwise.
void check_fp8_weight(const TensorView &weight);
// check_fp8_weight, and that no code is NaN (a scan of every code).
void check_fp8_codes(const TensorView &weight);

// The block scales of FP8 weight `weight` (checked by check_fp8_weight) as
// f32 [ceil(N / 128), ceil(K / 128)], row-major; throws naming
// `scale_inv` when they are not F32 or BF16 of that shape, or not finite.
std::vector<float> fp8_block_scales(const TensorView &weight, const TensorView &scale_inv);

// An FP8 weight with 128 x 128 block scales as f32 [N, K], row-major.
// Throws std::runtime_error naming the tensor at fault: a weight that is not
// a 2-D F8_E4M3 tensor or holds a NaN code, scales that are not F32 or BF16
// [ceil(N / 128), ceil(K / 128)] or not finite.
std::vector<float> dequantize_fp8_block128(const TensorView &weight, const TensorView &scale_inv);

// The scales of a compressed-tensors weight "<module>.weight":
// "<module>.weight_scale".
std::string compressed_scale_name(const std::string &weight);

// A compressed-tensors FP8 or int8 weight as f32 [N, K], row-major, its
// scale's shape saying how it is shared (CompressedTensors). Throws
// std::runtime_error naming the tensor at fault: a weight that is not a 2-D
// F8_E4M3 or I8 tensor or holds a NaN code, scales of another dtype or of a
// shape none of the strategies has, or not finite.
std::vector<float> dequantize_compressed(const TensorView &weight, const TensorView &scale);

} // namespace llmserve

#endif // LLMSERVE_MODEL_QUANTIZED_CHECKPOINT_H
