// Decides what runs in each step and turns the decision into a StepBatch.
//
// One token budget per step (vLLM V1): running decodes first, then running
// prompts in chunks, then new requests first come first served, while tokens
// and sequence slots last. Blocks are allocated as sequences grow; when a
// running sequence cannot get its next block, the most recently admitted
// request is preempted by recompute (its blocks freed, first in line again).
#ifndef LLMSERVE_CORE_SCHEDULER_H
#define LLMSERVE_CORE_SCHEDULER_H

#include "core/executor.h"
#include "core/kv_pool.h"
#include "core/radix_cache.h"
#include "core/request.h"

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

  // Picks this step's work and returns its batch (num_seqs == 0: nothing to
  // run). Valid until the next call.
  const StepBatch &schedule(Clock::time_point now);

  // Applies the executor's result for the batch schedule() returned: appends
  // one output per request that sampled a token or finished.
  void postprocess(const StepOutput &out, Clock::time_point now,
                   std::vector<RequestOutput> &outputs);

  // The executor failed on the last batch: every request in it ends with
  // reason kError and `error`.
  void fail_step(const std::string &error, Clock::time_point now,
                 std::vector<RequestOutput> &outputs);

  // Ends a request wherever it is (waiting, running, preempted) and frees its
  // blocks. Between steps only. No-op if already finished.
  void finish(Request *request, FinishReason reason, Clock::time_point now);

  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  uint64_t num_preemptions() const { return num_preemptions_; }

  // Between steps: throws std::logic_error unless block accounting is exact
  // (each block's reference count equals its holders, the cache and running
  // requests; a block is in two sequences only through the cache) and every
  // request's state matches its queue.
  void check_invariants() const;

private:
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
  void preempt(Request *request);
  // Puts the request's computed whole blocks in the radix cache and holds
  // the node where they end.
  void cache_computed_blocks(Request *request);
  // Drops every block and lock the request holds; with `keep`, its computed
  // blocks stay behind in the radix cache.
  void release(Request *request, bool keep);
  FinishReason stop_reason(const Request &request, int32_t token) const;
  void build_batch();
  // The request's logit entries for the row being built, with its end
  // tokens banned before min_tokens.
  void append_logit_entries(const Request &request);

  SchedulerConfig config_;
  KvPool &pool_;
  RadixCache &cache_;
  std::deque<Request *> waiting_;   // FCFS; preempted requests go first
  std::vector<Request *> running_;  // in admission order
  std::vector<Request *> scheduled_; // the step's sequences, in batch order
  StepBatch batch_;
  int32_t token_budget_ = 0;
  bool preempted_this_step_ = false;
  bool last_step_decoded_ = false;
  uint64_t num_preemptions_ = 0;
};

// The output a request reports in a step: no new tokens, its state and times.
RequestOutput output_of(const Request &request, Clock::time_point now);

} // namespace llmserve

#endif // LLMSERVE_CORE_SCHEDULER_H
