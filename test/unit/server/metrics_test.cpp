#include "server/metrics.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

bool has_line(const std::string &text, const std::string &line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(Histogram, BucketsAreCumulative) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.1); // upper bounds are inclusive
  h.observe(0.5);
  h.observe(7.0);
  std::string out = "\n";
  h.render("x", "help", out);
  EXPECT_TRUE(has_line(out, "# TYPE x histogram"));
  EXPECT_TRUE(has_line(out, "x_bucket{le=\"0.1\"} 2"));
  EXPECT_TRUE(has_line(out, "x_bucket{le=\"1\"} 3"));
  EXPECT_TRUE(has_line(out, "x_bucket{le=\"+Inf\"} 4"));
  EXPECT_TRUE(has_line(out, "x_sum 7.65"));
  EXPECT_TRUE(has_line(out, "x_count 4"));
}

RequestOutput output(uint64_t id, int32_t token, double at, bool finished = false) {
  RequestOutput o;
  o.id = id;
  o.token = token;
  o.finished = finished;
  o.num_prompt_tokens = 5;
  o.times.arrival = Clock::time_point();
  o.time = o.times.arrival + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(at));
  return o;
}

TEST(Metrics, LatenciesAndCountsFromOutputs) {
  Metrics metrics;
  metrics.observe({output(1, 7, 0.2), output(2, -1, 0.2)}); // 2 ran a prompt chunk
  metrics.observe({output(1, 8, 0.203), output(2, 9, 3.0)});
  metrics.observe({output(1, 3, 0.3, true)});
  EngineStats stats;
  stats.num_running = 1;
  stats.kv_usage = 0.5;
  stats.num_kv_blocks = 100;
  stats.kv_block_size = 16;
  stats.num_finished[static_cast<int>(FinishReason::kAbort)] = 4;
  std::string out = "\n" + metrics.render(stats, "tiny");
  EXPECT_TRUE(has_line(out, "llmserve:num_requests_running 1"));
  EXPECT_TRUE(has_line(out, "llmserve:kv_cache_usage_perc 0.5"));
  EXPECT_TRUE(has_line(out, "llmserve:kv_cache_capacity_tokens 1600"));
  EXPECT_TRUE(has_line(out, "llmserve:request_success_total{finished_reason=\"abort\"} 4"));
  EXPECT_TRUE(has_line(out, "llmserve:request_success_total{finished_reason=\"stop\"} 0"));
  EXPECT_TRUE(has_line(out, "llmserve:prompt_tokens_total 10"));
  // First tokens at 0.2 s and 3 s.
  EXPECT_TRUE(has_line(out, "llmserve:time_to_first_token_seconds_bucket{le=\"0.25\"} 1"));
  EXPECT_TRUE(has_line(out, "llmserve:time_to_first_token_seconds_count 2"));
  // Request 1's gaps: 3 ms and 97 ms.
  EXPECT_TRUE(has_line(out, "llmserve:inter_token_latency_seconds_bucket{le=\"0.005\"} 1"));
  EXPECT_TRUE(has_line(out, "llmserve:inter_token_latency_seconds_count 2"));
  EXPECT_TRUE(has_line(out, "llmserve:e2e_request_latency_seconds_count 1"));
}

TEST(Metrics, StepTimesAndTheExecutorsIdleGaps) {
  Metrics metrics;
  StepTiming timing;
  timing.executed = true;
  metrics.observe_step(timing); // no gap: not counted
  timing.gap_seconds = 0.0003;
  metrics.observe_step(timing);
  timing.gap_seconds = 0.02;
  metrics.observe_step(timing);
  EngineStats stats;
  stats.schedule_seconds = 0.5;
  stats.execute_seconds = 12.25;
  stats.postprocess_seconds = 0.125;
  std::string out = "\n" + metrics.render(stats, "tiny");
  EXPECT_TRUE(has_line(out, "llmserve:step_gap_seconds_bucket{le=\"0.0005\"} 1"));
  EXPECT_TRUE(has_line(out, "llmserve:step_gap_seconds_bucket{le=\"0.025\"} 2"));
  EXPECT_TRUE(has_line(out, "llmserve:step_gap_seconds_count 2"));
  EXPECT_TRUE(has_line(out, "llmserve:step_schedule_seconds_total 0.5"));
  EXPECT_TRUE(has_line(out, "llmserve:step_execute_seconds_total 12.25"));
  EXPECT_TRUE(has_line(out, "llmserve:step_postprocess_seconds_total 0.125"));
}

