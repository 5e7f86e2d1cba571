#include "model/convert.h"

#include <algorithm>
#include <cmath>
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
  return d == DType::F32 || d == DType::F16 || d == DType::BF16 || d == DType::F8E4M3;
}

// A conversion is a function of one element, In -> Out; the loops below are
// instantiated per function, so they are typed, inline it and vectorize.

// Same dtype: the element's bits as they are (NaN payloads included).
template <typename T> T same(T v) { return v; }

// Between float dtypes, through f32.
template <DType D> struct Stored { using type = uint16_t; };
template <> struct Stored<DType::F32> { using type = float; };
template <> struct Stored<DType::F8E4M3> { using type = uint8_t; };

template <DType D> float widen(typename Stored<D>::type v) {
  if constexpr (D == DType::F32)
    return v;
  else if constexpr (D == DType::F16)
    return f16_to_f32(v);
  else if constexpr (D == DType::F8E4M3)
    return e4m3_to_f32(v);
  else
    return bf16_to_f32(v);
}

template <DType D> typename Stored<D>::type narrow(float f) {
  if constexpr (D == DType::F32)
    return f;
  else if constexpr (D == DType::F16)
    return f32_to_f16(f);
  else if constexpr (D == DType::F8E4M3)
    return f32_to_e4m3(f);
  else
    return f32_to_bf16(f);
}

template <DType From, DType To>
typename Stored<To>::type between_floats(typename Stored<From>::type v) {
  return narrow<To>(widen<From>(v));
}

// Element loads and stores go through memcpy: checkpoint data is not aligned.
template <typename In, typename Out, Out (*F)(In)>
void convert_run(const uint8_t *src, uint8_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    In in;
    std::memcpy(&in, src + i * sizeof(In), sizeof(In));
    const Out out = F(in);
    std::memcpy(dst + i * sizeof(Out), &out, sizeof(Out));
  }
}

// [rows, cols] into [cols, rows], in tiles that stay in cache.
template <typename In, typename Out, Out (*F)(In)>
void transpose_run(const uint8_t *src, uint8_t *dst, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(r0 + kTile, rows);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(c0 + kTile, cols);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          In in;
          std::memcpy(&in, src + (r * cols + c) * sizeof(In), sizeof(In));
          const Out out = F(in);
          std::memcpy(dst + (c * rows + r) * sizeof(Out), &out, sizeof(Out));
        }
    }
  }
}

struct Conversion {
  void (*run)(const uint8_t *src, uint8_t *dst, int64_t n);
  void (*transpose)(const uint8_t *src, uint8_t *dst, int64_t rows, int64_t cols);
};

template <typename In, typename Out, Out (*F)(In)>
constexpr Conversion kConversion{convert_run<In, Out, F>, transpose_run<In, Out, F>};

template <DType From, DType To>
constexpr Conversion kBetweenFloats =
    kConversion<typename Stored<From>::type, typename Stored<To>::type,
                between_floats<From, To>>;

template <DType From> Conversion from_float_to(DType to) {
  switch (to) {
  case DType::F32: return kBetweenFloats<From, DType::F32>;
  case DType::F16: return kBetweenFloats<From, DType::F16>;
  case DType::F8E4M3: return kBetweenFloats<From, DType::F8E4M3>;
  default: return kBetweenFloats<From, DType::BF16>;
  }
}

// The conversion of a dtype pair convert_tensor accepts.
Conversion conversion(DType from, DType to) {
  if (from == to) {
    switch (dtype_size(from)) {
    case 1: return kConversion<uint8_t, uint8_t, same<uint8_t>>;
    case 2: return kConversion<uint16_t, uint16_t, same<uint16_t>>;
    case 4: return kConversion<uint32_t, uint32_t, same<uint32_t>>;
    default: return kConversion<uint64_t, uint64_t, same<uint64_t>>;
    }
  }
  switch (from) {
  case DType::F32: return from_float_to<DType::F32>(to);
  case DType::F16: return from_float_to<DType::F16>(to);
  case DType::F8E4M3: return from_float_to<DType::F8E4M3>(to);
  default: return from_float_to<DType::BF16>(to);
  }
}

} // namespace

