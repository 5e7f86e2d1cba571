#include "core/scheduler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace llmserve {

RequestOutput output_of(const Request &request, Clock::time_point now) {
  RequestOutput out;
  out.id = request.id;
  out.finished = request.status == RequestStatus::kFinished;
  out.finish_reason = request.finish_reason;
  out.time = now;
  out.times = request.times;
  out.num_prompt_tokens = request.num_prompt_tokens;
  out.num_cached_tokens = request.num_cached_tokens;
  out.num_output_tokens = request.num_output_tokens();
  return out;
}

Scheduler::Scheduler(SchedulerConfig config, KvPool &pool, RadixCache &cache)
    : config_(std::move(config)), pool_(pool), cache_(cache) {
  auto check = [](bool ok, const std::string &what) {
    if (!ok)
      throw std::invalid_argument("scheduler config: " + what);
  };
  const SchedulerConfig &c = config_;
  check(c.max_num_seqs >= 1, "max_num_seqs = " +
                                 std::to_string(c.max_num_seqs) +
                                 ", must be >= 1");
  // Every running sequence must be able to decode in every step.
  check(c.max_num_batched_tokens >= c.max_num_seqs,
        "max_num_batched_tokens = " + std::to_string(c.max_num_batched_tokens) +
            ", must be >= max_num_seqs = " + std::to_string(c.max_num_seqs));
  check(c.max_model_len >= 2, "max_model_len = " +
                                  std::to_string(c.max_model_len) +
                                  ", must be >= 2");
  // A request alone must always fit, or it could wait forever.
  check(pool.num_blocks() >= pool.blocks_for_tokens(c.max_model_len),
        "a KV pool of " + std::to_string(pool.num_blocks()) + " blocks of " +
            std::to_string(pool.block_size()) +
            " tokens cannot hold one sequence of max_model_len = " +
            std::to_string(c.max_model_len) + " tokens");
}

void Scheduler::add(Request *request) {
  request->status = RequestStatus::kWaiting;
  waiting_.push_back(request);
}

const StepBatch &Scheduler::schedule(Clock::time_point now) {
  if (num_launched_ == int32_t(launched_.size()))
    throw std::logic_error("Scheduler::schedule: two steps are launched already");
  token_budget_ = config_.max_num_batched_tokens;
  preempted_this_step_ = false;
  scheduled_.clear();

  auto schedule_decodes = [&] {
    // Index loop: preemption shrinks running_ from the back.
    for (size_t i = 0; i < running_.size(); ++i) {
      Request *r = running_[i];
      if (r->num_uncomputed_tokens() == 1 && !reaches_length(*r) &&
          !needs_its_pending_token(*r) && !schedule_running(r, 1))
        break;
    }
  };
  auto schedule_prompts = [&] {
    for (size_t i = 0; i < running_.size() && token_budget_ > 0; ++i) {
      Request *r = running_[i];
      if (r->num_uncomputed_tokens() > 1 &&
          !schedule_running(r, std::min(r->num_uncomputed_tokens(),
                                        token_budget_)))
        break;
    }
    // After a preemption the freed blocks go to the running requests first.
    if (!preempted_this_step_)
      admit_waiting(now);
  };
  auto scheduled_any = [&] { return token_budget_ < config_.max_num_batched_tokens; };

  if (!config_.decode_only_steps) {
    schedule_decodes();
    schedule_prompts();
  } else {
    // Alternate while both kinds wait; fall back to the other kind when the
    // chosen one cannot run (no decodes, or no blocks for a new prompt).
    if (!last_step_decoded_) {
      schedule_decodes();
      last_step_decoded_ = scheduled_any();
      if (!last_step_decoded_)
        schedule_prompts();
    } else {
      schedule_prompts();
      last_step_decoded_ = !scheduled_any();
      if (last_step_decoded_)
        schedule_decodes();
    }
  }
  LaunchedStep &step = launched_[(oldest_ + num_launched_) % launched_.size()];
  launch(step);
  return step.batch;
}

bool Scheduler::reaches_length(const Request &r) const {
  return r.num_tokens() - r.num_prompt_tokens >= r.params.max_tokens ||
         r.num_tokens() >= config_.max_model_len;
}

bool Scheduler::needs_its_pending_token(const Request &r) {
  return r.num_pending_tokens > 0 && (r.grammar || r.logit_entries.tracks_history());
}

