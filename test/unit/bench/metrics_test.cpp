#include "bench/metrics.h"

#include "bench/arrivals.h"
#include "bench/sse.h"
#include "bench/svg_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace llmserve::bench {
namespace {

RequestResult ok(double ttft, std::vector<double> itl, int32_t prompt_len) {
  RequestResult r;
  r.success = true;
  r.prompt_len = prompt_len;
  r.ttft = ttft;
  r.itl = std::move(itl);
  r.output_len = static_cast<int32_t>(r.itl.size()) + 1;
  r.latency = std::accumulate(r.itl.begin(), r.itl.end(), ttft);
  return r;
}

TEST(Percentile, MatchesNumpyLinear) {
  // numpy.percentile([1, 2, 3, 4, 10], q)
  const std::vector<double> v = {10, 2, 4, 1, 3};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 3.0);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 7.6);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 9.76);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 10.0);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0.0);
}

TEST(Summarize, ThroughputsLatenciesAndFailures) {
  RequestResult failed;
  failed.error = "HTTP 500: boom";
  const std::vector<RequestResult> results = {
      ok(0.1, {0.02, 0.02, 0.02}, 10), // 4 tokens, tpot 20 ms
      ok(0.3, {0.04}, 30),             // 2 tokens, tpot 40 ms
      ok(0.2, {}, 20),                 // 1 token: no TPOT
      failed, failed};
  const Summary s = summarize(results, 2.0, 3, Slo{});
  EXPECT_EQ(s.completed, 3);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.errors.at("HTTP 500: boom"), 2);
  EXPECT_EQ(s.total_input_tokens, 60);
  EXPECT_EQ(s.total_output_tokens, 7);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(s.output_throughput, 3.5);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 33.5);
  EXPECT_EQ(s.peak_concurrency, 3);
  EXPECT_FALSE(s.goodput);
  EXPECT_NEAR(s.ttft.mean, 200, 1e-9);
  EXPECT_NEAR(s.ttft.median, 200, 1e-9);
  EXPECT_NEAR(s.tpot.mean, 30, 1e-9);
  EXPECT_NEAR(s.itl.median, 20, 1e-9);
  EXPECT_NEAR(s.itl.p99, 39.4, 1e-9);
  EXPECT_NEAR(s.e2el.median, 200, 1e-9);
}

TEST(Summarize, GoodputCountsRequestsMeetingEverySlo) {
  const std::vector<RequestResult> results = {ok(0.1, {0.02, 0.02}, 1),
                                              ok(0.1, {0.09, 0.09}, 1),
                                              ok(0.5, {0.01}, 1)};
  Slo slo;
  parse_slo("ttft:200", slo);
  parse_slo("tpot:50", slo);
  EXPECT_DOUBLE_EQ(*summarize(results, 2.0, 1, slo).goodput, 0.5);
  parse_slo("e2el:100", slo);
  EXPECT_DOUBLE_EQ(*summarize(results, 2.0, 1, slo).goodput, 0.0);
}

TEST(Slo, RejectsMalformedSpecs) {
  Slo slo;
  for (const char *bad : {"ttft", "ttft:", "ttft:abc", "ttft:-5", "ttft:0", "speed:3", "ttft:5ms"})
    EXPECT_THROW(parse_slo(bad, slo), std::invalid_argument) << bad;
  EXPECT_TRUE(slo.empty());
}

TEST(Summary, ReportAndJsonCarryTheFigures) {
  const Summary s = summarize({ok(0.1, {0.02}, 5)}, 1.0, 1, Slo{});
  const std::string text = format_summary("title", s, {{"Peak KV cache usage (%)", 12.5}});
  EXPECT_NE(text.find("Successful requests:                             1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Peak KV cache usage (%):                     12.50"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Median TTFT (ms):                           100.00"), std::string::npos)
      << text;
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["completed"], 1);
  EXPECT_DOUBLE_EQ(j["ttft"]["median_ms"].get<double>(), 100.0);
  EXPECT_TRUE(j["goodput"].is_null());
}

TEST(Arrivals, InfiniteRateSendsEverythingAtOnce) {
  for (double t : arrival_times(10, INFINITY, 1.0, 0))
    EXPECT_EQ(t, 0.0);
}

TEST(Arrivals, GapsAverageOneOverTheRate) {
  for (double burstiness : {0.5, 1.0, 4.0}) {
    const std::vector<double> times = arrival_times(20000, 50.0, burstiness, 1);
    EXPECT_EQ(times.front(), 0.0);
    EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
    EXPECT_NEAR(times.back() / (times.size() - 1), 0.02, 0.002) << burstiness;
    // The gamma's variance is mean^2 / shape: burstier below 1.
    double sum_sq = 0;
    for (size_t i = 1; i < times.size(); ++i)
      sum_sq += std::pow(times[i] - times[i - 1] - 0.02, 2);
    EXPECT_NEAR(sum_sq / (times.size() - 1), 0.0004 / burstiness, 0.0001 / burstiness);
  }
}

TEST(Arrivals, RejectsNonPositiveRates) {
  EXPECT_THROW(arrival_times(1, 0.0, 1.0, 0), std::invalid_argument);
  EXPECT_THROW(arrival_times(1, NAN, 1.0, 0), std::invalid_argument);
  EXPECT_THROW(arrival_times(1, 1.0, 0.0, 0), std::invalid_argument);
}

TEST(SseParser, EventsFromArbitraryPieces) {
  const std::string stream =
      ": comment\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata: one\ndata:two\n\ndata: [DONE]\n\n";
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    SseParser parser;
    std::vector<std::string> events;
    for (size_t i = 0; i < stream.size(); i += piece)
      for (std::string &e : parser.feed(std::string_view(stream).substr(i, piece)))
        events.push_back(std::move(e));
    EXPECT_EQ(events, (std::vector<std::string>{"{\"a\":1}", "one\ntwo", "[DONE]"})) << piece;
    EXPECT_FALSE(parser.has_partial_event());
  }
  SseParser parser;
  EXPECT_TRUE(parser.feed("data: cut").empty());
  EXPECT_TRUE(parser.has_partial_event());
}

TEST(SvgPlot, DrawsEverySeriesAndEscapesText) {
  const std::string svg =
      render_svg("a <b> & c", "concurrency", {"1", "4", "16"},
                 {{"Throughput", "tok/s", {{"ours", {10, 40, 90}}, {"base", {5, 5, 5}, true}}},
                  {"TTFT", "ms", {{"p50", {1, 2, 3}}}}});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; c"), std::string::npos);
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1))
    ++lines;
  EXPECT_EQ(lines, 3u);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(svg.find("<title>ours: 90</title>"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

} // namespace
} // namespace llmserve::bench
