#include "bench/arrivals.h"
#include "bench/openai_client.h"
#include "bench/serve_benchmark.h"

#include "mock_openai_server.h"

#include <gtest/gtest.h>

#include <numeric>

namespace llmserve::bench {
namespace {

using testing::MockOpenAiServer;

double ms(std::chrono::milliseconds d) { return static_cast<double>(d.count()); }

// Sleeps overshoot on a loaded machine, never undershoot.
constexpr double kSlackMs = 150;

BenchRequest request(const std::string &prompt, int32_t output_len = 16) {
  return {prompt, {1, 2, 3}, output_len};
}

class OpenAiClientTest : public ::testing::Test {
protected:
  ClientOptions options(const std::string &endpoint = "/v1/completions") const {
    ClientOptions o;
    o.url = server_.url();
    o.endpoint = endpoint;
    o.model = "mock-model";
    o.read_timeout_s = 0.5;
    return o;
  }
  MockOpenAiServer server_;
};

void expect_known_timings(const RequestResult &r) {
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_EQ(r.prompt_len, 3);
  EXPECT_EQ(r.output_len, MockOpenAiServer::kChunks);
  const double ttft_ms = r.ttft * 1e3;
  EXPECT_GE(ttft_ms, ms(MockOpenAiServer::kFirstChunkDelay) - 1);
  EXPECT_LE(ttft_ms, ms(MockOpenAiServer::kFirstChunkDelay) + kSlackMs);
  ASSERT_EQ(r.itl.size(), static_cast<size_t>(MockOpenAiServer::kChunks - 1));
  // A late read can take two chunks at once (a gap near 0 after a long
  // one), so only sums have lower bounds. The whole stream cannot be faster
  // than the server's sleeps; the gaps alone can, by as much as the first
  // chunk came late.
  for (double gap : r.itl)
    EXPECT_LE(gap * 1e3, ms(MockOpenAiServer::kChunkGap) + kSlackMs);
  const double all_gaps_ms = (MockOpenAiServer::kChunks - 1) * ms(MockOpenAiServer::kChunkGap);
  EXPECT_GE(r.latency * 1e3, ms(MockOpenAiServer::kFirstChunkDelay) + all_gaps_ms - 1);
  const double gaps_ms = std::accumulate(r.itl.begin(), r.itl.end(), 0.0) * 1e3;
  EXPECT_GE(gaps_ms, all_gaps_ms - kSlackMs);
  EXPECT_LE(r.tpot() * 1e3, ms(MockOpenAiServer::kChunkGap) + kSlackMs);
  EXPECT_NEAR(r.latency, r.ttft + (r.output_len - 1) * r.tpot(), 1e-9);
}

TEST_F(OpenAiClientTest, CompletionsStreamHasKnownTimings) {
  ClientOptions o = options();
  o.ignore_eos = true;
  const RequestResult r = OpenAiClient(o).complete(request("ok", 8));
  expect_known_timings(r);
  const nlohmann::json &body = server_.last_body();
  EXPECT_EQ(body["model"], "mock-model");
  EXPECT_EQ(body["prompt"], "ok");
  EXPECT_EQ(body["max_tokens"], 8);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["ignore_eos"], true);
}

TEST_F(OpenAiClientTest, ChatStreamHasKnownTimings) {
  const RequestResult r = OpenAiClient(options("/v1/chat/completions")).complete(request("ok"));
  expect_known_timings(r);
  EXPECT_EQ(server_.last_body()["messages"][0]["content"], "ok");
  EXPECT_FALSE(server_.last_body().contains("ignore_eos"));
}

TEST_F(OpenAiClientTest, CountsChunksWithoutUsage) {
  const RequestResult r = OpenAiClient(options()).complete(request("nousage", 3));
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_EQ(r.output_len, 3);
}

TEST_F(OpenAiClientTest, FailuresAreReportedNotThrown) {
  const std::pair<const char *, const char *> cases[] = {
      {"http500", "HTTP 500: {\"error\":{\"message\":\"engine exploded\"}}"},
      {"badjson", "malformed stream chunk: {\"choices\": ["},
      {"error", "error in stream: {\"message\":\"out of memory\"}"},
      {"nodone", "stream ended before data: [DONE]"},
      {"empty", "stream carried no output"},
      {"drop", "stream"},
      {"stall", "stream broken: "},
  };
  const OpenAiClient client(options());
  for (const auto &[prompt, message] : cases) {
    const RequestResult r = client.complete(request(prompt));
    EXPECT_FALSE(r.success) << prompt;
    EXPECT_EQ(r.error.rfind(message, 0), 0u) << prompt << ": " << r.error;
  }
}

TEST(OpenAiClient, UnreachableServerIsAFailedRequest) {
  httplib::Server unused; // a port nobody listens on once this closes
  const int port = unused.bind_to_any_port("127.0.0.1");
  unused.stop();
  ClientOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port);
  o.model = "m";
  o.read_timeout_s = 0.5;
  const RequestResult r = OpenAiClient(o).complete(request("ok"));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error.rfind("request failed: ", 0), 0u) << r.error;
  EXPECT_THROW(OpenAiClient(o).first_model(), std::runtime_error);
}