int32_t Scheduler::num_held_by_pending_tokens() const {
  return static_cast<int32_t>(
      std::count_if(running_.begin(), running_.end(),
                    [](const Request *r) { return needs_its_pending_token(*r); }));
}

bool Scheduler::reserve(Request *request, int32_t num_tokens) {
  int32_t needed =
      pool_.blocks_for_tokens(request->num_computed_tokens + num_tokens) -
      static_cast<int32_t>(request->blocks.size());
  if (needed > pool_.num_free_blocks() && caching())
    cache_.evict(needed - pool_.num_free_blocks());
  if (needed > pool_.num_free_blocks())
    return false;
  for (int32_t i = 0; i < needed; ++i)
    request->blocks.push_back(pool_.allocate());
  return true;
}

bool Scheduler::schedule_running(Request *request, int32_t num_tokens) {
  while (!reserve(request, num_tokens)) {
    Request *victim = running_.back();
    preempt(victim);
    if (victim == request)
      return false;
  }
  request->num_scheduled_tokens = num_tokens;
  token_budget_ -= num_tokens;
  scheduled_.push_back(request);
  return true;
}

void Scheduler::admit_waiting(Clock::time_point now) {
  for (auto it = waiting_.begin();
       it != waiting_.end() && token_budget_ > 0 &&
       static_cast<int32_t>(running_.size()) < config_.max_num_seqs;) {
    // A request preempted while its step runs waits for that step's token.
    if ((*it)->num_pending_tokens > 0 || (caching() && waits_for_shared_prefix(**it))) {
      ++it;
      continue;
    }
    if (!admit(*it, now))
      return;
    it = waiting_.erase(it);
  }
}

bool Scheduler::waits_for_shared_prefix(const Request &request) const {
  const int32_t block_size = pool_.block_size();
  for (const Request *q : running_) {
    if (q->num_uncomputed_tokens() <= 1)
      continue; // not computing a prompt
    // The last token never comes from the cache (see admit).
    const int32_t limit =
        std::min(request.num_tokens() - 1, static_cast<int32_t>(q->tokens.size()));
    const auto [mine, theirs] = std::mismatch(
        request.tokens.begin(), request.tokens.begin() + limit, q->tokens.begin());
    // Counting q's completed tokens walks the launched steps: only for a
    // whole shared block.
    const int32_t shared_blocks = static_cast<int32_t>(mine - request.tokens.begin()) / block_size;
    if (shared_blocks > 0 && shared_blocks > num_completed_tokens(*q) / block_size)
      return true;
  }
  return false;
}

bool Scheduler::admit(Request *request, Clock::time_point now) {
  if (caching()) {
    // Leave the last token out: it must run to produce the next logits.
    request->cache_node = cache_.match_prefix(
        request->tokens.data(), request->num_tokens() - 1, request->blocks);
    cache_.lock(request->cache_node);
    for (int32_t b : request->blocks)
      pool_.retain(b);
    request->num_computed_tokens =
        static_cast<int32_t>(request->blocks.size()) * pool_.block_size();
  }
  int32_t num_tokens =
      std::min(request->num_uncomputed_tokens(), token_budget_);
  if (!reserve(request, num_tokens)) {
    release(request, /*keep=*/false);
    return false;
  }
  if (request->status == RequestStatus::kWaiting) {
    request->times.first_scheduled = now;
    request->num_cached_tokens = request->num_computed_tokens;
  }
  request->status = RequestStatus::kRunning;
  request->num_scheduled_tokens = num_tokens;
  token_budget_ -= num_tokens;
  running_.push_back(request);
  scheduled_.push_back(request);
  return true;
}

void Scheduler::preempt(Request *request) {
  running_.pop_back();
  if (request->num_scheduled_tokens > 0) {
    scheduled_.erase(std::find(scheduled_.begin(), scheduled_.end(), request));
    token_budget_ += request->num_scheduled_tokens;
    request->num_scheduled_tokens = 0;
  }
  release(request, /*keep=*/true);
  request->status = RequestStatus::kPreempted;
  waiting_.push_front(request);
  preempted_this_step_ = true;
  ++num_preemptions_;
}

int32_t Scheduler::num_completed_tokens(const Request &request) const {
  int32_t n = request.num_computed_tokens;
  for (int32_t i = 0; i < num_launched_; ++i)
    for (const LaunchedRow &row : launched_[(oldest_ + i) % launched_.size()].rows)
      if (row.request == &request)
        n -= row.num_tokens;
  return n;
}

