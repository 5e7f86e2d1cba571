// CUDA graphs replay a fixed launch sequence, so a decode step is padded to
// one of a few batch sizes (buckets) and each bucket is captured once. The
// padded sequences are harmless: each decodes one token of a one-token
// context kept in a scratch KV block that no request owns.
#ifndef LLMSERVE_CUDA_DECODE_PADDING_H
#define LLMSERVE_CUDA_DECODE_PADDING_H

#include "core/executor.h"

#include <array>
#include <cstdint>

namespace llmserve::cuda {

// The decode batch sizes captured as graphs: powers of two, with one step
// between each from 16 on, up to 512 running sequences.
inline constexpr std::array<int32_t, 17> kDecodeBuckets = {
    1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 320, 384, 448, 512};

// The smallest bucket >= num_seqs, or 0 when num_seqs is not in
// [1, largest bucket].
int32_t decode_bucket(int32_t num_seqs);

// Whether every sequence of `batch` has exactly one query token (so T == S).
bool is_decode_only(const StepBatch &batch);

// Where padded sequences keep their one token: `sink_block`, a KV block
// outside the pool the engine allocates from, of `block_size` slots.
struct PaddingSink {
  int32_t sink_block = 0;
  int32_t block_size = 0;
};

// `batch` (decode-only, num_seqs <= bucket, max_blocks_per_seq <=
// max_blocks) as a batch of `bucket` sequences whose block_table rows are
// `max_blocks` wide (unused entries -1): the real sequences first, as they
// were, then padding sequences of token 0 at position 0 with context_len 1,
// their block_table row and slot pointing at the sink, greedy sampling, and
// logits row = their own row. Throws std::invalid_argument if the
// preconditions do not hold.
StepBatch pad_decode_batch(const StepBatch &batch, int32_t bucket, int32_t max_blocks,
                           PaddingSink sink);

// A graph replays the sizes it was captured with, so a decode step with
// logit entries (penalties, biases) or token-mask rows (structured output)
// has them padded too: `entries` to a power of two from 64 and `rows` to a
// power of two, each at most `max` (which it must not exceed); 0 stays 0.
int64_t logit_entries_bucket(int64_t entries, int64_t max);
int64_t mask_rows_bucket(int64_t rows, int64_t max);

// Pads `batch`'s logit entries to `entries` and its token mask to
// `mask_rows` rows of token_mask_words(vocab_size) words. The added entries
// belong to the last sequence and name token `vocab_size`, which
// adjust_logits ignores (it skips tokens outside the vocabulary); the added
// mask rows are zero, and no sequence's mask_index names them. Throws
// std::invalid_argument if the batch has more of either.
void pad_logit_entries(StepBatch &batch, int64_t entries, int64_t mask_rows,
                       int32_t vocab_size);

} // namespace llmserve::cuda

#endif // LLMSERVE_CUDA_DECODE_PADDING_H
