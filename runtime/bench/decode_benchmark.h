// `llmrun bench decode`: the time of one decode step at a batch size and
// context length, next to the memory-bandwidth floor measured in the same
// run: a decode step must read every weight once (of an embedding table, its
// tokens' rows; of a mixture of experts, the chosen experts') and every
// sequence's KV cache, so no kernel schedule beats (those bytes) / (copy
// bandwidth).
#ifndef LLMSERVE_BENCH_DECODE_BENCHMARK_H
#define LLMSERVE_BENCH_DECODE_BENCHMARK_H

#include "bundle/manifest.h"
#include "core/executor.h"
#include "grammar/compiled_grammar.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace llmserve::bench {

// A decode-only step: `batch` sequences, each decoding its token at position
// context - 1 over blocks of its own (sequence s owns blocks
// [s * per_seq, (s + 1) * per_seq)), random token ids, greedy, no penalties.
StepBatch decode_step(int32_t batch, int32_t context, int32_t block_size, int32_t vocab_size,
                      uint64_t seed);
// KV blocks decode_step(batch, context, block_size, ...) reaches.
int32_t decode_step_blocks(int32_t batch, int32_t context, int32_t block_size);

// Milliseconds per executor.execute of `step`, the mean over `steps` runs
// after `warmup` unmeasured ones (the CUDA executor captures its graph then).
double time_steps(Executor &executor, const StepBatch &step, int warmup, int steps);

// Structured output's cost in a decode step, as the engine pays it: before
// each step every sequence's mask row is filled by its own grammar::Matcher,
// the step runs with the masks, and each sampled token is accepted (a matcher
// that finishes or dead-ends starts over). Times are means over `steps`
// after `warmup` unmeasured steps.
struct StructuredStepTiming {
  double step_ms = 0;           // the whole step: masks, execute, accepts
  double mask_us_per_seq = 0;   // fill_next_token_mask
  double accept_us_per_seq = 0; // accept_token
};
StructuredStepTiming time_structured_steps(Executor &executor, StepBatch step,
                                           std::shared_ptr<const grammar::CompiledGrammar> grammar,
                                           int warmup, int steps);

// Bytes of every weight of the manifest.
int64_t weight_bytes(const Manifest &manifest);
// Bytes a decode step reads at least: every weight of the manifest once (of
// an embedding table, `batch` rows; of a mixture of experts' stacked
// weights, the experts `batch` tokens choose on average when each picks
// num_experts_per_tok uniformly) and `batch * context` tokens of KV cache.
int64_t decode_step_bytes(const Manifest &manifest, int32_t batch, int32_t context);

// memcpy rate between two host buffers of `bytes`, in bytes read plus
// written per second (the best of a few copies).
double host_copy_bandwidth(size_t bytes);

// What a dispatch's time is summed under in a profile: its op ("linear",
// the kernel name without the dN_ prefix) and the weight it reads with the
// layer index starred ("model.layers.*.mlp.up_proj.weight"), if any.
std::string dispatch_label(const Manifest &manifest, const Dispatch &dispatch);

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_DECODE_BENCHMARK_H
