#include "server/metrics.h"

#include <cstdio>

namespace llmserve {
namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

void metric(std::string &out, const char *type, const std::string &name,
            const std::string &help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

const std::vector<double> kLatencyBounds = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                            0.05,  0.1,    0.25,  0.5,  1.0,
                                            2.5,   5.0,    10.0,  30.0, 60.0};
const std::vector<double> kRequestBounds = {0.1,  0.25, 0.5,  1.0,   2.5,
                                            5.0,  10.0, 30.0, 60.0,  120.0,
                                            300.0, 600.0};
// The executor's idle time between back-to-back steps: tens of
// microseconds for a GPU that never waits, up to a step's length for a host
// that is the bottleneck.
const std::vector<double> kStepGapBounds = {0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                            0.0025,  0.005,  0.01,    0.025,  0.05,
                                            0.1,     0.25,   1.0};
// vLLM's buckets for the same three latencies.
const std::vector<double> kVllmFirstTokenBounds = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kVllmInterTokenBounds = {
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kVllmRequestBounds = {
    0.3,  0.5,  0.8,  1.0,  1.5,  2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// A label value in the text format: backslash, quote and newline escaped.
std::string label_value(const std::string &v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

} // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double seconds) {
  size_t i = 0;
  while (i < bounds_.size() && seconds > bounds_[i])
    ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

void Histogram::render(const std::string &name, const std::string &help, std::string &out,
                       const std::string &labels) const {
  metric(out, "histogram", name, help);
  const std::string prefix = labels.empty() ? "" : labels + ",";
  const std::string own = labels.empty() ? "" : "{" + labels + "}";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += name + "_bucket{" + prefix + "le=\"" + le + "\"} " + std::to_string(cumulative) +
           "\n";
  }
  out += name + "_sum" + own + " " + number(sum_) + "\n";
  out += name + "_count" + own + " " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : time_to_first_token_(kLatencyBounds), inter_token_latency_(kLatencyBounds),
      e2e_request_latency_(kRequestBounds), vllm_time_to_first_token_(kVllmFirstTokenBounds),
      vllm_inter_token_latency_(kVllmInterTokenBounds),
      vllm_e2e_request_latency_(kVllmRequestBounds), step_gap_(kStepGapBounds) {}

void Metrics::observe_step(const StepTiming &timing) {
  if (!timing.gap_seconds)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  step_gap_.observe(*timing.gap_seconds);
}

void Metrics::observe(const std::vector<RequestOutput> &outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const RequestOutput &o : outputs) {
    if (o.token >= 0) {
      auto last = last_token_time_.find(o.id);
      if (last == last_token_time_.end()) {
        const double ttft = seconds_between(o.times.arrival, o.time);
        time_to_first_token_.observe(ttft);
        vllm_time_to_first_token_.observe(ttft);
        prompt_tokens_ += o.num_prompt_tokens;
        last_token_time_.emplace(o.id, o.time);
      } else {
        const double gap = seconds_between(last->second, o.time);
        inter_token_latency_.observe(gap);
        vllm_inter_token_latency_.observe(gap);
        last->second = o.time;
      }
    }
    if (o.finished) {
      const double e2e = seconds_between(o.times.arrival, o.time);
      e2e_request_latency_.observe(e2e);
      vllm_e2e_request_latency_.observe(e2e);
      last_token_time_.erase(o.id);
    }
  }
}

std::string Metrics::render(const EngineStats &s, const std::string &model_name) const {
  std::string out;
  auto gauge = [&](const char *name, const char *help, double value) {
    metric(out, "gauge", name, help);
    out += std::string(name) + " " + number(value) + "\n";
  };
  auto counter = [&](const char *name, const char *help, uint64_t value) {
    metric(out, "counter", name, help);
    out += std::string(name) + " " + std::to_string(value) + "\n";
  };
  gauge("llmserve:num_requests_running", "Requests in the running batch.", s.num_running);
  gauge("llmserve:num_requests_waiting", "Requests waiting to run, preempted ones included.",
        s.num_waiting);
  gauge("llmserve:kv_cache_usage_perc",
        "Fraction of KV blocks held by requests (1 = full).", s.kv_usage);
  gauge("llmserve:num_kv_blocks", "KV blocks in the pool.", s.num_kv_blocks);
  gauge("llmserve:kv_cache_capacity_tokens", "Tokens the KV pool holds.",
        double(s.num_kv_blocks) * s.kv_block_size);
  gauge("llmserve:num_free_kv_blocks", "KV blocks no request holds.", s.num_free_kv_blocks);
  gauge("llmserve:num_cached_kv_blocks",
        "KV blocks the prefix cache holds (what KV events report).", s.num_cached_kv_blocks);
  counter("llmserve:prefix_cache_queries_total",
          "Prompt tokens looked up in the prefix cache.", s.prefix_cache_query_tokens);
  counter("llmserve:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
          s.prefix_cache_hit_tokens);
  counter("llmserve:num_preemptions_total", "Requests preempted for lack of KV blocks.",
          s.num_preemptions);
  counter("llmserve:generation_tokens_total", "Tokens generated.", s.num_generated_tokens);
  auto seconds_counter = [&](const char *name, const char *help, double value) {
    metric(out, "counter", name, help);
    out += std::string(name) + " " + number(value) + "\n";
  };
  seconds_counter("llmserve:step_schedule_seconds_total",
                  "Engine steps' time before the executor: arrivals, ends, scheduling.",
                  s.schedule_seconds);
  seconds_counter("llmserve:step_execute_seconds_total",
                  "Engine steps' time in the executor.", s.execute_seconds);
  seconds_counter("llmserve:step_postprocess_seconds_total",
                  "Engine steps' time after the executor: outputs and statistics.",
                  s.postprocess_seconds);

  metric(out, "counter", "llmserve:request_success_total",
         "Finished requests by finish reason.");
  for (int r = 1; r < kNumFinishReasons; ++r)
    out += std::string("llmserve:request_success_total{finished_reason=\"") +
           to_string(static_cast<FinishReason>(r)) + "\"} " +
           std::to_string(s.num_finished[r]) + "\n";

  std::lock_guard<std::mutex> lock(mutex_);
  counter("llmserve:prompt_tokens_total", "Prompt tokens of requests that produced a token.",
          prompt_tokens_);
  time_to_first_token_.render("llmserve:time_to_first_token_seconds",
                              "From arrival to the first generated token.", out);
  inter_token_latency_.render("llmserve:inter_token_latency_seconds",
                              "Between consecutive generated tokens of a request.", out);
  e2e_request_latency_.render("llmserve:e2e_request_latency_seconds",
                              "From arrival to finish.", out);
  step_gap_.render("llmserve:step_gap_seconds",
                   "Executor idle time between back-to-back engine steps (on a GPU, the "
                   "time the GPU waits for the host).",
                   out);

  // vLLM's names, with its model_name and engine labels (one engine here).
  const std::string labels = "model_name=\"" + label_value(model_name) + "\",engine=\"0\"";
  auto series = [&](const char *type, const std::string &name, const std::string &help,
                    const std::string &value, const std::string &more_labels = "") {
    metric(out, type, name, help);
    out += name + "{" + labels + more_labels + "} " + value + "\n";
  };
  series("gauge", "vllm:num_requests_running", "Number of requests in model execution batches.",
         std::to_string(s.num_running));
  series("gauge", "vllm:num_requests_waiting", "Number of requests waiting to be processed.",
         std::to_string(s.num_waiting));
  series("gauge", "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
         number(s.kv_usage));
  series("gauge", "vllm:cache_config_info", "Information of the LLMEngine CacheConfig", "1",
         ",block_size=\"" + std::to_string(s.kv_block_size) + "\",cache_dtype=\"" +
             label_value(s.kv_cache_dtype) + "\",num_gpu_blocks=\"" +
             std::to_string(s.num_kv_blocks) + "\",enable_prefix_caching=\"" +
             (s.prefix_caching ? "True" : "False") + "\"");
  series("counter", "vllm:prefix_cache_queries_total",
         "Prefix cache queries, in terms of number of queried tokens.",
         std::to_string(s.prefix_cache_query_tokens));
  series("counter", "vllm:prefix_cache_hits_total",
         "Prefix cache hits, in terms of number of cached tokens.",
         std::to_string(s.prefix_cache_hit_tokens));
  series("counter", "vllm:num_preemptions_total",
         "Cumulative number of preemption from the engine.", std::to_string(s.num_preemptions));
  series("counter", "vllm:prompt_tokens_total", "Number of prefill tokens processed.",
         std::to_string(prompt_tokens_));
  series("counter", "vllm:generation_tokens_total", "Number of generation tokens processed.",
         std::to_string(s.num_generated_tokens));
  metric(out, "counter", "vllm:request_success_total",
         "Count of successfully processed requests.");
  for (int r = 1; r < kNumFinishReasons; ++r)
    out += "vllm:request_success_total{" + labels + ",finished_reason=\"" +
           to_string(static_cast<FinishReason>(r)) + "\"} " + std::to_string(s.num_finished[r]) +
           "\n";
  vllm_time_to_first_token_.render("vllm:time_to_first_token_seconds",
                                   "Histogram of time to first token in seconds.", out, labels);
  vllm_inter_token_latency_.render("vllm:inter_token_latency_seconds",
                                   "Histogram of inter-token latency in seconds.", out, labels);
  vllm_e2e_request_latency_.render("vllm:e2e_request_latency_seconds",
                                   "Histogram of e2e request latency in seconds.", out, labels);
  return out;
}

} // namespace llmserve
