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

} // namespace llmserve::cuda
