// Element types of tensors in checkpoints and bundle buffers.
#ifndef LLMSERVE_MODEL_DTYPE_H
#define LLMSERVE_MODEL_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace llmserve {

// F8E4M3 is OCP FP8 e4m3 (no infinities, one NaN code per sign), what an
// FP8 KV cache holds.
enum class DType { F32, F16, BF16, I32, I64, I8, F8E4M3 };

size_t dtype_size(DType dtype);
// The bundle's spelling: "f32", "f16", "bf16", "i32", "i64", "i8", "f8_e4m3".
const char *dtype_name(DType dtype);
// The safetensors spelling: "F32", "F16", "BF16", "I32", "I64", "I8", "F8_E4M3".
const char *safetensors_dtype_name(DType dtype);
// Accepts either spelling; nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view name);

} // namespace llmserve

#endif // LLMSERVE_MODEL_DTYPE_H
