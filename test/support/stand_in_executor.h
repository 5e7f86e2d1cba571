// A deterministic stand-in for a model, to test the engine against: the next
// token is a hash of the whole context so far. It keeps a fake paged KV cache
// (each slot remembers its position, token and the hash of the context up to
// it), reads every sequence's context back through its block table, and
// checks in every step that the step-contract arrays are consistent: the
// executors' own check_step_batch, then everything else the scheduler
// promises. So the scheduler is tested for what it hands a kernel: a stale,
// foreign or overwritten block changes the output or fails the step.
// A launched step runs when it is waited for, and fails if its batch changed
// in between, as a batch a real executor still reads must not.
#ifndef LLMSERVE_TEST_SUPPORT_STAND_IN_EXECUTOR_H
#define LLMSERVE_TEST_SUPPORT_STAND_IN_EXECUTOR_H

#include "core/executor.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <functional>
#include <vector>

namespace llmserve {

class StandInExecutor : public Executor {
public:
  explicit StandInExecutor(int32_t vocab_size, int32_t block_size = 16,
                           int64_t bytes_per_token = 1024);

  KvCacheSpec kv_cache_spec() const override;
  void allocate_kv_cache(int32_t num_blocks) override;
  void launch(const StepBatch &batch) override;
  // Runs the oldest launched step. Throws std::invalid_argument naming the
  // array, sequence and value when its batch breaks the step contract, or
  // changed since launch().
  void wait(StepOutput &out) override;

  // The model, for computing what a request run alone produces:
  // context = extend(...extend(kEmptyContext, t0)..., tn), then
  // next = sample(context, temperature, seed, penalties, allowed), where
  // `penalties` is 0 for a sequence without logit entries, else the sum of
  // penalty_entry(token, count, bias) over its entries (any order), and
  // `allowed` excludes the tokens its mask clears and those biased by -inf.
  static constexpr uint64_t kEmptyContext = 0x243f6a8885a308d3ull;
  static uint64_t extend(uint64_t context, int32_t token);
  static uint64_t penalty_entry(int32_t token, int32_t count, float bias = 0.0f);
  // The hashed token, or the first allowed one after it (modulo the
  // vocabulary); throws when no token is allowed.
  int32_t sample(uint64_t context, float temperature, int64_t seed,
                 uint64_t penalties = 0,
                 const std::function<bool(int32_t)> &allowed = {}) const;
  // Log-probs it reports, when asked: -1 for the sampled token, and the
  // top k are next, next + 1, ... (mod vocabulary) with -1, -2, ...
  static constexpr float kSampledLogprob = -1.0f;

  int64_t num_steps() const { return num_steps_; }
  // Token ids it took from the step before (StepBatch::deferred_tokens).
  int64_t num_deferred_tokens() const { return num_deferred_tokens_; }
  // Steps launched and not yet waited for.
  size_t num_launched() const { return launched_.size(); }

private:
  struct Launched {
    const StepBatch *batch;
    StepBatch copy; // as launched
  };
  struct Slot {
    int32_t position = -1; // -1: never written
    int32_t token = 0;
    uint64_t context = 0; // hash of the context up to and including token
  };
  void check_batch(const StepBatch &b);
  void run(const StepBatch &b, StepOutput &out);

  int32_t vocab_size_;
  int32_t block_size_;
  int64_t bytes_per_token_;
  std::vector<Slot> kv_;
  // Per block, the step and sequence that last listed it, to catch blocks
  // shared within a step without clearing anything between steps. Distinct
  // positions of one sequence and unshared blocks make every written slot
  // distinct.
  std::vector<int64_t> block_seen_step_;
  std::vector<int32_t> block_seen_seq_;
  int64_t num_steps_ = 0;
  int64_t num_deferred_tokens_ = 0;
  std::deque<Launched> launched_;
  int64_t last_launched_num_seqs_ = 0;
  std::vector<int32_t> previous_next_tokens_; // of the step run last
  std::optional<std::chrono::steady_clock::time_point> previous_end_;
};

} // namespace llmserve

#endif // LLMSERVE_TEST_SUPPORT_STAND_IN_EXECUTOR_H
