// `llmrun bench offline`: the engine in-process, no HTTP (nano-vllm's
// throughput benchmark), and the sequential baseline: the same requests one
// at a time, no batching, no prefix cache, as a plain Hugging Face
// `generate` loop runs them.
#ifndef LLMSERVE_BENCH_OFFLINE_BENCHMARK_H
#define LLMSERVE_BENCH_OFFLINE_BENCHMARK_H

#include "bench/serve_benchmark.h"
#include "bench/workload.h"
#include "core/engine.h"

#include <string>
#include <vector>

namespace llmserve::bench {

struct OfflineRun {
  BenchmarkRun run;
  double peak_kv_usage = 0.0; // of the pool, blocks held by requests
  // CPU time of the whole process during the run: on a shared machine it
  // says what the run cost when wall time says mostly how loaded it was.
  double cpu_s = 0.0;
  uint64_t prefix_cache_hit_tokens = 0;
  uint64_t prefix_cache_query_tokens = 0;
  // Where the engine's steps spent their time (StepTiming), summed over the
  // steps that ran a batch, and the executor's idle gaps between
  // back-to-back steps.
  uint64_t steps = 0;
  double schedule_s = 0.0;
  double execute_s = 0.0;
  double postprocess_s = 0.0;
  double idle_s = 0.0;
};

// Submits every request at once (greedy, max_tokens = output_len) to an
// engine built with `config`, and steps it until all finish. Peak
// concurrency is the most requests running in one step. Executor errors are
// failed requests.
OfflineRun run_offline(Executor &executor, const EngineConfig &config,
                       const std::vector<BenchRequest> &requests, bool ignore_eos,
                       const std::string &label);

// The same requests one after another, each alone in an engine without
// prefix caching; a request's times start when it is submitted.
OfflineRun run_sequential(Executor &executor, const EngineConfig &config,
                          const std::vector<BenchRequest> &requests, bool ignore_eos,
                          const std::string &label);

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_OFFLINE_BENCHMARK_H
