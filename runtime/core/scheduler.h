// Decides what runs in each step and turns the decision into a StepBatch.
//
// One token budget per step (vLLM V1): running decodes first, then running
// prompts in chunks, then new requests first come first served, while tokens
// and sequence slots last. Blocks are allocated as sequences grow; when a
// running sequence cannot get its next block, the most recently admitted
// request is preempted by recompute (its blocks freed, first in line again).
//
// A scheduled step counts as launched until its results are completed: its
// tokens count as computed and the tokens it samples as pending, so the next
// step can be scheduled while it runs (overlapped scheduling). A pending
// token reaches the next step as a deferred token, taken from the launched
// step's results by the executor. What only the token itself decides (end of
// sequence, a stop token) is found when it is completed, by which time the
// request may have one more token launched: that one is dropped. A request
// whose next row needs its pending token on the host (a grammar's mask,
// penalties) waits for it.
#ifndef LLMSERVE_CORE_SCHEDULER_H
#define LLMSERVE_CORE_SCHEDULER_H

#include "core/executor.h"
#include "core/kv_pool.h"
#include "core/radix_cache.h"
#include "core/request.h"

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace llmserve {

struct SchedulerConfig {
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
  int32_t max_model_len = 4096; // prompt + generated tokens
  bool enable_prefix_caching = true;
  // A step carries decodes or prompt chunks, never both (alternating while
  // both wait), so the decode batch keeps a shape a captured graph can run.
  bool decode_only_steps = false;
  std::vector<int32_t> eos_token_ids;
};

class Scheduler {
public:
  // `cache` is used only with enable_prefix_caching.
  Scheduler(SchedulerConfig config, KvPool &pool, RadixCache &cache);

  // Queues a request; it must outlive its time in the scheduler.
  void add(Request *request);

  // Picks the next step's work and returns its batch (num_seqs == 0:
  // nothing to run, and no step launched). Otherwise the step counts as
  // launched, and its batch stays valid until the step is completed or
  // failed. At most two steps are launched at once; throws std::logic_error
  // when two are.
  const StepBatch &schedule(Clock::time_point now);

  // Running requests whose next row depends on their pending token on the
  // host (their grammar's mask, their penalties' history): schedule() passes
  // over them until the token is completed.
  int32_t num_held_by_pending_tokens() const;

  // Applies the executor's results to the oldest launched step: appends one
  // output per request that sampled a token or finished. Requests that
  // finished since it was launched get nothing.
  void complete_step(const StepOutput &out, Clock::time_point now,
                     std::vector<RequestOutput> &outputs);

  // The oldest launched step failed: every unfinished request in it ends with
  // reason kError and `error`.
  void fail_step(const std::string &error, Clock::time_point now,
                 std::vector<RequestOutput> &outputs);

  int32_t num_launched_steps() const { return num_launched_; }
  // The batch of the oldest launched step.
  const StepBatch &oldest_launched_batch() const { return launched_[oldest_].batch; }

  // Ends a request wherever it is (waiting, running, preempted) and frees its
  // blocks. Not while a step is being scheduled. No-op if already finished.
  void finish(Request *request, FinishReason reason, Clock::time_point now);

  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  uint64_t num_preemptions() const { return num_preemptions_; }

  // Between steps: throws std::logic_error unless block accounting is exact
  // (each block's reference count equals its holders, the cache and running
  // requests; a block is in two sequences only through the cache), every
  // request's state matches its queue, and every pending token is one a
  // launched step samples.
  void check_invariants() const;

private:
  // One sequence of a launched step.
  struct LaunchedRow {
    Request *request;
    int32_t num_tokens; // tokens it runs
    bool samples;       // its sampled token is the request's next one
  };
  struct LaunchedStep {
    StepBatch batch;
    std::vector<LaunchedRow> rows; // in batch order
  };

  bool caching() const { return config_.enable_prefix_caching; }
  // Gives `request` blocks for its next `num_tokens` tokens, evicting cached
  // blocks if needed. False, with nothing allocated, when there are too few.
  bool reserve(Request *request, int32_t num_tokens);
  // Schedules `num_tokens` of a running request, preempting the most recently
  // admitted ones until its blocks fit. False if it preempted itself.
  bool schedule_running(Request *request, int32_t num_tokens);
  bool admit(Request *request, Clock::time_point now);
  // Admits waiting requests in order while blocks, budget and seats last,
  // passing over those that wait_for_shared_prefix.
  void admit_waiting(Clock::time_point now);
  // Whether a running request is computing prompt blocks this one shares
  // and the cache does not hold yet: admitted a step later, it reads them
  // from the cache rather than computing them a second time.
  bool waits_for_shared_prefix(const Request &request) const;
  static bool needs_its_pending_token(const Request &request);
  // Whether the request's pending tokens reach max_tokens or max_model_len:
  // it finishes with them and gets no further step.
  bool reaches_length(const Request &request) const;
  void preempt(Request *request);
  // Tokens of the request whose KV is written by completed steps: its
  // computed tokens less those of launched steps.
  int32_t num_completed_tokens(const Request &request) const;
  // Puts the request's whole blocks of completed tokens in the radix cache
  // and holds the node where they end.
  void cache_completed_blocks(Request *request);
  // Drops every block and lock the request holds; with `keep`, its whole
  // blocks of completed tokens stay behind in the radix cache.
  void release(Request *request, bool keep);
  FinishReason stop_reason(const Request &request, int32_t token) const;
  // Builds the batch of scheduled_ into `step` and counts it as launched.
  void launch(LaunchedStep &step);
  // The request's logit entries for the row being built, with its end
  // tokens banned before min_tokens.
  void append_logit_entries(StepBatch &b, const Request &request);
  // Takes the oldest launched step off the launched ones.
  LaunchedStep &pop_oldest();

  SchedulerConfig config_;
  KvPool &pool_;
  RadixCache &cache_;
  std::deque<Request *> waiting_;   // FCFS; preempted requests go first
  std::vector<Request *> running_;  // in admission order
  std::vector<Request *> scheduled_; // the step being built, in batch order
  // Launched steps, the oldest at oldest_; their batches are reused.
  std::array<LaunchedStep, 2> launched_;
  int32_t oldest_ = 0;
  int32_t num_launched_ = 0;
  int32_t token_budget_ = 0;
  bool preempted_this_step_ = false;
  bool last_step_decoded_ = false;
  uint64_t num_preemptions_ = 0;
};

// The output a request reports in a step: no new tokens, its state and times.
RequestOutput output_of(const Request &request, Clock::time_point now);

} // namespace llmserve

#endif // LLMSERVE_CORE_SCHEDULER_H
