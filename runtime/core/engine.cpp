#include "core/engine.h"

#include "grammar/compiled_grammar.h"
#include "grammar/vocabulary.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace llmserve {
namespace {

KvPool make_pool(const Executor &executor, const EngineConfig &config) {
  KvCacheSpec spec = executor.kv_cache_spec();
  if (config.block_size != 0 && config.block_size != spec.block_size)
    throw std::invalid_argument(
        "engine config: block_size = " + std::to_string(config.block_size) +
        ", but the executor's KV layout has blocks of " +
        std::to_string(spec.block_size) + " tokens");
  int32_t num_blocks =
      config.num_kv_blocks > 0
          ? config.num_kv_blocks
          : KvPool::num_blocks_for_budget(config.kv_cache_bytes,
                                          spec.bytes_per_token,
                                          spec.block_size);
  return KvPool(num_blocks, spec.block_size);
}

SchedulerConfig scheduler_config(const EngineConfig &c) {
  SchedulerConfig s;
  s.max_num_seqs = c.max_num_seqs;
  s.max_num_batched_tokens = c.max_num_batched_tokens;
  s.max_model_len = c.max_model_len;
  s.enable_prefix_caching = c.enable_prefix_caching;
  s.decode_only_steps = c.decode_only_steps;
  s.eos_token_ids = c.eos_token_ids;
  return s;
}

} // namespace

Engine::Engine(Executor &executor, EngineConfig config)
    : executor_(executor), config_(std::move(config)),
      pool_(make_pool(executor, config_)),
      kv_events_(config_.kv_events_hash_seed
                     ? std::make_unique<KvEventLog>(*config_.kv_events_hash_seed)
                     : nullptr),
      cache_(pool_, kv_events_.get()),
      scheduler_(scheduler_config(config_), pool_, cache_) {
  executor_.allocate_kv_cache(pool_.num_blocks());
  stats_.num_kv_blocks = stats_.num_free_kv_blocks = pool_.num_blocks();
  stats_.kv_block_size = pool_.block_size();
  stats_.kv_cache_dtype = executor.kv_cache_spec().dtype;
  stats_.prefix_caching = config_.enable_prefix_caching;
}

Engine::~Engine() {
  StepOutput dropped;
  for (const Launch &launch : launches_)
    if (launch.error.empty()) {
      try {
        executor_.wait(dropped);
      } catch (const std::exception &) {
        // Its requests are going away with the engine.
      }
    }
}

