// The one interface the engine drives a model through: "run this step, give
// me the sampled tokens". The arrays are the step contract of DESIGN.md and
// abi::kStepArguments, in host memory.
#ifndef LLMSERVE_CORE_EXECUTOR_H
#define LLMSERVE_CORE_EXECUTOR_H

#include "llmserve/abi.h"

#include <cstdint>
#include <vector>

namespace llmserve {

struct StepBatch {
  int32_t num_tokens = 0;         // T
  int32_t num_seqs = 0;           // S
  // MB: row width of block_table, the widest row of this step's sequences.
  int32_t max_blocks_per_seq = 0;
  std::vector<int32_t> token_ids;    // [T]
  std::vector<int32_t> positions;    // [T]
  std::vector<int32_t> query_start;  // [S+1]
  std::vector<int32_t> context_len;  // [S]  KV length after this step
  std::vector<int32_t> block_table;  // [S*MB], unused entries -1
  std::vector<int32_t> slot_mapping; // [T]
  std::vector<int32_t> logits_rows;  // [S]
  // Sampling parameters, one per sequence.
  std::vector<float> temperature; // 0 = greedy
  std::vector<float> top_p;       // 1 = off
  std::vector<int32_t> top_k;     // 0 = off
  std::vector<float> min_p;       // 0 = off
  std::vector<int64_t> seed;
  std::vector<float> presence_penalty;   // 0 = off
  std::vector<float> frequency_penalty;  // 0 = off
  std::vector<float> repetition_penalty; // 1 = off
  // Each sequence's penalty history, CSR: entries [penalty_start[s],
  // penalty_start[s+1]) of the two arrays below, each a distinct token of its
  // prompt or output and how often it occurs in the output (0: prompt only).
  std::vector<int32_t> penalty_start;  // [S+1]
  std::vector<int32_t> penalty_tokens; // [P]
  std::vector<int32_t> penalty_counts; // [P]
  // -1: no log-probs; k >= 0: the sampled token's and the top k
  // (k <= abi::kMaxTopLogprobs).
  std::vector<int32_t> num_logprobs;
};

struct StepOutput {
  std::vector<int32_t> next_tokens; // [S]
  // Filled only for the sequences that asked (num_logprobs >= 0); empty when
  // none did. Row s of the top arrays holds num_logprobs[s] entries, most
  // likely first, from [s * abi::kMaxTopLogprobs].
  std::vector<float> token_logprobs;       // [S]
  std::vector<int32_t> top_logprob_tokens; // [S * abi::kMaxTopLogprobs]
  std::vector<float> top_logprobs;         // [S * abi::kMaxTopLogprobs]
};

struct KvCacheSpec {
  int32_t block_size = 16;
  int64_t bytes_per_token = 0; // all layers, K and V
};

class Executor {
public:
  virtual ~Executor() = default;
  virtual KvCacheSpec kv_cache_spec() const = 0;
  // Called once before the first step.
  virtual void allocate_kv_cache(int32_t num_blocks) = 0;
  virtual void execute(const StepBatch &batch, StepOutput &out) = 0;
};

} // namespace llmserve

#endif // LLMSERVE_CORE_EXECUTOR_H
