#include "server/metrics.h"

#include <cstdio>

namespace llmserve {
namespace {

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

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

void Histogram::render(const std::string &name, const std::string &help,
                       std::string &out) const {
  metric(out, "histogram", name, help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += name + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum " + number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : time_to_first_token_(kLatencyBounds), inter_token_latency_(kLatencyBounds),
      e2e_request_latency_(kRequestBounds) {}

void Metrics::observe(const std::vector<RequestOutput> &outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const RequestOutput &o : outputs) {
    if (o.token >= 0) {
      auto last = last_token_time_.find(o.id);
      if (last == last_token_time_.end()) {
        time_to_first_token_.observe(seconds(o.time - o.times.arrival));
        prompt_tokens_ += o.num_prompt_tokens;
        last_token_time_.emplace(o.id, o.time);
      } else {
        inter_token_latency_.observe(seconds(o.time - last->second));
        last->second = o.time;
      }
    }
    if (o.finished) {
      e2e_request_latency_.observe(seconds(o.time - o.times.arrival));
      last_token_time_.erase(o.id);
    }
  }
}

std::string Metrics::render(const EngineStats &s) const {
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
  gauge("llmserve:num_free_kv_blocks", "KV blocks no request holds.", s.num_free_kv_blocks);
  counter("llmserve:prefix_cache_queries_total",
          "Prompt tokens looked up in the prefix cache.", s.prefix_cache_query_tokens);
  counter("llmserve:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
          s.prefix_cache_hit_tokens);
  counter("llmserve:num_preemptions_total", "Requests preempted for lack of KV blocks.",
          s.num_preemptions);
  counter("llmserve:generation_tokens_total", "Tokens generated.", s.num_generated_tokens);

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
  return out;
}

} // namespace llmserve
