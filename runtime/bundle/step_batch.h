// One step of the step contract in host memory: what the scheduler builds and
// both executors hand to a bundle's `step` entry point. Its arrays are the
// rows of llmserve/step_arguments.def, so every function here that walks
// them covers an array added there.
#ifndef LLMSERVE_BUNDLE_STEP_BATCH_H
#define LLMSERVE_BUNDLE_STEP_BATCH_H

#include "bundle/expression.h"
#include "llmserve/abi.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace llmserve {

// token_ids' place among the step arguments.
inline constexpr int kTokenIdsArgument = 0;

// A token id the step takes from the step before it, which was launched but
// had not returned when this one was built (overlapped scheduling).
struct DeferredToken {
  int32_t token_index;  // into token_ids, which holds 0 there
  int32_t previous_row; // the sequence of the previous step that samples it
};

struct StepBatch {
  int32_t num_tokens = 0; // T
  int32_t num_seqs = 0;   // S
  // MB: row width of block_table, the widest row of this step's sequences.
  int32_t max_blocks_per_seq = 0;
  // One vector per step argument, named as in the contract.
#define LLMSERVE_STEP_ARGUMENT(name, type, extent, padding) std::vector<type> name;
#include "llmserve/step_arguments.def"
  // Not a step argument: the executor writes these into token_ids before the
  // step runs, on the device where it has one. In increasing token_index.
  std::vector<DeferredToken> deferred_tokens;
};

struct StepOutput {
  std::vector<int32_t> next_tokens; // [S]
  // Filled only for the sequences that asked (num_logprobs >= 0); empty when
  // none did. Row s of the top arrays holds num_logprobs[s] entries, most
  // likely first, from [s * abi::kMaxTopLogprobs].
  std::vector<float> token_logprobs;       // [S]
  std::vector<int32_t> top_logprob_tokens; // [S * abi::kMaxTopLogprobs]
  std::vector<float> top_logprobs;         // [S * abi::kMaxTopLogprobs]
  // How long the executor sat idle between the end of the step launched
  // before this one and this one's start; unknown for its first step.
  std::optional<double> idle_seconds_before;
};

// Whether a sequence of the step asked for log-probs.
bool wants_logprobs(const StepBatch &batch);

// `out` from the `step` entry point's results for `num_seqs` sequences, in
// the order of abi::kStepResults: next_tokens, then the log-prob arrays,
// read only when `logprobs`.
void read_step_results(const void *const *results, size_t num_seqs, bool logprobs,
                       StepOutput &out);

// Calls f(index, name, extent, array, padding) for every step argument of
// `batch`, in contract order; `array` is the batch's vector (const when the
// batch is) and `padding` is of its element type.
template <typename Batch, typename F> void for_each_step_array(Batch &batch, F &&f) {
  int index = 0;
#define LLMSERVE_STEP_ARGUMENT(name, type, extent, padding)                    \
  f(index++, #name, abi::Extent::extent, batch.name, type(padding));
#include "llmserve/step_arguments.def"
}

// The length of an array of `extent` in a step of these sizes.
int64_t extent_length(abi::Extent extent, int64_t num_tokens, int64_t num_seqs,
                      int64_t max_blocks_per_seq, int64_t penalty_entries,
                      int64_t mask_words);

// The words of one row of token_mask: ceil(vocab_size / 32).
int64_t token_mask_words(int64_t vocab_size);

// The step's symbols (T, S, MB, P, MW) and NB = num_kv_blocks.
Symbols step_symbols(const StepBatch &batch, int64_t num_kv_blocks);

// Sizes every array for T = num_tokens, S = num_seqs and MB =
// max_blocks_per_seq, and empties the logit entries, the token mask (P and
// MW grow as they are appended) and the deferred tokens. Kept entries keep
// their values, new ones are zero.
void resize_step_batch(StepBatch &batch, int32_t num_tokens, int32_t num_seqs,
                       int32_t max_blocks_per_seq);

// The host address of each step argument, in contract order.
std::array<const void *, abi::kNumStepArguments> step_argument_data(const StepBatch &batch);

// What the arrays index: the model's vocabulary and positions, and the KV
// pool's blocks.
struct StepBounds {
  int64_t vocab_size = 0;
  int64_t max_positions = 0;
  int64_t block_size = 0;
  int64_t num_blocks = 0;
};

// Kernels index memory with these arrays, so an inconsistent batch would read
// or write out of bounds. Throws std::invalid_argument naming the array and
// index ("step batch: slot_mapping[3] = 40 is outside [0, 32)") for wrong
// array lengths, token ids (of the step or of a penalty history) outside the
// vocabulary, positions past max_positions, block ids and slots outside the
// pool, query_start or penalty_start not running from 0 to T or P in order,
// logits rows outside T, penalty counts below -1, a logit bias of +inf or
// NaN, a token_mask that is not whole rows or a mask_index outside them,
// num_logprobs outside [-1, abi::kMaxTopLogprobs], or a missing block below
// context_len.
void check_step_batch(const StepBatch &batch, const StepBounds &bounds);

// Throws std::invalid_argument unless the deferred tokens name tokens of this
// step in increasing order and rows of a previous step of
// `previous_num_seqs` sequences (0: no step ran before).
void check_deferred_tokens(const StepBatch &batch, int64_t previous_num_seqs);

// Writes each deferred token of `batch` into `token_ids` (the batch's
// token_ids or a copy of them), taken from the previous step's next_tokens:
// what the step runs on.
void fill_deferred_tokens(const StepBatch &batch, const std::vector<int32_t> &previous_next_tokens,
                          std::vector<int32_t> &token_ids);

} // namespace llmserve

#endif // LLMSERVE_BUNDLE_STEP_BATCH_H
