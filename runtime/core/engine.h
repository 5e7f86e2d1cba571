// The serving core: owns the KV pool, the radix cache and the scheduler, and
// drives an Executor one step at a time. With overlapped scheduling, each
// step() schedules and launches the next step before it waits for the one
// in flight, so the executor never waits for the host's scheduling and
// post-processing (core/scheduler.h says what that costs: a request that
// stops on a token may have sampled one more, which is dropped).
//
// Threading: add_request, abort, finish, has_work, wait_for_work and stats
// may be called from any thread (the HTTP server's). step() and
// check_invariants() belong to one thread, the one that runs the model.
// Submissions wait in an inbox that step() drains before it schedules.
#ifndef LLMSERVE_CORE_ENGINE_H
#define LLMSERVE_CORE_ENGINE_H

#include "core/executor.h"
#include "core/kv_pool.h"
#include "core/radix_cache.h"
#include "core/request.h"
#include "core/sampling_params.h"
#include "core/scheduler.h"

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace llmserve {

struct EngineConfig {
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
  int32_t max_model_len = 4096; // prompt + generated tokens
  // The KV pool: num_kv_blocks when > 0, else as many blocks as fit in
  // kv_cache_bytes at the executor's bytes per token.
  int64_t kv_cache_bytes = 0;
  int32_t num_kv_blocks = 0;
  int32_t block_size = 0; // 0: the executor's; otherwise must equal it
  bool enable_prefix_caching = true;
  bool decode_only_steps = false; // see SchedulerConfig
  // Launch step n + 1 before waiting for step n. Off: each step runs to the
  // end before the next is scheduled.
  bool overlap_scheduling = true;
  std::vector<int32_t> eos_token_ids;
  int32_t vocab_size = 0; // > 0: add_request rejects token ids outside it
  // Set: the prefix cache logs the blocks it stores and evicts, hashed from
  // this seed (core/kv_events.h); take_kv_events() collects them.
  std::optional<std::string> kv_events_hash_seed;
};

struct EngineStats {
  int32_t num_running = 0;
  int32_t num_waiting = 0; // preempted requests included
  int32_t num_kv_blocks = 0;
  int32_t kv_block_size = 0; // tokens per block
  std::string kv_cache_dtype; // the bundle's spelling ("bf16", "f8_e4m3")
  bool prefix_caching = false;
  int32_t num_free_kv_blocks = 0;
  int32_t num_cached_kv_blocks = 0; // held by the prefix cache
  // Blocks requests hold, over all blocks; blocks only the prefix cache holds
  // count as free, since they are evicted on demand.
  double kv_usage = 0.0;
  uint64_t prefix_cache_query_tokens = 0;
  uint64_t prefix_cache_hit_tokens = 0;
  uint64_t num_preemptions = 0;
  uint64_t num_steps = 0;
  uint64_t num_batched_tokens = 0; // all tokens run through the model
  uint64_t num_generated_tokens = 0;
  // Finished requests by reason, indexed by FinishReason.
  std::array<uint64_t, kNumFinishReasons> num_finished{};
  // Sums of StepTiming over the steps that ran a batch.
  double schedule_seconds = 0.0;
  double execute_seconds = 0.0;
  double postprocess_seconds = 0.0;
};

// Where one step() call's time went on the step thread. Without overlapped
// scheduling the executor sits idle for all of it but its own part, and for
// whatever the caller does between calls.
struct StepTiming {
  bool executed = false;          // a batch was launched or completed
  double schedule_seconds = 0.0;  // arrivals, ends, scheduling: the batch
  double execute_seconds = 0.0;   // in Executor::launch and Executor::wait
  double postprocess_seconds = 0.0; // outputs and statistics
  // The executor's idle time before the step completed in this call, as it
  // reports it, when that step was launched right after another (no
  // wait_for_work blocked in between).
  std::optional<double> gap_seconds;
};

class Engine {
public:
  // Sizes the KV pool and has the executor allocate it. Throws
  // std::invalid_argument naming the field of a config that cannot work.
  Engine(Executor &executor, EngineConfig config);
  // Waits for the launched steps: the executor may still read their
  // batches, which the engine owns.
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  // Queues a request and returns its id. Throws std::invalid_argument for an
  // empty or too long prompt, a token id (of the prompt or of
  // stop_token_ids) outside the vocabulary, or invalid sampling parameters
  // (SamplingParams::validate).
  uint64_t add_request(std::vector<int32_t> prompt, SamplingParams params);
  // Ends a request with reason kAbort, wherever it is, at the next step.
  // Unknown or finished ids are ignored.
  void abort(uint64_t id);
  // Ends a request with reason kStop at the next step: for stop conditions
  // found outside the engine, such as stop strings in the detokenized text.
  void finish(uint64_t id);

  // Runs one step: schedules and launches a batch, and waits for a step's
  // results (with overlapped scheduling, the step launched by the call
  // before). Returns an output for every request that sampled a token or
  // finished (aborts and executor errors included); at most one token per
  // request per step.
  std::vector<RequestOutput> step();

  // Unfinished requests, ends to apply, or a launched step to wait for.
  bool has_work() const;
  // Blocks until there is work or `timeout` passes; returns has_work().
  bool wait_for_work(std::chrono::milliseconds timeout);
  EngineStats stats() const;
  // Step thread only: the last step's timing.
  const StepTiming &last_step_timing() const { return timing_; }

  // Step thread only: throws std::logic_error unless block accounting and
  // request states are exact (see Scheduler::check_invariants).
  void check_invariants() const { scheduler_.check_invariants(); }
  const KvPool &kv_pool() const { return pool_; }
  const RadixCache &radix_cache() const { return cache_; }
  // Step thread only: the prefix cache's events since the last call; none
  // unless config.kv_events_hash_seed is set.
  std::vector<KvEvent> take_kv_events() {
    return kv_events_ ? kv_events_->take() : std::vector<KvEvent>{};
  }

private:
  // How the executor took a launched step.
  struct Launch {
    std::string error;  // launch() threw: the step never ran
    bool back_to_back;  // launched right after the step before it
  };

  void end_request(uint64_t id, FinishReason reason);
  // Waits for the oldest launched step and hands its results (or its error)
  // to the scheduler.
  void complete_oldest(std::vector<RequestOutput> &outputs);

  Executor &executor_;
  EngineConfig config_;
  KvPool pool_;
  std::unique_ptr<KvEventLog> kv_events_;
  RadixCache cache_;
  Scheduler scheduler_;
  StepOutput step_output_;
  // Step thread only.
  std::unordered_map<uint64_t, std::unique_ptr<Request>> requests_;
  // Finished requests a launched step may still list.
  std::vector<std::unique_ptr<Request>> retired_;
  std::deque<Launch> launches_; // one per launched step, oldest first
  StepTiming timing_;
  bool last_call_launched_ = false;

  mutable std::mutex mutex_; // guards everything below
  std::condition_variable work_cv_;
  std::vector<std::unique_ptr<Request>> inbox_;
  std::vector<std::pair<uint64_t, FinishReason>> ends_; // aborts, finishes
  uint64_t next_id_ = 1;
  bool waited_ = false; // wait_for_work blocked since the last step
  int64_t num_unfinished_ = 0;
  bool step_in_flight_ = false;
  EngineStats stats_;
};

} // namespace llmserve

#endif // LLMSERVE_CORE_ENGINE_H
