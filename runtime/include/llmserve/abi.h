// The contract between llmc (which writes kernel bundles) and the runtime
// (which loads and runs them). Both include this header and nothing else of
// each other; docs/bundle.md describes the same format in prose.
#ifndef LLMSERVE_ABI_H
#define LLMSERVE_ABI_H

#include <cstdint>

namespace llmserve::abi {

// Bumped on any incompatible change of manifest.json.
inline constexpr int kBundleFormatVersion = 2;
// Bumped on any incompatible change of the kernel calling convention or of the
// step contract below.
inline constexpr int kKernelAbiVersion = 2;

inline constexpr const char *kManifestFile = "manifest.json";
inline constexpr const char *kCpuKernelsFile = "kernels.cpu.so";
inline constexpr const char *kEmbeddedWeightsFile = "weights.safetensors";
inline constexpr const char *kFormatName = "llmserve-bundle";

// NVIDIA bundles (target "sm_90"): PTX always, cubin for sm_90a when ptxas was
// found at compile time. The runtime loads the cubin on a compute-capability
// 9.0 device and JIT-compiles the PTX elsewhere.
inline constexpr const char *kCudaTarget = "sm_90";
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
// step (T, S, MB, P) or when it allocates the KV cache (NB).
inline constexpr const char *kSymNumTokens = "T";      // tokens in the step
inline constexpr const char *kSymNumSeqs = "S";        // sequences in the step
inline constexpr const char *kSymMaxBlocks = "MB";     // block_table row width
inline constexpr const char *kSymNumKvBlocks = "NB";   // KV blocks per pool
inline constexpr const char *kSymPenaltyEntries = "P"; // penalty_tokens length

// The step contract: names of the `step` entry point's arguments, in order,
// with their element types and shapes. Sampling parameters are per sequence.
// Sequence s's history for penalties is entries [penalty_start[s],
// penalty_start[s+1]) of penalty_tokens / penalty_counts: each a distinct
// token of its prompt or output and its count in the output (0: prompt only).
// num_logprobs[s] < 0 asks for no log-probs; k >= 0 for the sampled token's
// and the top k (at most kMaxTopLogprobs).
struct ContractArray {
  const char *name;
  const char *dtype;
  const char *shape; // comma-separated expressions
};
inline constexpr ContractArray kStepArguments[] = {
    {"token_ids", "i32", "T"},          {"positions", "i32", "T"},
    {"query_start", "i32", "S+1"},      {"context_len", "i32", "S"},
    {"block_table", "i32", "S,MB"},     {"slot_mapping", "i32", "T"},
    {"logits_rows", "i32", "S"},        {"temperature", "f32", "S"},
    {"top_p", "f32", "S"},              {"top_k", "i32", "S"},
    {"min_p", "f32", "S"},              {"seed", "i64", "S"},
    {"presence_penalty", "f32", "S"},   {"frequency_penalty", "f32", "S"},
    {"repetition_penalty", "f32", "S"}, {"penalty_start", "i32", "S+1"},
    {"penalty_tokens", "i32", "P"},     {"penalty_counts", "i32", "P"},
    {"num_logprobs", "i32", "S"},
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