// The f16 conversions are branch-free so loops over them vectorize;
// the float unit does the rounding (the method of Maratyszcza's FP16 library).

float f16_to_f32(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w; // exponent and mantissa, sign shifted out
  // Normal, inf and nan: move the exponent field into place and rebias by
  // scaling; the scale leaves inf and nan as they are.
  const float normal = float_of((two_w >> 4) + (0xe0u << 23)) * 0x1p-112f;
  // Zero and subnormal: the mantissa as the low bits of 0.5's mantissa,
  // minus 0.5, is mantissa * 2^-24 exactly.
  const float subnormal = float_of((two_w >> 17) | (126u << 23)) - 0.5f;
  return float_of(sign | bits_of(two_w < (1u << 27) ? subnormal : normal));
}

uint16_t f32_to_f16(float f) {
  const uint32_t w = bits_of(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  // Scaling up then down sends magnitudes past f16's range to infinity and
  // keeps the rest exact.
  float base = (std::fabs(f) * 0x1p+112f) * 0x1p-110f;
  // Adding a power of two just above `base` makes the float unit round the
  // mantissa to f16's 10 bits (or to the subnormal step), nearest even.
  uint32_t bias = shl1_w & 0xff000000u;
  if (bias < 0x71000000u)
    bias = 0x71000000u;
  base = float_of((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = bits_of(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007c00u) + (bits & 0x00000fffu);
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xff000000u ? 0x7e00u : nonsign));
}

float bf16_to_f32(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

uint16_t f32_to_bf16(float f) {
  const uint32_t u = bits_of(f);
  if ((u & 0x7fffffff) > 0x7f800000) // nan: keep it a (quiet) nan
    return static_cast<uint16_t>((u >> 16) | 0x40);
  const uint32_t odd = (u >> 16) & 1;
  return static_cast<uint16_t>((u + 0x7fff + odd) >> 16);
}

// e4m3: 1 sign, 4 exponent (bias 7) and 3 mantissa bits; magnitude code
// 0x7f is NaN. As the kernels convert (KernelMath's encodeE4M3): a normal
// value's code is its f32 bits rebased by 127 - 7 with the low 20 mantissa
// bits rounded off, nearest even; below 2^-6 it counts steps of 2^-9.
float e4m3_to_f32(uint8_t c) {
  const uint32_t sign = static_cast<uint32_t>(c & 0x80) << 24;
  const uint32_t magnitude = c & 0x7f;
  if (magnitude == 0x7f)
    return float_of(sign | 0x7fc00000u);
  if (magnitude < 8)
    return float_of(sign | bits_of(static_cast<float>(magnitude) * 0x1p-9f));
  return float_of(sign | ((magnitude << 20) + ((127u - 7u) << 23)));
}

uint8_t f32_to_e4m3(float f) {
  const uint8_t sign = static_cast<uint8_t>((bits_of(f) >> 24) & 0x80);
  if (std::isnan(f))
    return sign | 0x7f;
  const float a = std::min(std::fabs(f), 448.0f);
  if (a < 0x1p-6f)
    return sign | static_cast<uint8_t>(std::nearbyint(a * 0x1p9f));
  const uint32_t rebased = bits_of(a) - ((127u - 7u) << 23);
  return sign | static_cast<uint8_t>((rebased + 0x7ffff + ((rebased >> 20) & 1)) >> 20);
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
  const Conversion convert = conversion(src.dtype, dst_dtype);
  auto *out = static_cast<uint8_t *>(dst);
  if (transpose)
    convert.transpose(src.data, out, src.shape[0], src.shape[1]);
  else
    convert.run(src.data, out, src.numel());
}

} // namespace llmserve
