// `llmrun bench serve`: sends a workload to an OpenAI-compatible server with
// an arrival process and a concurrency limit, and measures every request.
#ifndef LLMSERVE_BENCH_SERVE_BENCHMARK_H
#define LLMSERVE_BENCH_SERVE_BENCHMARK_H

#include "bench/metrics.h"
#include "bench/openai_client.h"
#include "bench/workload.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace llmserve::bench {

struct Arrivals {
  double request_rate = std::numeric_limits<double>::infinity(); // requests/s
  double burstiness = 1.0;
  int32_t max_concurrency = 0; // 0: unlimited
  uint64_t seed = 0;
};

struct BenchmarkRun {
  std::vector<RequestResult> results; // one per request, in workload order
  double duration_s = 0.0;
  int64_t peak_concurrency = 0;
};

// Progress is drawn under `label`. Never throws for a failing server: every
// request's failure is in its result.
BenchmarkRun run_serve(const OpenAiClient &client, const std::vector<BenchRequest> &requests,
              const Arrivals &arrivals, const std::string &label);

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_SERVE_BENCHMARK_H
