// What one benchmark request measured, and the summary every benchmark
// prints: the metrics of vLLM's `bench serve` (TTFT, TPOT, ITL, E2E latency,
// throughputs, goodput), so figures compare with other engines'.
#ifndef LLMSERVE_BENCH_METRICS_H
#define LLMSERVE_BENCH_METRICS_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmserve::bench {

// Times in seconds.
struct RequestResult {
  bool success = false;
  std::string error; // why it failed
  int32_t prompt_len = 0;
  int32_t output_len = 0;
  double ttft = 0.0;       // time to the first output token
  std::vector<double> itl; // every gap between consecutive output chunks
  double latency = 0.0;    // end to end
  // Time per output token after the first; 0 when there is at most one.
  double tpot() const;
};

// Service-level objectives for goodput, in milliseconds; absent = no limit.
struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2el_ms;
  bool empty() const { return !ttft_ms && !tpot_ms && !e2el_ms; }
  bool met_by(const RequestResult &r) const;
};

// Parses vLLM's `--goodput` values: "ttft:MS", "tpot:MS", "e2el:MS". Throws
// std::invalid_argument naming the value.
void parse_slo(const std::string &spec, Slo &slo);

// In milliseconds.
struct Distribution {
  double mean = 0, median = 0, p90 = 0, p99 = 0;
};

// numpy's default (linear) percentile of `values`; 0 when empty.
double percentile(std::vector<double> values, double q);
Distribution distribution_ms(const std::vector<double> &seconds);

struct Summary {
  int64_t completed = 0;
  int64_t failed = 0;
  // Failure messages and how often each occurred.
  std::map<std::string, int64_t> errors;
  double duration_s = 0.0;
  int64_t total_input_tokens = 0; // completed requests only
  int64_t total_output_tokens = 0;
  double request_throughput = 0.0;      // completed requests/s
  double output_throughput = 0.0;       // output tokens/s
  double total_token_throughput = 0.0;  // input + output tokens/s
  std::optional<double> goodput;        // requests/s meeting the SLO, if one is set
  int64_t peak_concurrency = 0;
  Distribution ttft, tpot, itl, e2el;
};

Summary summarize(const std::vector<RequestResult> &results, double duration_s,
                  int64_t peak_concurrency, const Slo &slo);

nlohmann::json to_json(const Summary &summary);
// The report as lines of text, vLLM's layout, with `extra` rows (name,
// value) after the throughputs.
std::string format_summary(const std::string &title, const Summary &summary,
                           const std::vector<std::pair<std::string, double>> &extra = {});

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_METRICS_H
