// Whether this CPU has the x86 features a CPU bundle's kernels were compiled
// for (the manifest's cpu_features), checked before the kernels load: a
// kernel using an instruction the CPU lacks would stop the process.
#ifndef LLMSERVE_CPU_CPU_FEATURES_H
#define LLMSERVE_CPU_CPU_FEATURES_H

#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

// Whether this CPU has `feature` (a name of abi::kCpuFeatures; false for
// any other).
bool cpu_supports(std::string_view feature);

// The features of `wanted` this CPU lacks, in order.
std::vector<std::string> missing_cpu_features(const std::vector<std::string> &wanted);

} // namespace llmserve

#endif // LLMSERVE_CPU_CPU_FEATURES_H
