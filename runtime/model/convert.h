// Repacks a checkpoint tensor into the dtype and layout a kernel wants.
#ifndef LLMSERVE_MODEL_CONVERT_H
#define LLMSERVE_MODEL_CONVERT_H

#include "model/safetensors.h"

#include <cstdint>

namespace llmserve {

// Writes `src` to `dst` as `dst_dtype` (numel * dtype_size(dst_dtype) bytes),
// transposed if `transpose` (src must then be 2-D: [r, c] becomes [c, r]).
// Floats convert among F32, F16, BF16 and F8E4M3 rounding to nearest even
// (F8E4M3 saturating to +-448, as an FP8 KV cache stores); integer
// tensors are only copied as they are. Throws naming the tensor otherwise.
void convert_tensor(const TensorView &src, DType dst_dtype, bool transpose,
                    void *dst);

// Scalar conversions, exposed for tests and for kernels' references.
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t b);
uint16_t f32_to_bf16(float f);
float e4m3_to_f32(uint8_t c);
uint8_t f32_to_e4m3(float f);

} // namespace llmserve

#endif // LLMSERVE_MODEL_CONVERT_H
