#include "bundle/step_batch.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

namespace {

[[noreturn]] void bad_batch(const std::string &what) {
  throw std::invalid_argument("step batch: " + what);
}

void check_range(const std::vector<int32_t> &v, const char *name, int64_t lo,
                 int64_t hi) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] < lo || v[i] >= hi)
      bad_batch(std::string(name) + "[" + std::to_string(i) + "] = " +
                std::to_string(v[i]) + " is outside [" + std::to_string(lo) +
                ", " + std::to_string(hi) + ")");
}

// CSR offsets of S rows: from 0 to `total`, never decreasing.
void check_offsets(const std::vector<int32_t> &v, const char *name,
                   const char *total_name, int64_t total) {
  if (v.front() != 0 || v.back() != total)
    bad_batch(std::string(name) + " runs from " + std::to_string(v.front()) +
              " to " + std::to_string(v.back()) + ", expected 0 to " + total_name +
              " = " + std::to_string(total));
  for (size_t s = 1; s < v.size(); ++s)
    if (v[s] < v[s - 1])
      bad_batch(std::string(name) + " decreases at " + std::to_string(s));
}

} // namespace

int64_t token_mask_words(int64_t vocab_size) { return (vocab_size + 31) / 32; }

int64_t extent_length(abi::Extent extent, int64_t T, int64_t S, int64_t MB, int64_t P,
                      int64_t MW) {
  switch (extent) {
  case abi::Extent::Tokens:
    return T;
  case abi::Extent::Seqs:
    return S;
  case abi::Extent::SeqsPlusOne:
    return S + 1;
  case abi::Extent::SeqBlocks:
    return S * MB;
  case abi::Extent::PenaltyEntries:
    return P;
  case abi::Extent::MaskWords:
    return MW;
  }
  return 0;
}

Symbols step_symbols(const StepBatch &b, int64_t num_kv_blocks) {
  Symbols symbols;
  symbols.T = b.num_tokens;
  symbols.S = b.num_seqs;
  symbols.MB = b.max_blocks_per_seq;
  symbols.NB = num_kv_blocks;
  symbols.P = static_cast<int64_t>(b.penalty_tokens.size());
  symbols.MW = static_cast<int64_t>(b.token_mask.size());
  return symbols;
}

void resize_step_batch(StepBatch &b, int32_t T, int32_t S, int32_t MB) {
  b.num_tokens = T;
  b.num_seqs = S;
  b.max_blocks_per_seq = MB;
  for_each_step_array(b, [&](int, const char *, abi::Extent extent, auto &array, auto) {
    array.resize(static_cast<size_t>(extent_length(extent, T, S, MB, 0, 0)));
  });
  b.deferred_tokens.clear();
}

std::array<const void *, abi::kNumStepArguments> step_argument_data(const StepBatch &b) {
  std::array<const void *, abi::kNumStepArguments> data{};
  for_each_step_array(b, [&](int i, const char *, abi::Extent, const auto &array, auto) {
    data[i] = array.data();
  });
  return data;
}

