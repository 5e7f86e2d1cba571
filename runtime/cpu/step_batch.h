// The step contract's arrays as both executors hand them to a bundle's `step`
// entry point: validated against the manifest and the KV pool, and listed in
// abi::kStepArguments order.
#ifndef LLMSERVE_CPU_STEP_BATCH_H
#define LLMSERVE_CPU_STEP_BATCH_H

#include "core/executor.h"
#include "cpu/manifest.h"
#include "llmserve/abi.h"

#include <array>
#include <cstdint>

namespace llmserve {

// Kernels index memory with these arrays, so an inconsistent batch would read
// or write out of bounds. Throws std::invalid_argument naming the array and
// index ("step batch: slot_mapping[3] = 40 is outside [0, 32)") for wrong
// array lengths, token ids outside the vocabulary, positions past
// max_position_embeddings, block ids and slots outside a pool of
// `num_blocks` blocks, query_start not running from 0 to T, logits rows
// outside T, or a missing block below context_len. `m` has a model and a
// kv_cache section.
void check_step_batch(const StepBatch &batch, const Manifest &m, int64_t num_blocks);

// The host address of each step argument, in abi::kStepArguments order.
std::array<const void *, abi::kNumStepArguments> step_argument_data(const StepBatch &batch);

} // namespace llmserve

#endif // LLMSERVE_CPU_STEP_BATCH_H