TEST(OpenAiClient, RejectsBadUrls) {
  for (const char *url : {"127.0.0.1:8000", "ftp://host", "http://"}) {
    ClientOptions o;
    o.url = url;
    EXPECT_THROW(OpenAiClient{o}, std::invalid_argument) << url;
  }
  ClientOptions o;
  o.endpoint = "v1/completions";
  EXPECT_THROW(OpenAiClient{o}, std::invalid_argument);
}

TEST_F(OpenAiClientTest, FirstModelOfTheServer) {
  ClientOptions o = options();
  o.url += "/"; // a trailing slash is no path
  EXPECT_EQ(OpenAiClient(o).first_model(), "mock-model");
}

TEST_F(OpenAiClientTest, RunServeHoldsTheConcurrencyLimitAndCountsFailures) {
  std::vector<BenchRequest> requests;
  for (int i = 0; i < 12; ++i)
    requests.push_back(request(i % 4 == 3 ? "http500" : "ok", 3));
  Arrivals arrivals;
  arrivals.max_concurrency = 3;
  const BenchmarkRun run = run_serve(OpenAiClient(options()), requests, arrivals, "test");
  EXPECT_EQ(run.peak_concurrency, 3);
  EXPECT_LE(server_.peak_in_flight(), 3);
  const Summary s = summarize(run.results, run.duration_s, run.peak_concurrency, Slo{});
  EXPECT_EQ(s.completed, 9);
  EXPECT_EQ(s.failed, 3);
  EXPECT_EQ(s.total_output_tokens, 27);
  // 9 streams of ~200 ms, 3 at a time, take at least 3 rounds.
  EXPECT_GE(run.duration_s, 3 * 0.2);
  EXPECT_NEAR(s.ttft.median, ms(MockOpenAiServer::kFirstChunkDelay), kSlackMs);
}

TEST_F(OpenAiClientTest, RunServeSpacesArrivalsAtTheRequestRate) {
  std::vector<BenchRequest> requests(5, request("ok", 1));
  Arrivals arrivals;
  arrivals.request_rate = 10; // ~0.4 s until the last is sent
  arrivals.seed = 3;
  const BenchmarkRun run = run_serve(OpenAiClient(options()), requests, arrivals, "test");
  std::vector<double> sends = arrival_times(5, 10, 1, 3);
  EXPECT_GE(run.duration_s, sends.back() + ms(MockOpenAiServer::kFirstChunkDelay) / 1e3);
  for (const RequestResult &r : run.results)
    EXPECT_TRUE(r.success) << r.error;
}

} // namespace
} // namespace llmserve::bench