void Scheduler::cache_completed_blocks(Request *request) {
  // A launched step may still be writing the KV of later tokens, and may
  // fail: only completed tokens go in the cache.
  int32_t num_blocks = num_completed_tokens(*request) / pool_.block_size();
  RadixNode *node =
      cache_.insert(request->tokens.data(), num_blocks, request->blocks);
  cache_.lock(node);
  if (request->cache_node)
    cache_.unlock(request->cache_node);
  request->cache_node = node;
}

void Scheduler::release(Request *request, bool keep) {
  if (caching() && keep)
    cache_completed_blocks(request);
  if (request->cache_node) {
    cache_.unlock(request->cache_node);
    request->cache_node = nullptr;
  }
  for (int32_t b : request->blocks)
    pool_.release(b);
  request->blocks.clear();
  request->num_computed_tokens = 0;
}

void Scheduler::launch(LaunchedStep &step) {
  int32_t num_tokens = 0;
  int32_t max_blocks = 0;
  for (const Request *r : scheduled_) {
    num_tokens += r->num_scheduled_tokens;
    max_blocks = std::max(max_blocks, static_cast<int32_t>(r->blocks.size()));
  }
  StepBatch &b = step.batch;
  const int32_t num_seqs = static_cast<int32_t>(scheduled_.size());
  resize_step_batch(b, num_tokens, num_seqs, max_blocks);
  step.rows.clear();

  const int32_t block_size = pool_.block_size();
  int32_t t = 0;
  b.query_start[0] = 0;
  for (int32_t s = 0; s < num_seqs; ++s) {
    Request &r = *scheduled_[s];
    int32_t begin = r.num_computed_tokens;
    int32_t end = begin + r.num_scheduled_tokens;
    for (int32_t pos = begin; pos < end; ++pos, ++t) {
      if (pos < static_cast<int32_t>(r.tokens.size())) {
        b.token_ids[t] = r.tokens[pos];
      } else { // the token the step launched before this one samples
        b.token_ids[t] = 0;
        b.deferred_tokens.push_back({t, r.pending_row});
      }
      b.positions[t] = pos;
      b.slot_mapping[t] = r.blocks[pos / block_size] * block_size + pos % block_size;
    }
    b.query_start[s + 1] = t;
    b.context_len[s] = end;
    b.logits_rows[s] = t - 1;
    auto row = b.block_table.begin() + size_t(s) * max_blocks;
    std::fill(std::copy(r.blocks.begin(), r.blocks.end(), row),
              row + max_blocks, -1);
    b.temperature[s] = r.params.temperature;
    b.top_p[s] = r.params.top_p;
    b.top_k[s] = r.params.top_k;
    b.min_p[s] = r.params.min_p;
    b.seed[s] = r.seed;
    b.presence_penalty[s] = r.params.presence_penalty;
    b.frequency_penalty[s] = r.params.frequency_penalty;
    b.repetition_penalty[s] = r.params.repetition_penalty;
    b.num_logprobs[s] = r.params.logprobs;
    b.mask_index[s] = -1;
    // A prompt chunk's sampled token is thrown away: its entries are not
    // needed until the last chunk.
    b.penalty_start[s] = static_cast<int32_t>(b.penalty_tokens.size());
    const bool samples = end == r.num_tokens();
    if (samples) {
      append_logit_entries(b, r);
      if (r.grammar) {
        const std::vector<int32_t> &mask = r.grammar->next_token_mask();
        b.mask_index[s] = static_cast<int32_t>(b.token_mask.size() / mask.size());
        b.token_mask.insert(b.token_mask.end(), mask.begin(), mask.end());
      }
    }
    step.rows.push_back({&r, r.num_scheduled_tokens, samples});
    r.num_computed_tokens = end;
    r.num_scheduled_tokens = 0;
    if (samples) {
      ++r.num_pending_tokens;
      r.pending_row = s;
    }
  }
  b.penalty_start[num_seqs] = static_cast<int32_t>(b.penalty_tokens.size());
  num_launched_ += num_seqs > 0;
}

