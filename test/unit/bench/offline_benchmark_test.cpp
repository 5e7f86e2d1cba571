#include "bench/offline_benchmark.h"

#include "support/stand_in_executor.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace llmserve::bench {
namespace {

constexpr int32_t kVocab = 500;

EngineConfig small_config() {
  EngineConfig c;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 256;
  c.max_model_len = 512;
  c.num_kv_blocks = 400;
  c.vocab_size = kVocab;
  c.eos_token_ids = {0};
  return c;
}

TEST(RunOffline, EveryRequestGetsItsOutputLength) {
  StandInExecutor executor(kVocab);
  const auto requests = random_workload(40, {10, 200}, {1, 30}, {nullptr, kVocab}, 1);
  const OfflineRun r = run_offline(executor, small_config(), requests, true, "test");
  ASSERT_EQ(r.run.results.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const RequestResult &result = r.run.results[i];
    ASSERT_TRUE(result.success) << result.error;
    EXPECT_EQ(result.output_len, requests[i].output_len);
    EXPECT_EQ(result.prompt_len, static_cast<int32_t>(requests[i].prompt_tokens.size()));
    EXPECT_EQ(result.itl.size(), static_cast<size_t>(result.output_len - 1));
    EXPECT_GT(result.ttft, 0.0);
    EXPECT_GE(result.latency, result.ttft);
  }
  EXPECT_EQ(r.run.peak_concurrency, 8);
  EXPECT_GT(r.peak_kv_usage, 0.0);
  EXPECT_LE(r.peak_kv_usage, 1.0);
  EXPECT_GT(r.run.duration_s, 0.0);
  EXPECT_GT(r.cpu_s, 0.0);
}

TEST(RunSequential, OneRequestAtATimeWithoutThePrefixCache) {
  StandInExecutor executor(kVocab);
  SharedPrefixSpec spec{2, 5, 64, 8, 4};
  const auto requests = shared_prefix_workload(spec, {nullptr, kVocab}, 2);
  const OfflineRun batched = run_offline(executor, small_config(), requests, true, "test");
  const OfflineRun alone = run_sequential(executor, small_config(), requests, true, "test");
  EXPECT_EQ(alone.run.peak_concurrency, 1);
  EXPECT_GT(batched.run.peak_concurrency, 1);
  // Groups share 64 tokens = 4 whole blocks: batched requests hit the cache.
  EXPECT_GT(batched.prefix_cache_hit_tokens, 0u);
  EXPECT_EQ(alone.prefix_cache_hit_tokens, 0u);
  const Summary a = summarize(alone.run.results, alone.run.duration_s, 1, Slo{});
  const Summary b = summarize(batched.run.results, batched.run.duration_s, 1, Slo{});
  EXPECT_EQ(a.completed, 10);
  EXPECT_EQ(a.total_output_tokens, b.total_output_tokens);
  EXPECT_EQ(a.total_input_tokens, b.total_input_tokens);
}

TEST(RunOffline, StopsAtEosUnlessIgnored) {
  // A vocabulary of two tokens, one of them EOS: some request stops early.
  StandInExecutor executor(2);
  EngineConfig c = small_config();
  c.vocab_size = 2;
  const auto requests = random_workload(10, {5, 5}, {40, 40}, {nullptr, 2}, 3);
  int32_t stopped_early = 0;
  for (const RequestResult &r : run_offline(executor, c, requests, false, "test").run.results) {
    ASSERT_TRUE(r.success) << r.error;
    stopped_early += r.output_len < 40;
  }
  EXPECT_GT(stopped_early, 0);
  for (const RequestResult &r : run_offline(executor, c, requests, true, "test").run.results)
    EXPECT_EQ(r.output_len, 40);
}

class FailingExecutor : public StandInExecutor {
public:
  using StandInExecutor::StandInExecutor;
  void wait(StepOutput &out) override {
    StandInExecutor::wait(out);
    throw std::runtime_error("kernel fault");
  }
};

TEST(RunOffline, ExecutorErrorsAndRefusedRequestsAreFailures) {
  FailingExecutor executor(kVocab);
  std::vector<BenchRequest> requests = random_workload(3, {4, 4}, {2, 2}, {nullptr, kVocab}, 0);
  requests.push_back({"", {kVocab + 1}, 2}); // outside the vocabulary
  const OfflineRun r = run_offline(executor, small_config(), requests, true, "test");
  const Summary s = summarize(r.run.results, r.run.duration_s, 1, Slo{});
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(s.failed, 4);
  const std::string executor_error = "finished with reason error: executor failed: kernel fault";
  ASSERT_EQ(s.errors.count(executor_error), 1u) << to_json(s).dump();
  EXPECT_EQ(s.errors.at(executor_error), 3);
  EXPECT_NE(r.run.results[3].error.find("outside the vocabulary"), std::string::npos);
}

} // namespace
} // namespace llmserve::bench
