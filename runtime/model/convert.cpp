#include "model/convert.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace llmserve {

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool is_float(DType d) {
  return d == DType::F32 || d == DType::F16 || d == DType::BF16;
}

// Element loads and stores through memcpy: checkpoint data is not aligned.
float load_float(const uint8_t *p, DType dtype) {
  if (dtype == DType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

void store_float(uint8_t *p, DType dtype, float f) {
  if (dtype == DType::F32) {
    std::memcpy(p, &f, 4);
    return;
  }
  uint16_t h = dtype == DType::F16 ? f32_to_f16(f) : f32_to_bf16(f);
  std::memcpy(p, &h, 2);
}

// How each float dtype is stored, and its conversions through f32.
template <DType D> struct Stored { using type = uint16_t; };
template <> struct Stored<DType::F32> { using type = float; };

template <DType D> float widen(typename Stored<D>::type v) {
  if constexpr (D == DType::F32)
    return v;
  else if constexpr (D == DType::F16)
    return f16_to_f32(v);
  else
    return bf16_to_f32(v);
}

template <DType D> typename Stored<D>::type narrow(float f) {
  if constexpr (D == DType::F32)
    return f;
  else if constexpr (D == DType::F16)
    return f32_to_f16(f);
  else
    return f32_to_bf16(f);
}

// Converts `n` contiguous elements, a block at a time through aligned local
// arrays, so the inner loop is typed, branch-free and vectorizes.
template <DType From, DType To>
void convert_run(const uint8_t *src, uint8_t *dst, int64_t n) {
  using In = typename Stored<From>::type;
  using Out = typename Stored<To>::type;
  constexpr int64_t kBlock = 1024;
  In in[kBlock];
  Out out[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    std::memcpy(in, src + i * sizeof(In), m * sizeof(In));
    for (int64_t j = 0; j < m; ++j)
      out[j] = narrow<To>(widen<From>(in[j]));
    std::memcpy(dst + i * sizeof(Out), out, m * sizeof(Out));
  }
}

using RunFn = void (*)(const uint8_t *, uint8_t *, int64_t);

template <DType From> RunFn run_to(DType to) {
  switch (to) {
  case DType::F32: return convert_run<From, DType::F32>;
  case DType::F16: return convert_run<From, DType::F16>;
  default: return convert_run<From, DType::BF16>;
  }
}

RunFn run_fn(DType from, DType to) {
  switch (from) {
  case DType::F32: return run_to<DType::F32>(to);
  case DType::F16: return run_to<DType::F16>(to);
  default: return run_to<DType::BF16>(to);
  }
}

// Transposes [rows, cols] into [cols, rows] in tiles that stay in cache,
// converting each element on the way.
void transpose_convert(const TensorView &src, DType dst_dtype, uint8_t *dst) {
  constexpr int64_t kTile = 32;
  const int64_t rows = src.shape[0], cols = src.shape[1];
  const size_t in = dtype_size(src.dtype), out = dtype_size(dst_dtype);
  const bool same = src.dtype == dst_dtype;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (int64_t c = c0; c < std::min(c0 + kTile, cols); ++c)
        for (int64_t r = r0; r < std::min(r0 + kTile, rows); ++r) {
          const uint8_t *s = src.data + (r * cols + c) * in;
          uint8_t *d = dst + (c * rows + r) * out;
          if (same)
            std::memcpy(d, s, in);
          else
            store_float(d, dst_dtype, load_float(s, src.dtype));
        }
}

} // namespace

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) // inf, nan (keeping the payload)
    return float_of(sign | 0x7f800000 | (mantissa << 13));
  if (exponent != 0)
    return float_of(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in f32.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return float_of(sign | bits_of(magnitude));
}

uint16_t f32_to_f16(float f) {
  const uint32_t u = bits_of(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7fffffff;
  if (abs > 0x7f800000) // nan: keep it a (quiet) nan
    return sign | 0x7e00 | static_cast<uint16_t>((abs >> 13) & 0x3ff);
  if (abs >= 0x477ff000) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00;
  if (abs < 0x38800000) {
    // Below the smallest normal f16 (2^-14): the result is subnormal. Adding
    // 0.5 lets the FPU do the round-to-nearest-even at 2^-24 granularity.
    const float shifted = float_of(abs) + 0.5f;
    return sign | static_cast<uint16_t>(bits_of(shifted) - bits_of(0.5f));
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to
  // nearest even; a carry into the exponent is the right answer.
  const uint32_t odd = (abs >> 13) & 1;
  const uint32_t rounded = abs + 0xfff + odd - (112u << 23);
  return sign | static_cast<uint16_t>(rounded >> 13);
}

float bf16_to_f32(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

uint16_t f32_to_bf16(float f) {
  const uint32_t u = bits_of(f);
  if ((u & 0x7fffffff) > 0x7f800000) // nan: keep it a (quiet) nan
    return static_cast<uint16_t>((u >> 16) | 0x40);
  const uint32_t odd = (u >> 16) & 1;
  return static_cast<uint16_t>((u + 0x7fff + odd) >> 16);
}

void convert_tensor(const TensorView &src, DType dst_dtype, bool transpose,
                    void *dst) {
  const std::string where = "tensor '" + src.name + "': ";
  if (src.dtype != dst_dtype && !(is_float(src.dtype) && is_float(dst_dtype)))
    throw std::runtime_error(where + "cannot convert " + dtype_name(src.dtype) +
                             " to " + dtype_name(dst_dtype));
  if (transpose && src.shape.size() != 2)
    throw std::runtime_error(where + "cannot transpose a " +
                             std::to_string(src.shape.size()) + "-D tensor");
  auto *out = static_cast<uint8_t *>(dst);
  if (transpose)
    transpose_convert(src, dst_dtype, out);
  else if (src.dtype == dst_dtype)
    std::memcpy(out, src.data, src.nbytes);
  else
    run_fn(src.dtype, dst_dtype)(src.data, out, src.numel());
}

} // namespace llmserve
