#include "cuda/decode_padding.h"

#include "llmserve/abi.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace llmserve::cuda {

int32_t decode_bucket(int32_t num_seqs) {
  if (num_seqs < 1)
    return 0;
  for (int32_t bucket : kDecodeBuckets)
    if (bucket >= num_seqs)
      return bucket;
  return 0;
}

bool is_decode_only(const StepBatch &b) {
  if (b.num_seqs < 1 || b.num_tokens != b.num_seqs ||
      b.query_start.size() != static_cast<size_t>(b.num_seqs) + 1)
    return false;
  for (int32_t s = 0; s <= b.num_seqs; ++s)
    if (b.query_start[s] != s)
      return false;
  return true;
}

StepBatch pad_decode_batch(const StepBatch &b, int32_t bucket, int32_t max_blocks,
                           PaddingSink sink) {
  static_assert(abi::kNumStepArguments == 19, "pad every step argument");
  if (!is_decode_only(b))
    throw std::invalid_argument("pad_decode_batch: the batch is not decode-only");
  if (b.num_seqs > bucket || b.max_blocks_per_seq > max_blocks || max_blocks < 1)
    throw std::invalid_argument(
        "pad_decode_batch: " + std::to_string(b.num_seqs) + " sequences with rows of " +
        std::to_string(b.max_blocks_per_seq) + " blocks do not fit " +
        std::to_string(bucket) + " sequences with rows of " + std::to_string(max_blocks));
  const int32_t S = b.num_seqs, MB = b.max_blocks_per_seq;
  StepBatch p;
  p.num_tokens = p.num_seqs = bucket;
  p.max_blocks_per_seq = max_blocks;

  // Real sequences keep their values; padding appends the sink's.
  auto padded = [&](auto values, auto fill) {
    values.resize(bucket, fill);
    return values;
  };
  p.token_ids = padded(b.token_ids, 0);
  p.positions = padded(b.positions, 0);
  p.context_len = padded(b.context_len, 1);
  p.slot_mapping = padded(b.slot_mapping, sink.sink_block * sink.block_size);
  p.temperature = padded(b.temperature, 0.0f);
  p.top_p = padded(b.top_p, 1.0f);
  p.top_k = padded(b.top_k, 0);
  p.min_p = padded(b.min_p, 0.0f);
  p.seed = padded(b.seed, int64_t{0});
  p.presence_penalty = padded(b.presence_penalty, 0.0f);
  p.frequency_penalty = padded(b.frequency_penalty, 0.0f);
  p.repetition_penalty = padded(b.repetition_penalty, 1.0f);
  // Padded rows have an empty history and ask for no log-probs.
  p.penalty_start = b.penalty_start;
  p.penalty_start.resize(static_cast<size_t>(bucket) + 1, b.penalty_start.back());
  p.penalty_tokens = b.penalty_tokens;
  p.penalty_counts = b.penalty_counts;
  p.num_logprobs = padded(b.num_logprobs, -1);
  p.query_start.resize(bucket + 1);
  p.logits_rows.resize(bucket);
  for (int32_t s = 0; s <= bucket; ++s)
    p.query_start[s] = s;
  for (int32_t s = 0; s < bucket; ++s)
    p.logits_rows[s] = s < S ? b.logits_rows[s] : s;

  p.block_table.assign(static_cast<size_t>(bucket) * max_blocks, -1);
  for (int32_t s = 0; s < S; ++s)
    std::copy_n(b.block_table.begin() + static_cast<size_t>(s) * MB, MB,
                p.block_table.begin() + static_cast<size_t>(s) * max_blocks);
  for (int32_t s = S; s < bucket; ++s)
    p.block_table[static_cast<size_t>(s) * max_blocks] = sink.sink_block;
  return p;
}

} // namespace llmserve::cuda