TEST(Metrics, VllmNamesLabelsAndBuckets) {
  Metrics metrics;
  metrics.observe({output(1, 7, 0.03)});
  metrics.observe({output(1, 8, 0.09), output(2, 5, 0.5)});
  metrics.observe({output(1, 3, 0.4, true)});
  EngineStats stats;
  stats.num_running = 2;
  stats.num_waiting = 3;
  stats.kv_usage = 0.25;
  stats.num_kv_blocks = 1000;
  stats.kv_block_size = 16;
  stats.kv_cache_dtype = "f8_e4m3";
  stats.prefix_caching = true;
  stats.prefix_cache_query_tokens = 40;
  stats.prefix_cache_hit_tokens = 24;
  stats.num_generated_tokens = 4;
  stats.num_finished[static_cast<int>(FinishReason::kLength)] = 1;
  // A name that needs escaping in a label value.
  std::string out = "\n" + metrics.render(stats, "my \"model\"");
  const std::string labels = "model_name=\"my \\\"model\\\"\",engine=\"0\"";
  EXPECT_TRUE(has_line(out, "vllm:num_requests_running{" + labels + "} 2"));
  EXPECT_TRUE(has_line(out, "vllm:num_requests_waiting{" + labels + "} 3"));
  EXPECT_TRUE(has_line(out, "vllm:kv_cache_usage_perc{" + labels + "} 0.25"));
  EXPECT_TRUE(has_line(out, "vllm:cache_config_info{" + labels +
                                ",block_size=\"16\",cache_dtype=\"f8_e4m3\",num_gpu_blocks=\"1000\","
                                "enable_prefix_caching=\"True\"} 1"));
  EXPECT_TRUE(has_line(out, "vllm:prefix_cache_queries_total{" + labels + "} 40"));
  EXPECT_TRUE(has_line(out, "vllm:prefix_cache_hits_total{" + labels + "} 24"));
  EXPECT_TRUE(has_line(out, "vllm:generation_tokens_total{" + labels + "} 4"));
  EXPECT_TRUE(has_line(out, "vllm:prompt_tokens_total{" + labels + "} 10"));
  EXPECT_TRUE(
      has_line(out, "vllm:request_success_total{" + labels + ",finished_reason=\"length\"} 1"));
  // vLLM's buckets: first tokens at 30 ms and 0.5 s; gaps of 60 and 310 ms;
  // one request of 0.4 s.
  EXPECT_TRUE(has_line(out, "vllm:time_to_first_token_seconds_bucket{" + labels +
                                ",le=\"0.04\"} 1"));
  EXPECT_TRUE(has_line(out, "vllm:time_to_first_token_seconds_bucket{" + labels +
                                ",le=\"2560\"} 2"));
  EXPECT_TRUE(has_line(out, "vllm:time_to_first_token_seconds_count{" + labels + "} 2"));
  EXPECT_TRUE(has_line(out, "vllm:inter_token_latency_seconds_bucket{" + labels +
                                ",le=\"0.075\"} 1"));
  EXPECT_TRUE(has_line(out, "vllm:inter_token_latency_seconds_bucket{" + labels +
                                ",le=\"0.3\"} 1"));
  EXPECT_TRUE(has_line(out, "vllm:inter_token_latency_seconds_bucket{" + labels +
                                ",le=\"0.4\"} 2"));
  EXPECT_TRUE(has_line(out, "vllm:e2e_request_latency_seconds_bucket{" + labels +
                                ",le=\"0.3\"} 0"));
  EXPECT_TRUE(has_line(out, "vllm:e2e_request_latency_seconds_bucket{" + labels +
                                ",le=\"0.5\"} 1"));
  EXPECT_TRUE(has_line(out, "# TYPE vllm:e2e_request_latency_seconds histogram"));
}

} // namespace
} // namespace llmserve
