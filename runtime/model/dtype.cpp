#include "model/dtype.h"

namespace llmserve {

namespace {

struct DTypeInfo {
  DType dtype;
  size_t size;
  const char *name;
  const char *safetensors_name;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::F32, 4, "f32", "F32"},   {DType::F16, 2, "f16", "F16"},
    {DType::BF16, 2, "bf16", "BF16"}, {DType::I32, 4, "i32", "I32"},
    {DType::I64, 8, "i64", "I64"},   {DType::I8, 1, "i8", "I8"},
    {DType::F8E4M3, 1, "f8_e4m3", "F8_E4M3"},
};

const DTypeInfo &info(DType dtype) { return kDTypes[static_cast<int>(dtype)]; }

} // namespace

size_t dtype_size(DType dtype) { return info(dtype).size; }

const char *dtype_name(DType dtype) { return info(dtype).name; }

const char *safetensors_dtype_name(DType dtype) {
  return info(dtype).safetensors_name;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeInfo &d : kDTypes)
    if (name == d.name || name == d.safetensors_name)
      return d.dtype;
  return std::nullopt;
}

} // namespace llmserve