void Scheduler::append_logit_entries(StepBatch &b, const Request &r) {
  const size_t first = b.penalty_tokens.size();
  const LogitEntries &e = r.logit_entries;
  b.penalty_tokens.insert(b.penalty_tokens.end(), e.tokens().begin(), e.tokens().end());
  b.penalty_counts.insert(b.penalty_counts.end(), e.counts().begin(), e.counts().end());
  b.logit_bias.insert(b.logit_bias.end(), e.bias().begin(), e.bias().end());
  // A grammar decides where its output may end. Pending tokens count: they
  // come before the one this row samples.
  if (r.num_tokens() - r.num_prompt_tokens >= r.params.min_tokens || r.grammar)
    return;
  // Before min_tokens, the tokens that would end the request cannot be
  // sampled: their entries (each token once per row) get a bias of -inf.
  auto ban = [&](int32_t token) {
    const auto row_end = b.penalty_tokens.end();
    const auto it = std::find(b.penalty_tokens.begin() + first, row_end, token);
    if (it != row_end) {
      b.logit_bias[it - b.penalty_tokens.begin()] = -INFINITY;
    } else {
      b.penalty_tokens.push_back(token);
      b.penalty_counts.push_back(-1);
      b.logit_bias.push_back(-INFINITY);
    }
  };
  if (!r.params.ignore_eos)
    for (int32_t token : config_.eos_token_ids)
      ban(token);
  for (int32_t token : r.params.stop_token_ids)
    ban(token);
}