uint64_t Engine::add_request(std::vector<int32_t> prompt,
                             SamplingParams params) {
  auto reject = [](const std::string &why) {
    throw std::invalid_argument("request rejected: " + why);
  };
  if (prompt.empty())
    reject("the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) >= config_.max_model_len)
    reject("the prompt has " + std::to_string(prompt.size()) +
           " tokens, which leaves no room for output in max_model_len = " +
           std::to_string(config_.max_model_len));
  auto check_token = [&](int32_t token, const char *where) {
    if (token < 0 || (config_.vocab_size > 0 && token >= config_.vocab_size))
      reject(std::string(where) + " holds token id " + std::to_string(token) +
             ", outside the vocabulary of " +
             std::to_string(config_.vocab_size));
  };
  for (int32_t token : prompt)
    check_token(token, "the prompt");
  for (int32_t token : params.stop_token_ids)
    check_token(token, "stop_token_ids");
  params.validate();
  std::optional<GrammarState> grammar;
  if (params.grammar) {
    const size_t grammar_vocab = params.grammar->vocabulary().size();
    if (config_.vocab_size > 0 && grammar_vocab != size_t(config_.vocab_size))
      reject("its grammar is compiled for a vocabulary of " + std::to_string(grammar_vocab) +
             " tokens, the model's has " + std::to_string(config_.vocab_size));
    try {
      grammar.emplace(params.grammar);
    } catch (const grammar::GrammarError &e) {
      reject(e.what());
    }
    if (grammar->dead_end())
      reject("structured output: the grammar allows no first token");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t id = next_id_++;
  auto request = std::make_unique<Request>(id, std::move(prompt), std::move(params), Clock::now());
  request->grammar = std::move(grammar);
  inbox_.push_back(std::move(request));
  ++num_unfinished_;
  work_cv_.notify_all();
  return id;
}

void Engine::abort(uint64_t id) { end_request(id, FinishReason::kAbort); }

void Engine::finish(uint64_t id) { end_request(id, FinishReason::kStop); }

void Engine::end_request(uint64_t id, FinishReason reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ends_.emplace_back(id, reason);
  work_cv_.notify_all();
}

bool Engine::has_work() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_unfinished_ > 0 || !ends_.empty() || step_in_flight_;
}

bool Engine::wait_for_work(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto ready = [&] { return num_unfinished_ > 0 || !ends_.empty() || step_in_flight_; };
  if (!ready())
    waited_ = true;
  return work_cv_.wait_for(lock, timeout, ready);
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Engine::complete_oldest(std::vector<RequestOutput> &outputs) {
  const Launch launch = launches_.front();
  launches_.pop_front();
  std::string error = launch.error;
  if (error.empty()) {
    const StepBatch &batch = scheduler_.oldest_launched_batch();
    const Clock::time_point wait_start = Clock::now();
    try {
      executor_.wait(step_output_);
      if (step_output_.next_tokens.size() != size_t(batch.num_seqs))
        error = "executor returned " + std::to_string(step_output_.next_tokens.size()) +
                " tokens for " + std::to_string(batch.num_seqs) + " sequences";
      for (int32_t token : step_output_.next_tokens)
        if (error.empty() && token < 0)
          error = "executor sampled token id " + std::to_string(token);
      const size_t rows = size_t(batch.num_seqs);
      if (error.empty() && wants_logprobs(batch) &&
          (step_output_.token_logprobs.size() != rows ||
           step_output_.top_logprob_tokens.size() != rows * abi::kMaxTopLogprobs ||
           step_output_.top_logprobs.size() != rows * abi::kMaxTopLogprobs))
        error = "executor returned no log-probs for a step that asked for them";
    } catch (const std::exception &e) {
      error = std::string("executor failed: ") + e.what();
    }
    timing_.execute_seconds += seconds_between(wait_start, Clock::now());
    if (launch.back_to_back && error.empty() && step_output_.idle_seconds_before)
      timing_.gap_seconds = *step_output_.idle_seconds_before;
  }
  const Clock::time_point done = Clock::now();
  if (error.empty())
    scheduler_.complete_step(step_output_, done, outputs);
  else
    scheduler_.fail_step(error, done, outputs);
  timing_.postprocess_seconds += seconds_between(done, Clock::now());
}

std::vector<RequestOutput> Engine::step() {
  const Clock::time_point start = Clock::now();
  std::vector<std::unique_ptr<Request>> arrived;
  std::vector<std::pair<uint64_t, FinishReason>> ends;
  bool waited;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    arrived.swap(inbox_);
    ends.swap(ends_);
    waited = std::exchange(waited_, false);
  }
  timing_ = StepTiming{};
  for (auto &request : arrived) {
    scheduler_.add(request.get());
    uint64_t id = request->id;
    requests_.emplace(id, std::move(request));
  }

  std::vector<RequestOutput> outputs;
  Clock::time_point now = Clock::now();
  for (auto [id, reason] : ends) {
    auto it = requests_.find(id);
    if (it == requests_.end() ||
        it->second->status == RequestStatus::kFinished)
      continue;
    scheduler_.finish(it->second.get(), reason, now);
    outputs.push_back(output_of(*it->second, now));
  }

  // Requests whose next row needs their pending token on the host sit this
  // step out, unless they are half the running ones: then the step waits
  // for their tokens rather than run them every other step.
  if (scheduler_.num_launched_steps() > 0 &&
      2 * scheduler_.num_held_by_pending_tokens() >= std::max(1, scheduler_.num_running()))
    complete_oldest(outputs);

  const StepBatch &batch = scheduler_.schedule(now);
  const int32_t num_batched_tokens = batch.num_tokens;
  bool launched = false;
  if (batch.num_seqs > 0) {
    const Clock::time_point launch_start = Clock::now();
    timing_.schedule_seconds = seconds_between(start, launch_start);
    Launch launch{"", last_call_launched_ && !waited};
    try {
      executor_.launch(batch);
      launched = true;
    } catch (const std::exception &e) {
      launch.error = std::string("executor failed: ") + e.what();
    }
    launches_.push_back(std::move(launch));
    timing_.execute_seconds += seconds_between(launch_start, Clock::now());
  }
  last_call_launched_ = launched;
  // Overlapped, the step just launched runs while the host returns its
  // outputs and schedules the next; otherwise every step ends here.
  const int32_t keep_in_flight = config_.overlap_scheduling && launched ? 1 : 0;
  timing_.executed = scheduler_.num_launched_steps() > 0;
  while (scheduler_.num_launched_steps() > keep_in_flight)
    complete_oldest(outputs);

  const Clock::time_point stats_start = Clock::now();
  int64_t num_finished = 0;
  uint64_t num_generated = 0;
  std::array<uint64_t, kNumFinishReasons> finished_by_reason{};
  std::vector<std::unique_ptr<Request>> finished;
  for (const RequestOutput &o : outputs) {
    num_generated += o.token >= 0;
    if (o.finished) {
      ++num_finished;
      ++finished_by_reason[static_cast<int>(o.finish_reason)];
      auto it = requests_.find(o.id);
      finished.push_back(std::move(it->second));
      requests_.erase(it);
    }
  }
  // A request finished in this call may be in the step still in flight; one
  // that finished in the call before is in none.
  retired_ = scheduler_.num_launched_steps() > 0 ? std::move(finished)
                                                 : std::vector<std::unique_ptr<Request>>{};

  std::lock_guard<std::mutex> lock(mutex_);
  num_unfinished_ -= num_finished;
  step_in_flight_ = scheduler_.num_launched_steps() > 0;
  EngineStats &s = stats_;
  s.num_running = scheduler_.num_running();
  s.num_waiting = scheduler_.num_waiting();
  s.num_free_kv_blocks = pool_.num_free_blocks();
  s.num_cached_kv_blocks = config_.enable_prefix_caching ? cache_.num_cached_blocks() : 0;
  int32_t evictable = config_.enable_prefix_caching ? cache_.num_evictable_blocks() : 0;
  s.kv_usage = double(pool_.num_blocks() - pool_.num_free_blocks() - evictable) /
               pool_.num_blocks();
  s.prefix_cache_query_tokens = cache_.num_query_tokens();
  s.prefix_cache_hit_tokens = cache_.num_hit_tokens();
  s.num_preemptions = scheduler_.num_preemptions();
  s.num_steps += batch.num_seqs > 0;
  s.num_batched_tokens += num_batched_tokens;
  s.num_generated_tokens += num_generated;
  for (int r = 0; r < kNumFinishReasons; ++r)
    s.num_finished[r] += finished_by_reason[r];
  if (timing_.executed) {
    timing_.postprocess_seconds += seconds_between(stats_start, Clock::now());
    s.schedule_seconds += timing_.schedule_seconds;
    s.execute_seconds += timing_.execute_seconds;
    s.postprocess_seconds += timing_.postprocess_seconds;
  }
  return outputs;
}

} // namespace llmserve
