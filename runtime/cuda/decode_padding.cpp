#include "cuda/decode_padding.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

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
  if (!is_decode_only(b))
    throw std::invalid_argument("pad_decode_batch: the batch is not decode-only");
  if (b.num_seqs > bucket || b.max_blocks_per_seq > max_blocks || max_blocks < 1)
    throw std::invalid_argument(
        "pad_decode_batch: " + std::to_string(b.num_seqs) + " sequences with rows of " +
        std::to_string(b.max_blocks_per_seq) + " blocks do not fit " +
        std::to_string(bucket) + " sequences with rows of " + std::to_string(max_blocks));
  const int32_t S = b.num_seqs, MB = b.max_blocks_per_seq;
  StepBatch p = b;
  p.num_tokens = p.num_seqs = bucket;
  p.max_blocks_per_seq = max_blocks;

  // The real sequences keep their values and the padding ones get the
  // contract's padding values (a decode-only batch has T == S); offsets
  // continue from the last real one, and the penalty entries stay as they
  // are (padding rows have no history).
  for_each_step_array(p, [&](int, const char *, abi::Extent extent, auto &array,
                             auto padding) {
    switch (extent) {
    case abi::Extent::Tokens:
    case abi::Extent::Seqs:
      array.resize(bucket, padding);
      break;
    case abi::Extent::SeqsPlusOne:
      array.resize(static_cast<size_t>(bucket) + 1, array.back());
      break;
    case abi::Extent::SeqBlocks: {
      std::decay_t<decltype(array)> rows(static_cast<size_t>(bucket) * max_blocks,
                                         padding);
      for (int32_t s = 0; s < S; ++s)
        std::copy_n(array.begin() + static_cast<size_t>(s) * MB, MB,
                    rows.begin() + static_cast<size_t>(s) * max_blocks);
      array = std::move(rows);
      break;
    }
    case abi::Extent::PenaltyEntries:
    case abi::Extent::MaskWords:
      break;
    }
  });

  // Each padding sequence is its own one-token query, whose logits row is
  // its own row, and keeps its token in the sink block.
  for (int32_t s = S; s < bucket; ++s) {
    p.query_start[s + 1] = s + 1;
    p.logits_rows[s] = s;
    p.slot_mapping[s] = sink.sink_block * sink.block_size;
    p.block_table[static_cast<size_t>(s) * max_blocks] = sink.sink_block;
  }
  return p;
}

namespace {

int64_t power_of_two_bucket(int64_t n, int64_t smallest, int64_t max) {
  if (n <= 0)
    return 0;
  int64_t bucket = smallest;
  while (bucket < n)
    bucket *= 2;
  return std::min(bucket, max);
}

} // namespace

int64_t logit_entries_bucket(int64_t entries, int64_t max) {
  return power_of_two_bucket(entries, 64, max);
}

int64_t mask_rows_bucket(int64_t rows, int64_t max) { return power_of_two_bucket(rows, 1, max); }

void pad_logit_entries(StepBatch &b, int64_t entries, int64_t mask_rows, int32_t vocab_size) {
  const int64_t row_words = token_mask_words(vocab_size);
  const auto have = static_cast<int64_t>(b.penalty_tokens.size());
  const auto have_words = static_cast<int64_t>(b.token_mask.size());
  if (have > entries || have_words > mask_rows * row_words || b.num_seqs < 1)
    throw std::invalid_argument(
        "pad_logit_entries: " + std::to_string(have) + " logit entries and " +
        std::to_string(have_words) + " mask words do not fit " + std::to_string(entries) +
        " entries and " + std::to_string(mask_rows) + " rows of " + std::to_string(row_words) +
        " words");
  b.penalty_tokens.resize(entries, vocab_size);
  b.penalty_counts.resize(entries, -1);
  b.logit_bias.resize(entries, 0.0f);
  b.penalty_start[b.num_seqs] = static_cast<int32_t>(entries);
  b.token_mask.resize(mask_rows * row_words, 0);
}

} // namespace llmserve::cuda
