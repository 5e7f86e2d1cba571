// Serving metrics in the Prometheus text format: ours (llmserve:...), and the
// same under vLLM's names, labels and histogram buckets (vllm:...), which
// the routers in front of replicas read (docs/server.md). Latencies are
// observed on the engine thread from each step's RequestOutputs; counts and
// gauges come from EngineStats when rendered.
#ifndef LLMSERVE_SERVER_METRICS_H
#define LLMSERVE_SERVER_METRICS_H

#include "core/engine.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace llmserve {

// A cumulative histogram over fixed bucket upper bounds, in seconds.
class Histogram {
public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double seconds);
  // `name`_bucket{le=...}, `name`_sum and `name`_count lines; `labels`
  // (`a="x",b="y"`) go on every line.
  void render(const std::string &name, const std::string &help, std::string &out,
              const std::string &labels = "") const;

private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_; // per bucket, the last one is +Inf
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

class Metrics {
public:
  Metrics();

  // Engine thread: one step's outputs.
  void observe(const std::vector<RequestOutput> &outputs);
  // Engine thread: one step's timing (the executor's idle gap before it).
  void observe_step(const StepTiming &timing);
  // `model_name` labels the vLLM-named series.
  std::string render(const EngineStats &stats, const std::string &model_name) const;

private:
  mutable std::mutex mutex_;
  Histogram time_to_first_token_;
  Histogram inter_token_latency_;
  Histogram e2e_request_latency_;
  // The same latencies in vLLM's buckets.
  Histogram vllm_time_to_first_token_;
  Histogram vllm_inter_token_latency_;
  Histogram vllm_e2e_request_latency_;
  Histogram step_gap_;
  uint64_t prompt_tokens_ = 0;
  // When each unfinished request last produced a token.
  std::unordered_map<uint64_t, Clock::time_point> last_token_time_;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_METRICS_H
