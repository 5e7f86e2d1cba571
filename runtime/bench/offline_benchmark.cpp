#include "bench/offline_benchmark.h"

#include "bench/progress_bar.h"

#include <algorithm>
#include <ctime>
#include <unordered_map>

namespace llmserve::bench {
namespace {

double process_cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

SamplingParams params_for(const BenchRequest &request, bool ignore_eos) {
  SamplingParams params;
  params.temperature = 0.0f;
  params.max_tokens = request.output_len;
  params.ignore_eos = ignore_eos;
  return params;
}

// Steps `engine` until it has no work; results[index[id]] gets request id's
// measurements, timed from its arrival.
void drain(Engine &engine, const std::unordered_map<uint64_t, size_t> &index,
           std::vector<RequestResult> &results, OfflineRun &out, ProgressBar &progress) {
  std::unordered_map<uint64_t, Clock::time_point> last_token;
  while (engine.has_work()) {
    const std::vector<RequestOutput> outputs = engine.step();
    if (const StepTiming &timing = engine.last_step_timing(); timing.executed) {
      ++out.steps;
      out.schedule_s += timing.schedule_seconds;
      out.execute_s += timing.execute_seconds;
      out.postprocess_s += timing.postprocess_seconds;
      out.idle_s += timing.gap_seconds.value_or(0.0);
    }
    const EngineStats stats = engine.stats();
    out.peak_kv_usage = std::max(out.peak_kv_usage, stats.kv_usage);
    out.run.peak_concurrency = std::max<int64_t>(out.run.peak_concurrency, stats.num_running);
    for (const RequestOutput &o : outputs) {
      RequestResult &r = results[index.at(o.id)];
      if (o.token >= 0) {
        auto [it, first] = last_token.try_emplace(o.id, o.time);
        if (first)
          r.ttft = seconds_between(o.times.arrival, o.time);
        else
          r.itl.push_back(seconds_between(it->second, o.time));
        it->second = o.time;
      }
      if (o.finished) {
        r.output_len = o.num_output_tokens;
        r.latency = seconds_between(o.times.arrival, o.time);
        r.success = o.finish_reason == FinishReason::kStop ||
                    o.finish_reason == FinishReason::kLength;
        if (!r.success)
          r.error = std::string("finished with reason ") + to_string(o.finish_reason) +
                    (o.error.empty() ? "" : ": " + o.error);
        progress.advance();
      }
    }
  }
}

void record_cache_stats(const Engine &engine, OfflineRun &out) {
  const EngineStats stats = engine.stats();
  out.prefix_cache_hit_tokens = stats.prefix_cache_hit_tokens;
  out.prefix_cache_query_tokens = stats.prefix_cache_query_tokens;
}

// Adds `requests[i]` for each i in `which`; results of requests the engine
// refuses say why.
void submit(Engine &engine, const std::vector<BenchRequest> &requests,
            const std::vector<size_t> &which, bool ignore_eos,
            std::unordered_map<uint64_t, size_t> &index, std::vector<RequestResult> &results,
            ProgressBar &progress) {
  for (size_t i : which) {
    results[i].prompt_len = static_cast<int32_t>(requests[i].prompt_tokens.size());
    try {
      index[engine.add_request(requests[i].prompt_tokens,
                               params_for(requests[i], ignore_eos))] = i;
    } catch (const std::invalid_argument &e) {
      results[i].error = e.what();
      progress.advance();
    }
  }
}

} // namespace

OfflineRun run_offline(Executor &executor, const EngineConfig &config,
                       const std::vector<BenchRequest> &requests, bool ignore_eos,
                       const std::string &label) {
  Engine engine(executor, config);
  OfflineRun out;
  out.run.results.resize(requests.size());
  ProgressBar progress(label, static_cast<int64_t>(requests.size()));
  std::vector<size_t> all(requests.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  std::unordered_map<uint64_t, size_t> index;
  const Clock::time_point start = Clock::now();
  const double cpu_start = process_cpu_seconds();
  submit(engine, requests, all, ignore_eos, index, out.run.results, progress);
  drain(engine, index, out.run.results, out, progress);
  out.run.duration_s = seconds_between(start, Clock::now());
  out.cpu_s = process_cpu_seconds() - cpu_start;
  record_cache_stats(engine, out);
  return out;
}

OfflineRun run_sequential(Executor &executor, const EngineConfig &config,
                          const std::vector<BenchRequest> &requests, bool ignore_eos,
                          const std::string &label) {
  EngineConfig alone = config;
  alone.max_num_seqs = 1;
  alone.enable_prefix_caching = false;
  // The whole prompt in one step, as `generate` runs it.
  alone.max_num_batched_tokens = std::max(config.max_num_batched_tokens, config.max_model_len);
  Engine engine(executor, alone);
  OfflineRun out;
  out.run.results.resize(requests.size());
  ProgressBar progress(label, static_cast<int64_t>(requests.size()));
  std::unordered_map<uint64_t, size_t> index;
  const Clock::time_point start = Clock::now();
  const double cpu_start = process_cpu_seconds();
  for (size_t i = 0; i < requests.size(); ++i) {
    submit(engine, requests, {i}, ignore_eos, index, out.run.results, progress);
    drain(engine, index, out.run.results, out, progress);
  }
  out.run.duration_s = seconds_between(start, Clock::now());
  out.cpu_s = process_cpu_seconds() - cpu_start;
  record_cache_stats(engine, out);
  return out;
}

} // namespace llmserve::bench
