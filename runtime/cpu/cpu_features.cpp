#include "cpu/cpu_features.h"

namespace llmserve {

bool cpu_supports(std::string_view feature) {
  // __builtin_cpu_supports takes a string literal: one call per name.
#define LLMSERVE_FEATURE(name)                                                                     \
  if (feature == name)                                                                             \
    return __builtin_cpu_supports(name);
  LLMSERVE_FEATURE("sse4.2")
  LLMSERVE_FEATURE("avx")
  LLMSERVE_FEATURE("avx2")
  LLMSERVE_FEATURE("fma")
  LLMSERVE_FEATURE("f16c")
  LLMSERVE_FEATURE("bmi2")
  LLMSERVE_FEATURE("avx512f")
  LLMSERVE_FEATURE("avx512bw")
  LLMSERVE_FEATURE("avx512vl")
  LLMSERVE_FEATURE("avx512dq")
  LLMSERVE_FEATURE("avx512vnni")
  LLMSERVE_FEATURE("avx512bf16")
  LLMSERVE_FEATURE("avx512fp16")
  LLMSERVE_FEATURE("avxvnni")
#undef LLMSERVE_FEATURE
  return false;
}

std::vector<std::string> missing_cpu_features(const std::vector<std::string> &wanted) {
  std::vector<std::string> missing;
  for (const std::string &feature : wanted)
    if (!cpu_supports(feature))
      missing.push_back(feature);
  return missing;
}

} // namespace llmserve