void check_step_batch(const StepBatch &b, const StepBounds &bounds) {
  const int64_t T = b.num_tokens, S = b.num_seqs, MB = b.max_blocks_per_seq;
  if (T < 0 || S < 0 || MB < 0)
    bad_batch("negative size: num_tokens " + std::to_string(T) + ", num_seqs " +
              std::to_string(S) + ", max_blocks_per_seq " + std::to_string(MB));
  const int64_t P = static_cast<int64_t>(b.penalty_tokens.size());
  const int64_t MW = static_cast<int64_t>(b.token_mask.size());
  for_each_step_array(b, [&](int i, const char *name, abi::Extent extent,
                             const auto &array, auto) {
    const int64_t want = extent_length(extent, T, S, MB, P, MW);
    if (static_cast<int64_t>(array.size()) != want) {
      std::string length = abi::kStepArguments[i].shape; // "S,MB" is S*MB long
      std::replace(length.begin(), length.end(), ',', '*');
      bad_batch(std::string(name) + " has " + std::to_string(array.size()) +
                " entries, expected " + length + " = " + std::to_string(want));
    }
  });

  const int64_t block_size = bounds.block_size;
  check_range(b.token_ids, "token_ids", 0, bounds.vocab_size);
  check_range(b.positions, "positions", 0, bounds.max_positions);
  check_range(b.context_len, "context_len", 0, MB * block_size + 1);
  check_range(b.block_table, "block_table", -1, bounds.num_blocks);
  check_range(b.slot_mapping, "slot_mapping", 0, bounds.num_blocks * block_size);
  check_range(b.logits_rows, "logits_rows", 0, T);
  check_offsets(b.query_start, "query_start", "T", T);
  check_range(b.num_logprobs, "num_logprobs", -1, abi::kMaxTopLogprobs + 1);
  check_offsets(b.penalty_start, "penalty_start", "P", P);
  check_range(b.penalty_tokens, "penalty_tokens", 0, bounds.vocab_size);
  check_range(b.penalty_counts, "penalty_counts", -1, std::numeric_limits<int32_t>::max());
  // A bias of +inf or NaN would make a masked token's -inf logit NaN.
  for (size_t e = 0; e < b.logit_bias.size(); ++e)
    if (!(b.logit_bias[e] < std::numeric_limits<float>::infinity()))
      bad_batch("logit_bias[" + std::to_string(e) + "] = " + std::to_string(b.logit_bias[e]) +
                " is not below +inf");
  const int64_t mask_row_words = token_mask_words(bounds.vocab_size);
  if (MW != 0 && (mask_row_words == 0 || MW % mask_row_words != 0))
    bad_batch("token_mask has " + std::to_string(MW) +
              " words, not whole rows of ceil(V/32) = " + std::to_string(mask_row_words));
  check_range(b.mask_index, "mask_index", -1, MW == 0 ? 0 : MW / mask_row_words);
  for (int64_t s = 0; s < S; ++s) {
    const int64_t used_blocks = (b.context_len[s] + block_size - 1) / block_size;
    for (int64_t j = 0; j < used_blocks; ++j)
      if (b.block_table[s * MB + j] < 0)
        bad_batch("block_table row " + std::to_string(s) + " has no block " +
                  std::to_string(j) + " for context_len " +
                  std::to_string(b.context_len[s]));
  }
}

static_assert(std::string_view(abi::kStepArguments[kTokenIdsArgument].name) == "token_ids");

bool wants_logprobs(const StepBatch &b) {
  return std::any_of(b.num_logprobs.begin(), b.num_logprobs.end(),
                     [](int32_t n) { return n >= 0; });
}

void read_step_results(const void *const *results, size_t S, bool logprobs, StepOutput &out) {
  const auto *next = static_cast<const int32_t *>(results[0]);
  out.next_tokens.assign(next, next + S);
  out.token_logprobs.clear();
  out.top_logprob_tokens.clear();
  out.top_logprobs.clear();
  if (!logprobs)
    return;
  const auto *logprob = static_cast<const float *>(results[1]);
  const auto *top_tokens = static_cast<const int32_t *>(results[2]);
  const auto *top = static_cast<const float *>(results[3]);
  out.token_logprobs.assign(logprob, logprob + S);
  out.top_logprob_tokens.assign(top_tokens, top_tokens + S * abi::kMaxTopLogprobs);
  out.top_logprobs.assign(top, top + S * abi::kMaxTopLogprobs);
}

void check_deferred_tokens(const StepBatch &b, int64_t previous_num_seqs) {
  int64_t last = -1;
  for (size_t i = 0; i < b.deferred_tokens.size(); ++i) {
    const DeferredToken &d = b.deferred_tokens[i];
    const std::string which = "deferred_tokens[" + std::to_string(i) + "]";
    if (d.token_index <= last || d.token_index >= b.num_tokens)
      bad_batch(which + " names token " + std::to_string(d.token_index) +
                ", not after the one before it and below T = " + std::to_string(b.num_tokens));
    if (d.previous_row < 0 || d.previous_row >= previous_num_seqs)
      bad_batch(which + " takes row " + std::to_string(d.previous_row) +
                " of a previous step of " + std::to_string(previous_num_seqs) + " sequences");
    last = d.token_index;
  }
}

void fill_deferred_tokens(const StepBatch &b, const std::vector<int32_t> &previous_next_tokens,
                          std::vector<int32_t> &token_ids) {
  for (const DeferredToken &d : b.deferred_tokens)
    token_ids.at(d.token_index) = previous_next_tokens.at(d.previous_row);
}

} // namespace llmserve
