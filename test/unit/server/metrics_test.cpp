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
  stats.num_finished[static_cast<int>(FinishReason::kAbort)] = 4;
  std::string out = "\n" + metrics.render(stats);
  EXPECT_TRUE(has_line(out, "llmserve:num_requests_running 1"));
  EXPECT_TRUE(has_line(out, "llmserve:kv_cache_usage_perc 0.5"));
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

} // namespace
} // namespace llmserve
