#include "bench/metrics.h"

#include "cli/command_line.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace llmserve::bench {

double RequestResult::tpot() const {
  return output_len > 1 ? (latency - ttft) / (output_len - 1) : 0.0;
}

bool Slo::met_by(const RequestResult &r) const {
  return (!ttft_ms || r.ttft * 1e3 <= *ttft_ms) &&
         (!tpot_ms || r.tpot() * 1e3 <= *tpot_ms) &&
         (!e2el_ms || r.latency * 1e3 <= *e2el_ms);
}

void parse_slo(const std::string &spec, Slo &slo) {
  const size_t colon = spec.find(':');
  auto bad = [&](const std::string &why) {
    return std::invalid_argument("--goodput '" + spec + "': " + why);
  };
  if (colon == std::string::npos)
    throw bad("expected METRIC:MILLISECONDS (ttft, tpot or e2el)");
  const std::string metric = spec.substr(0, colon);
  const std::string value = spec.substr(colon + 1);
  const std::optional<double> ms = cli::to_number(value);
  if (!ms || !(*ms > 0) || !std::isfinite(*ms))
    throw bad("'" + value + "' is not a positive number of milliseconds");
  if (metric == "ttft")
    slo.ttft_ms = *ms;
  else if (metric == "tpot")
    slo.tpot_ms = *ms;
  else if (metric == "e2el")
    slo.e2el_ms = *ms;
  else
    throw bad("unknown metric '" + metric + "' (ttft, tpot or e2el)");
}

double percentile(std::vector<double> values, double q) {
  if (values.empty())
    return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (rank - below) * (values[above] - values[below]);
}

Distribution distribution_ms(const std::vector<double> &seconds) {
  Distribution d;
  if (seconds.empty())
    return d;
  std::vector<double> ms(seconds.size());
  std::transform(seconds.begin(), seconds.end(), ms.begin(),
                 [](double s) { return s * 1e3; });
  d.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  d.median = percentile(ms, 50);
  d.p90 = percentile(ms, 90);
  d.p99 = percentile(ms, 99);
  return d;
}

Summary summarize(const std::vector<RequestResult> &results, double duration_s,
                  int64_t peak_concurrency, const Slo &slo) {
  Summary s;
  s.duration_s = duration_s;
  s.peak_concurrency = peak_concurrency;
  std::vector<double> ttfts, tpots, itls, latencies;
  int64_t good = 0;
  for (const RequestResult &r : results) {
    if (!r.success) {
      ++s.failed;
      ++s.errors[r.error];
      continue;
    }
    ++s.completed;
    s.total_input_tokens += r.prompt_len;
    s.total_output_tokens += r.output_len;
    ttfts.push_back(r.ttft);
    if (r.output_len > 1)
      tpots.push_back(r.tpot());
    itls.insert(itls.end(), r.itl.begin(), r.itl.end());
    latencies.push_back(r.latency);
    good += slo.met_by(r);
  }
  if (duration_s > 0) {
    s.request_throughput = s.completed / duration_s;
    s.output_throughput = s.total_output_tokens / duration_s;
    s.total_token_throughput =
        (s.total_input_tokens + s.total_output_tokens) / duration_s;
    if (!slo.empty())
      s.goodput = good / duration_s;
  }
  s.ttft = distribution_ms(ttfts);
  s.tpot = distribution_ms(tpots);
  s.itl = distribution_ms(itls);
  s.e2el = distribution_ms(latencies);
  return s;
}

namespace {

nlohmann::json to_json(const Distribution &d) {
  return {{"mean_ms", d.mean}, {"median_ms", d.median}, {"p90_ms", d.p90},
          {"p99_ms", d.p99}};
}

} // namespace

nlohmann::json to_json(const Summary &s) {
  nlohmann::json j = {
      {"completed", s.completed},
      {"failed", s.failed},
      {"errors", s.errors},
      {"duration_s", s.duration_s},
      {"total_input_tokens", s.total_input_tokens},
      {"total_output_tokens", s.total_output_tokens},
      {"request_throughput", s.request_throughput},
      {"output_throughput", s.output_throughput},
      {"total_token_throughput", s.total_token_throughput},
      {"goodput", s.goodput ? nlohmann::json(*s.goodput) : nlohmann::json()},
      {"peak_concurrency", s.peak_concurrency},
      {"ttft", to_json(s.ttft)},
      {"tpot", to_json(s.tpot)},
      {"itl", to_json(s.itl)},
      {"e2el", to_json(s.e2el)},
  };
  return j;
}

std::string format_summary(const std::string &title, const Summary &s,
                           const std::vector<std::pair<std::string, double>> &extra) {
  std::string out;
  char line[160];
  auto row = [&](const char *name, const char *format, double value) {
    std::snprintf(line, sizeof line, "%-40s", name);
    out += line;
    std::snprintf(line, sizeof line, format, value);
    out += line;
    out += '\n';
  };
  const std::string rule = std::string(50, '=') + '\n';
  const int pad = std::max(0, static_cast<int>(50 - title.size() - 2) / 2);
  out += std::string(pad, '=') + ' ' + title + ' ' +
         std::string(std::max<int>(0, 50 - pad - title.size() - 2), '=') + '\n';
  row("Successful requests:", "%10.0f", s.completed);
  row("Failed requests:", "%10.0f", s.failed);
  row("Peak concurrent requests:", "%10.0f", s.peak_concurrency);
  row("Benchmark duration (s):", "%10.2f", s.duration_s);
  row("Total input tokens:", "%10.0f", s.total_input_tokens);
  row("Total generated tokens:", "%10.0f", s.total_output_tokens);
  row("Request throughput (req/s):", "%10.2f", s.request_throughput);
  if (s.goodput)
    row("Request goodput (req/s):", "%10.2f", *s.goodput);
  row("Output token throughput (tok/s):", "%10.2f", s.output_throughput);
  row("Total token throughput (tok/s):", "%10.2f", s.total_token_throughput);
  for (const auto &[name, value] : extra)
    row((name + ":").c_str(), "%10.2f", value);
  auto section = [&](const char *heading, const char *name, const Distribution &d) {
    const std::string h = heading;
    const int left = std::max(0, static_cast<int>(50 - h.size()) / 2);
    out += std::string(left, '-') + h +
           std::string(std::max<int>(0, 50 - left - h.size()), '-') + '\n';
    const std::string n = name;
    row(("Mean " + n + " (ms):").c_str(), "%10.2f", d.mean);
    row(("Median " + n + " (ms):").c_str(), "%10.2f", d.median);
    row(("P90 " + n + " (ms):").c_str(), "%10.2f", d.p90);
    row(("P99 " + n + " (ms):").c_str(), "%10.2f", d.p99);
  };
  section("Time to First Token", "TTFT", s.ttft);
  section("Time per Output Token (excl. 1st token)", "TPOT", s.tpot);
  section("Inter-token Latency", "ITL", s.itl);
  section("End-to-end Latency", "E2EL", s.e2el);
  for (const auto &[error, count] : s.errors)
    out += "failed " + std::to_string(count) + "x: " + error + '\n';
  out += rule;
  return out;
}

} // namespace llmserve::bench
