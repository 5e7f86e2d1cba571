#include "cpu/step_batch.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace llmserve {

namespace {

[[noreturn]] void bad_batch(const std::string &what) {
  throw std::invalid_argument("step batch: " + what);
}

template <typename T>
void check_size(const std::vector<T> &v, const char *name, int64_t want,
                const char *want_text) {
  if (static_cast<int64_t>(v.size()) != want)
    bad_batch(std::string(name) + " has " + std::to_string(v.size()) +
              " entries, expected " + want_text + " = " + std::to_string(want));
}

void check_range(const std::vector<int32_t> &v, const char *name, int64_t lo,
                 int64_t hi) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] < lo || v[i] >= hi)
      bad_batch(std::string(name) + "[" + std::to_string(i) + "] = " +
                std::to_string(v[i]) + " is outside [" + std::to_string(lo) +
                ", " + std::to_string(hi) + ")");
}

} // namespace

void check_step_batch(const StepBatch &b, const Manifest &m, int64_t num_blocks) {
  const int64_t T = b.num_tokens, S = b.num_seqs, MB = b.max_blocks_per_seq;
  if (T < 0 || S < 0 || MB < 0)
    bad_batch("negative size: num_tokens " + std::to_string(T) + ", num_seqs " +
              std::to_string(S) + ", max_blocks_per_seq " + std::to_string(MB));
  check_size(b.token_ids, "token_ids", T, "T");
  check_size(b.positions, "positions", T, "T");
  check_size(b.query_start, "query_start", S + 1, "S+1");
  check_size(b.context_len, "context_len", S, "S");
  check_size(b.block_table, "block_table", S * MB, "S*MB");
  check_size(b.slot_mapping, "slot_mapping", T, "T");
  check_size(b.logits_rows, "logits_rows", S, "S");
  check_size(b.temperature, "temperature", S, "S");
  check_size(b.top_p, "top_p", S, "S");
  check_size(b.top_k, "top_k", S, "S");
  check_size(b.min_p, "min_p", S, "S");
  check_size(b.seed, "seed", S, "S");
  check_size(b.presence_penalty, "presence_penalty", S, "S");
  check_size(b.frequency_penalty, "frequency_penalty", S, "S");
  check_size(b.repetition_penalty, "repetition_penalty", S, "S");
  check_size(b.penalty_start, "penalty_start", S + 1, "S+1");
  const int64_t P = static_cast<int64_t>(b.penalty_tokens.size());
  check_size(b.penalty_counts, "penalty_counts", P, "P");
  check_size(b.num_logprobs, "num_logprobs", S, "S");

  // The manifest guarantees model and kv_cache for a bundle with a step.
  const int64_t block_size = m.kv_cache->block_size;
  check_range(b.token_ids, "token_ids", 0, m.model->vocab_size);
  check_range(b.positions, "positions", 0, m.model->max_position_embeddings);
  check_range(b.context_len, "context_len", 0, MB * block_size + 1);
  check_range(b.block_table, "block_table", -1, num_blocks);
  check_range(b.slot_mapping, "slot_mapping", 0, num_blocks * block_size);
  check_range(b.logits_rows, "logits_rows", 0, T);
  if (b.query_start[0] != 0 || b.query_start[S] != T)
    bad_batch("query_start runs from " + std::to_string(b.query_start[0]) +
              " to " + std::to_string(b.query_start[S]) + ", expected 0 to T = " +
              std::to_string(T));
  check_range(b.num_logprobs, "num_logprobs", -1, abi::kMaxTopLogprobs + 1);
  if (b.penalty_start[0] != 0 || b.penalty_start[S] != P)
    bad_batch("penalty_start runs from " + std::to_string(b.penalty_start[0]) +
              " to " + std::to_string(b.penalty_start[S]) +
              ", expected 0 to P = " + std::to_string(P));
  for (int64_t s = 0; s < S; ++s) {
    if (b.penalty_start[s + 1] < b.penalty_start[s])
      bad_batch("penalty_start decreases at " + std::to_string(s + 1));
    if (b.query_start[s + 1] < b.query_start[s])
      bad_batch("query_start decreases at " + std::to_string(s + 1));
    const int64_t used_blocks = (b.context_len[s] + block_size - 1) / block_size;
    for (int64_t j = 0; j < used_blocks; ++j)
      if (b.block_table[s * MB + j] < 0)
        bad_batch("block_table row " + std::to_string(s) + " has no block " +
                  std::to_string(j) + " for context_len " +
                  std::to_string(b.context_len[s]));
  }
}

std::array<const void *, abi::kNumStepArguments> step_argument_data(const StepBatch &b) {
  static_assert(abi::kNumStepArguments == 19, "list every step argument");
  return {
      b.token_ids.data(),          b.positions.data(),
      b.query_start.data(),        b.context_len.data(),
      b.block_table.data(),        b.slot_mapping.data(),
      b.logits_rows.data(),        b.temperature.data(),
      b.top_p.data(),              b.top_k.data(),
      b.min_p.data(),              b.seed.data(),
      b.presence_penalty.data(),   b.frequency_penalty.data(),
      b.repetition_penalty.data(), b.penalty_start.data(),
      b.penalty_tokens.data(),     b.penalty_counts.data(),
      b.num_logprobs.data(),
  };
}

} // namespace llmserve