FinishReason Scheduler::stop_reason(const Request &request,
                                    int32_t token) const {
  const SamplingParams &p = request.params;
  auto contains = [token](const std::vector<int32_t> &ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  if (request.num_output_tokens() >= p.min_tokens &&
      ((!p.ignore_eos && contains(config_.eos_token_ids)) ||
       contains(p.stop_token_ids)))
    return FinishReason::kStop;
  if (request.num_output_tokens() >= p.max_tokens ||
      static_cast<int32_t>(request.tokens.size()) >= config_.max_model_len)
    return FinishReason::kLength;
  return FinishReason::kNone;
}

Scheduler::LaunchedStep &Scheduler::pop_oldest() {
  if (num_launched_ == 0)
    throw std::logic_error("Scheduler: no step is launched");
  LaunchedStep &step = launched_[oldest_];
  oldest_ = (oldest_ + 1) % static_cast<int32_t>(launched_.size());
  --num_launched_;
  return step;
}

void Scheduler::complete_step(const StepOutput &out, Clock::time_point now,
                              std::vector<RequestOutput> &outputs) {
  const LaunchedStep &step = pop_oldest();
  outputs.reserve(outputs.size() + step.rows.size());
  for (size_t s = 0; s < step.rows.size(); ++s) {
    const LaunchedRow &row = step.rows[s];
    Request *r = row.request;
    if (r->status == RequestStatus::kFinished)
      continue; // ended since: what it sampled is dropped
    // Cache prompt chunks as they complete, so that requests arriving with
    // the same prefix meanwhile share them; decodes are cached at the end.
    // A request preempted since has given its blocks away.
    if (caching() && row.num_tokens > 1 && r->status == RequestStatus::kRunning)
      cache_completed_blocks(r);
    if (!row.samples)
      continue; // a prompt chunk: its sampled token is not the next one yet
    int32_t token = out.next_tokens[s];
    --r->num_pending_tokens;
    r->tokens.push_back(token);
    r->logit_entries.add_output(token);
    if (r->num_output_tokens() == 1)
      r->times.first_token = now;
    const std::string grammar_error = r->grammar ? r->grammar->accept(token) : "";
    FinishReason reason = !grammar_error.empty()               ? FinishReason::kError
                          : r->grammar && r->grammar->finished() ? FinishReason::kStop
                                                                 : stop_reason(*r, token);
    if (reason != FinishReason::kNone)
      finish(r, reason, now);
    RequestOutput o = output_of(*r, now);
    o.token = token;
    o.error = grammar_error;
    if (r->params.logprobs >= 0) {
      o.logprob = out.token_logprobs[s];
      for (int32_t k = 0; k < r->params.logprobs; ++k) {
        const size_t i = s * abi::kMaxTopLogprobs + k;
        o.top_logprobs.emplace_back(out.top_logprob_tokens[i], out.top_logprobs[i]);
      }
    }
    outputs.push_back(std::move(o));
  }
}

void Scheduler::fail_step(const std::string &error, Clock::time_point now,
                          std::vector<RequestOutput> &outputs) {
  const LaunchedStep &step = pop_oldest();
  for (const LaunchedRow &row : step.rows) {
    Request *r = row.request;
    if (r->status == RequestStatus::kFinished)
      continue;
    finish(r, FinishReason::kError, now);
    RequestOutput o = output_of(*r, now);
    o.error = error;
    outputs.push_back(std::move(o));
  }
}

void Scheduler::finish(Request *request, FinishReason reason,
                       Clock::time_point now) {
  switch (request->status) {
  case RequestStatus::kFinished:
    return;
  case RequestStatus::kRunning:
    running_.erase(std::find(running_.begin(), running_.end(), request));
    // The KV of a failed step may be half written: never cache it.
    release(request, /*keep=*/reason != FinishReason::kError);
    break;
  case RequestStatus::kWaiting:
  case RequestStatus::kPreempted: {
    auto it = std::find(waiting_.begin(), waiting_.end(), request);
    if (it == waiting_.end())
      throw std::logic_error("Scheduler::finish: request " +
                             std::to_string(request->id) +
                             " was never added");
    waiting_.erase(it);
    break;
  }
  }
  request->status = RequestStatus::kFinished;
  request->finish_reason = reason;
  request->times.finish = now;
}

void Scheduler::check_invariants() const {
  auto fail = [](const std::string &what) {
    throw std::logic_error("Scheduler: " + what);
  };
  pool_.check_invariants();
  const int32_t num_blocks = pool_.num_blocks();
  std::vector<int32_t> holders(num_blocks, 0);
  std::vector<bool> cached(num_blocks, false);
  if (caching()) {
    cache_.check_invariants();
    cache_.for_each_block([&](int32_t b) {
      if (cached[b])
        fail("block " + std::to_string(b) + " is in the radix cache twice");
      cached[b] = true;
    });
  }
  if (static_cast<int32_t>(running_.size()) > config_.max_num_seqs)
    fail(std::to_string(running_.size()) + " running requests, max_num_seqs " +
         std::to_string(config_.max_num_seqs));
  for (const Request *r : running_) {
    std::string who = "running request " + std::to_string(r->id);
    if (r->status != RequestStatus::kRunning)
      fail(who + " is not in state running");
    if (r->num_scheduled_tokens != 0)
      fail(who + " still has tokens scheduled");
    if (static_cast<int32_t>(r->blocks.size()) !=
        pool_.blocks_for_tokens(r->num_computed_tokens))
      fail(who + " holds " + std::to_string(r->blocks.size()) +
           " blocks for " + std::to_string(r->num_computed_tokens) +
           " computed tokens");
    if (r->num_computed_tokens >= r->num_tokens())
      fail(who + " has no token left to run");
    std::vector<int32_t> sorted = r->blocks;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      fail(who + " holds a block twice");
    for (int32_t b : r->blocks)
      ++holders[b];
  }
  for (const Request *r : waiting_) {
    std::string who = "waiting request " + std::to_string(r->id);
    if (r->status != RequestStatus::kWaiting &&
        r->status != RequestStatus::kPreempted)
      fail(who + " is not in state waiting or preempted");
    if (!r->blocks.empty() || r->cache_node || r->num_computed_tokens != 0)
      fail(who + " holds blocks");
  }
  std::unordered_map<const Request *, int32_t> pending;
  for (int32_t i = 0; i < num_launched_; ++i)
    for (const LaunchedRow &row : launched_[(oldest_ + i) % launched_.size()].rows)
      if (row.samples && row.request->status != RequestStatus::kFinished)
        ++pending[row.request];
  auto check_pending = [&](const Request *r) {
    const auto it = pending.find(r);
    const int32_t launched = it == pending.end() ? 0 : it->second;
    if (r->num_pending_tokens != launched)
      fail("request " + std::to_string(r->id) + " waits for " +
           std::to_string(r->num_pending_tokens) + " tokens, launched steps sample " +
           std::to_string(launched));
  };
  std::for_each(running_.begin(), running_.end(), check_pending);
  std::for_each(waiting_.begin(), waiting_.end(), check_pending);
  for (int32_t b = 0; b < num_blocks; ++b) {
    int32_t expected = holders[b] + (cached[b] ? 1 : 0);
    if (pool_.ref_count(b) != expected)
      fail("block " + std::to_string(b) + " has " +
           std::to_string(pool_.ref_count(b)) + " references but " +
           std::to_string(expected) + " holders");
    if (holders[b] > 1 && !cached[b])
      fail("block " + std::to_string(b) + " is in " +
           std::to_string(holders[b]) +
           " sequences without being shared through the radix cache");
  }
}

} // namespace llmserve
