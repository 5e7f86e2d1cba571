// The contract between llmc (which writes kernel bundles) and the runtime
// (which loads and runs them). Both include this header (and the step
// contract's rows in step_arguments.def) and nothing else of each other;
// docs/bundle.md describes the same format in prose.
#ifndef LLMSERVE_ABI_H
#define LLMSERVE_ABI_H

#include <cstdint>

namespace llmserve::abi {

// Bumped on any incompatible change of manifest.json.
inline constexpr int kBundleFormatVersion = 2;
// Bumped on any incompatible change of the kernel calling convention or of the
// step contract (step_arguments.def).
inline constexpr int kKernelAbiVersion = 3;

inline constexpr const char *kManifestFile = "manifest.json";
inline constexpr const char *kCpuKernelsFile = "kernels.cpu.so";
inline constexpr const char *kEmbeddedWeightsFile = "weights.safetensors";
inline constexpr const char *kFormatName = "llmserve-bundle";

// NVIDIA bundles (target "sm_90"): PTX always, cubin for sm_90a when ptxas was
// found at compile time. The runtime loads the cubin on a compute-capability
// 9.0 device and JIT-compiles the PTX elsewhere.
inline constexpr const char *kCudaTarget = "sm_90";

// The x86 features a CPU bundle's manifest may list ("cpu_features"): those
// of the CPU its kernels were compiled for, which the runtime checks before
// it loads them. LLVM's spellings, which __builtin_cpu_supports shares.
inline constexpr const char *kCpuFeatures[] = {
    "sse4.2",   "avx",      "avx2",       "fma",        "f16c",       "bmi2",    "avx512f",
    "avx512bw", "avx512vl", "avx512dq",   "avx512vnni", "avx512bf16", "avx512fp16", "avxvnni"};
inline constexpr const char *kCudaPtxFile = "kernels.ptx";
inline constexpr const char *kCudaCubinFile = "kernels.sm_90a.cubin";
// A CUDA kernel's parameters are one 64-bit device pointer per binding, in
// binding order, then one int64 per push constant (no memref descriptors).
// It is launched with the dispatch's grid, its manifest `block` and
// `shared_bytes` of dynamic shared memory.

// A CPU kernel runs one workgroup of a dispatch. `bindings` holds one base
// pointer per buffer the dispatch binds, `push_constants` the values of the
// dispatch's constant expressions, in manifest order. Workgroups of one
// dispatch are independent and may run concurrently.
using CpuKernelFn = void (*)(void *const *bindings,
                             const int64_t *push_constants, int64_t workgroup_x,
                             int64_t workgroup_y, int64_t workgroup_z);

// Symbols that shape and grid expressions may use; the runtime binds them per
// step (T, S, MB, P, MW) or when it allocates the KV cache (NB).
inline constexpr const char *kSymNumTokens = "T";      // tokens in the step
inline constexpr const char *kSymNumSeqs = "S";        // sequences in the step
inline constexpr const char *kSymMaxBlocks = "MB";     // block_table row width
inline constexpr const char *kSymNumKvBlocks = "NB";   // KV blocks per pool
inline constexpr const char *kSymPenaltyEntries = "P"; // penalty_tokens length
inline constexpr const char *kSymMaskWords = "MW";     // token_mask length

// An array of the step contract and its tensor type: element type ("i32",
// "i64", "f32") and shape, comma-separated size expressions.
struct ContractArray {
  const char *name;
  const char *dtype;
  const char *shape;
};

// How long a step-contract argument is, in the step's sizes.
enum class Extent {
  Tokens,         // T
  Seqs,           // S
  SeqsPlusOne,    // S+1: CSR offsets
  SeqBlocks,      // S rows of MB
  PenaltyEntries, // P
  MaskWords,      // MW: rows of ceil(V/32) words, one per masked sequence
};

constexpr const char *extent_shape(Extent extent) {
  switch (extent) {
  case Extent::Tokens:
    return "T";
  case Extent::Seqs:
    return "S";
  case Extent::SeqsPlusOne:
    return "S+1";
  case Extent::SeqBlocks:
    return "S,MB";
  case Extent::PenaltyEntries:
    return "P";
  case Extent::MaskWords:
    return "MW";
  }
  return "";
}

// The contract's element types, as the manifest spells them.
template <typename T> inline constexpr const char *kElementType = nullptr;
template <> inline constexpr const char *kElementType<int32_t> = "i32";
template <> inline constexpr const char *kElementType<int64_t> = "i64";
template <> inline constexpr const char *kElementType<float> = "f32";

// The `step` entry point's arguments, in order (step_arguments.def).
inline constexpr ContractArray kStepArguments[] = {
#define LLMSERVE_STEP_ARGUMENT(name, type, extent, padding)                    \
  {#name, kElementType<type>, extent_shape(Extent::extent)},
#include "llmserve/step_arguments.def"
};
inline constexpr int kNumStepArguments =
    sizeof(kStepArguments) / sizeof(kStepArguments[0]);

// The most top log-probs a step returns per sequence (the OpenAI API's limit).
inline constexpr int kMaxTopLogprobs = 20;
// The `step` entry point's results: the sampled token of each sequence, its
// log-probability, and the top tokens with theirs (rows whose num_logprobs is
// negative are undefined in the last three).
inline constexpr ContractArray kStepResults[] = {
    {"next_tokens", "i32", "S"},
    {"token_logprobs", "f32", "S"},
    {"top_logprob_tokens", "i32", "S,20"},
    {"top_logprobs", "f32", "S,20"},
};
inline constexpr int kNumStepResults =
    sizeof(kStepResults) / sizeof(kStepResults[0]);

} // namespace llmserve::abi

#endif // LLMSERVE_ABI_H
