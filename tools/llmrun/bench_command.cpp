// llmrun bench serve | offline: the benchmarks behind every performance
// figure of the project (docs/benchmarks.md), each with a naive baseline
// measured in the same run so the report is a ratio side by side.
//   serve    an OpenAI-compatible server over HTTP, as `vllm bench serve`
//   offline  the engine in-process, as nano-vllm's bench.py
#include "commands.h"

#include "bench/metrics.h"
#include "bench/offline_benchmark.h"
#include "bench/openai_client.h"
#include "bench/serve_benchmark.h"
#include "bench/svg_plot.h"
#include "bench/workload.h"
#include "cpu/cpu_executor.h"
#include "server/model_executor.h"
#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmrun {

int bench_decode_command(int argc, char **argv);

namespace {

namespace bench = llmserve::bench;

const char kUsage[] =
    "usage: llmrun bench serve --url http://127.0.0.1:8000 [options]\n"
    "       llmrun bench offline <bundle> [options]\n"
    "       llmrun bench decode <bundle> [options]   (decode step time; --help)\n"
    "\n"
    "workload (both):\n"
    "  --dataset random|shared-prefix|jsonl   (default random)\n"
    "  --num-prompts N              random and jsonl (serve 100, offline 256)\n"
    "  --random-input-len N|MIN:MAX prompt tokens (serve 1024, offline 100:1024)\n"
    "  --random-output-len N|MIN:MAX output tokens (serve 128, offline 100:1024)\n"
    "  --random-range-ratio R       N means [N(1-R), N(1+R)] (default 0)\n"
    "  --gsp-num-groups N --gsp-prompts-per-group N --gsp-system-prompt-len N\n"
    "  --gsp-question-len N --gsp-output-len N   shared-prefix (64 16 2048 128 256)\n"
    "  --dataset-path FILE          jsonl: {\"prompt\": ..., \"output_len\": N} per line\n"
    "  --jsonl-output-len N         output tokens where a line has none (128)\n"
    "  --tokenizer PATH             tokenizer.json or a directory holding it\n"
    "                               (offline: the bundle's by default)\n"
    "  --seed N                     (default 0)\n"
    "serve:\n"
    "  --url URL --endpoint PATH    (/v1/completions or /v1/chat/completions)\n"
    "  --model NAME                 (default: the server's first model)\n"
    "  --request-rate R|inf --burstiness B --max-concurrency N (inf 1 unlimited)\n"
    "  --ignore-eos --timeout S     (longest silence from the server, 600)\n"
    "  --baseline-url URL           server for the baseline (default --url)\n"
    "offline:\n"
    "  --weights DIR --threads N --device cpu|cuda --no-cuda-graphs\n"
    "  --max-num-seqs N --max-num-batched-tokens N --max-model-len N\n"
    "  --kv-cache-gb G (default 2) | --num-kv-blocks N  --no-prefix-cache\n"
    "  (always ignore_eos: output lengths are the workload's)\n"
    "report (both):\n"
    "  --baseline sequential        the same workload one request at a time;\n"
    "                               offline also: no-prefix-cache\n"
    "  --goodput ttft:MS [tpot:MS e2el:MS]   SLOs for goodput\n"
    "  --plot out.svg               sweep --concurrencies and draw throughput\n"
    "  --concurrencies LIST         (default 1,4,16,32,64)\n"
    "  --result-file out.json\n";

struct Options {
  std::string mode; // serve | offline
  // Workload.
  std::string dataset = "random";
  int32_t num_prompts = 0; // 0: the mode's default
  std::string input_len, output_len;
  double range_ratio = 0.0;
  bench::SharedPrefixSpec shared_prefix;
  std::string dataset_path;
  int32_t jsonl_output_len = 128;
  std::string tokenizer;
  uint64_t seed = 0;
  // Serve.
  bench::ClientOptions client;
  std::string baseline_url;
  bench::Arrivals arrivals;
  // Offline.
  std::string bundle, weights;
  int32_t threads = 0;
  std::string device; // empty: the bundle's target
  bool cuda_graphs = true;
  llmserve::EngineConfig engine;
  int32_t max_model_len = 0; // 0: the model's max_position_embeddings
  double kv_cache_gb = 2.0;
  // Report.
  std::string baseline;
  bench::Slo slo;
  std::string plot;
  std::vector<int32_t> concurrencies = {1, 4, 16, 32, 64};
  std::string result_file;
};

int64_t parse_int(const std::string &flag, const std::string &text, int64_t min, int64_t max) {
  size_t end = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &end);
  } catch (const std::exception &) {
    end = 0;
  }
  if (end == 0 || end != text.size() || value < min || value > max)
    throw std::invalid_argument(flag + " '" + text + "': expected an integer in [" +
                                std::to_string(min) + ", " + std::to_string(max) + "]");
  return value;
}

double parse_double(const std::string &flag, const std::string &text) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception &) {
    end = 0;
  }
  if (end == 0 || end != text.size() || std::isnan(value))
    throw std::invalid_argument(flag + " '" + text + "': expected a number");
  return value;
}

Options parse_options(int argc, char **argv) {
  Options o;
  o.mode = argv[1];
  int i = 2;
  if (o.mode == "offline") {
    if (i >= argc || argv[i][0] == '-')
      throw std::invalid_argument("bench offline: expected a bundle directory first");
    o.bundle = argv[i++];
  }
  auto value = [&](const std::string &flag) -> std::string {
    if (i + 1 >= argc)
      throw std::invalid_argument(flag + ": missing value");
    return argv[++i];
  };
  auto int32 = [&](const std::string &flag, int64_t min) {
    return static_cast<int32_t>(parse_int(flag, value(flag), min, INT32_MAX));
  };
  const bool serve = o.mode == "serve";
  for (; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--dataset") o.dataset = value(flag);
    else if (flag == "--num-prompts") o.num_prompts = int32(flag, 1);
    else if (flag == "--random-input-len") o.input_len = value(flag);
    else if (flag == "--random-output-len") o.output_len = value(flag);
    else if (flag == "--random-range-ratio") o.range_ratio = parse_double(flag, value(flag));
    else if (flag == "--gsp-num-groups") o.shared_prefix.num_groups = int32(flag, 1);
    else if (flag == "--gsp-prompts-per-group") o.shared_prefix.prompts_per_group = int32(flag, 1);
    else if (flag == "--gsp-system-prompt-len") o.shared_prefix.system_prompt_len = int32(flag, 1);
    else if (flag == "--gsp-question-len") o.shared_prefix.question_len = int32(flag, 1);
    else if (flag == "--gsp-output-len") o.shared_prefix.output_len = int32(flag, 1);
    else if (flag == "--dataset-path") o.dataset_path = value(flag);
    else if (flag == "--jsonl-output-len") o.jsonl_output_len = int32(flag, 1);
    else if (flag == "--tokenizer") o.tokenizer = value(flag);
    else if (flag == "--seed") o.seed = parse_int(flag, value(flag), 0, INT64_MAX);
    else if (flag == "--baseline") o.baseline = value(flag);
    else if (flag == "--plot") o.plot = value(flag);
    else if (flag == "--result-file") o.result_file = value(flag);
    else if (flag == "--concurrencies") {
      o.concurrencies.clear();
      const std::string list = value(flag);
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        o.concurrencies.push_back(
            static_cast<int32_t>(parse_int(flag, list.substr(start, comma - start), 1, 1 << 20)));
        start = comma + 1;
      }
    } else if (flag == "--goodput") {
      bench::parse_slo(value(flag), o.slo);
      while (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0)
        bench::parse_slo(argv[++i], o.slo);
    } else if (serve && flag == "--url") o.client.url = value(flag);
    else if (serve && flag == "--endpoint") o.client.endpoint = value(flag);
    else if (serve && flag == "--model") o.client.model = value(flag);
    else if (serve && flag == "--ignore-eos") o.client.ignore_eos = true;
    else if (serve && flag == "--timeout") o.client.read_timeout_s = parse_double(flag, value(flag));
    else if (serve && flag == "--baseline-url") o.baseline_url = value(flag);
    else if (serve && flag == "--request-rate") {
      const std::string rate = value(flag);
      o.arrivals.request_rate =
          rate == "inf" ? INFINITY : parse_double(flag, rate);
    } else if (serve && flag == "--burstiness") o.arrivals.burstiness = parse_double(flag, value(flag));
    else if (serve && flag == "--max-concurrency") o.arrivals.max_concurrency = int32(flag, 0);
    else if (!serve && flag == "--weights") o.weights = value(flag);
    else if (!serve && flag == "--threads") o.threads = int32(flag, 0);
    else if (!serve && flag == "--device") o.device = value(flag);
    else if (!serve && flag == "--no-cuda-graphs") o.cuda_graphs = false;
    else if (!serve && flag == "--max-num-seqs") o.engine.max_num_seqs = int32(flag, 1);
    else if (!serve && flag == "--max-num-batched-tokens") o.engine.max_num_batched_tokens = int32(flag, 1);
    else if (!serve && flag == "--max-model-len") o.max_model_len = int32(flag, 2);
    else if (!serve && flag == "--num-kv-blocks") o.engine.num_kv_blocks = int32(flag, 1);
    else if (!serve && flag == "--kv-cache-gb") o.kv_cache_gb = parse_double(flag, value(flag));
    else if (!serve && flag == "--no-prefix-cache") o.engine.enable_prefix_caching = false;
    else
      throw std::invalid_argument("bench " + o.mode + ": unknown argument '" + flag + "'");
  }
  if (o.input_len.empty())
    o.input_len = serve ? "1024" : "100:1024";
  if (o.output_len.empty())
    o.output_len = serve ? "128" : "100:1024";
  if (o.num_prompts == 0)
    o.num_prompts = serve ? 100 : 256;
  if (!o.baseline.empty() && o.baseline != "sequential" &&
      (serve || o.baseline != "no-prefix-cache"))
    throw std::invalid_argument("--baseline '" + o.baseline + "': expected sequential" +
                                (serve ? "" : " or no-prefix-cache"));
  if (!(o.kv_cache_gb > 0))
    throw std::invalid_argument("--kv-cache-gb: expected a positive size");
  if (!(o.client.read_timeout_s > 0))
    throw std::invalid_argument("--timeout: expected a positive number of seconds");
  return o;
}

std::vector<bench::BenchRequest> make_workload(const Options &o,
                                               const llmserve::Tokenizer *tokenizer,
                                               int32_t vocab_size) {
  const bench::TokenSource source{tokenizer, vocab_size};
  if (o.dataset == "random")
    return bench::random_workload(
        o.num_prompts,
        bench::parse_length_range("--random-input-len", o.input_len, o.range_ratio),
        bench::parse_length_range("--random-output-len", o.output_len, o.range_ratio),
        source, o.seed);
  if (o.dataset == "shared-prefix")
    return bench::shared_prefix_workload(o.shared_prefix, source, o.seed);
  if (o.dataset == "jsonl") {
    if (o.dataset_path.empty())
      throw std::invalid_argument("--dataset jsonl needs --dataset-path");
    if (!tokenizer)
      throw std::invalid_argument("--dataset jsonl needs --tokenizer to count prompt tokens");
    return bench::jsonl_workload(o.dataset_path, o.num_prompts, o.jsonl_output_len, *tokenizer);
  }
  throw std::invalid_argument("--dataset '" + o.dataset +
                              "': expected random, shared-prefix or jsonl");
}

// One measured run and what it is.
struct Measured {
  std::string name;
  int32_t concurrency = 0; // 0: unlimited
  bench::BenchmarkRun run;
  bench::Summary summary;
  std::vector<std::pair<std::string, double>> extra; // offline: KV and prefix cache
};

std::string concurrency_text(int32_t c) { return c > 0 ? std::to_string(c) : "unlimited"; }

nlohmann::json to_json(const Measured &m) {
  nlohmann::json requests = nlohmann::json::array();
  for (const bench::RequestResult &r : m.run.results)
    requests.push_back({{"success", r.success}, {"error", r.error},
                        {"prompt_len", r.prompt_len}, {"output_len", r.output_len},
                        {"ttft_s", r.ttft}, {"latency_s", r.latency}, {"itl_s", r.itl}});
  nlohmann::json j = {{"name", m.name},
                      {"max_concurrency", m.concurrency},
                      {"summary", bench::to_json(m.summary)},
                      {"requests", requests}};
  for (const auto &[name, value] : m.extra)
    j[name] = value;
  return j;
}

void print(const Measured &m) {
  const std::string title = m.name + ", concurrency " + concurrency_text(m.concurrency);
  std::fputs(bench::format_summary(title, m.summary, m.extra).c_str(), stdout);
  std::fflush(stdout);
}

// "ours vs baseline" lines, the figures the targets are checked against.
std::string ratios(const Measured &ours, const Measured &baseline) {
  char line[512];
  const bench::Summary &a = ours.summary, &b = baseline.summary;
  auto ratio = [](double x, double y) { return y > 0 ? x / y : INFINITY; };
  std::snprintf(line, sizeof line,
                "concurrency %s: output throughput %.2f vs %.2f tok/s = %.2fx the %s "
                "baseline; median TTFT %.2f vs %.2f ms (baseline / ours = %.2f)\n",
                concurrency_text(ours.concurrency).c_str(), a.output_throughput,
                b.output_throughput, ratio(a.output_throughput, b.output_throughput),
                baseline.name.c_str(), a.ttft.median, b.ttft.median,
                ratio(b.ttft.median, a.ttft.median));
  return line;
}

void write_plot(const std::string &path, const std::vector<Measured> &sweep,
                const Measured *baseline) {
  std::vector<std::string> x_labels;
  bench::Series ours{"llmserve", {}, false};
  bench::Series base{baseline ? baseline->name : "", {}, true};
  bench::Series ttft[3] = {{"TTFT p50", {}, false}, {"TTFT p90", {}, false}, {"TTFT p99", {}, false}};
  bench::Series tpot[3] = {{"TPOT p50", {}, false}, {"TPOT p90", {}, false}, {"TPOT p99", {}, false}};
  for (const Measured &m : sweep) {
    x_labels.push_back(concurrency_text(m.concurrency));
    ours.y.push_back(m.summary.output_throughput);
    if (baseline)
      base.y.push_back(baseline->summary.output_throughput);
    const bench::Distribution *d[2] = {&m.summary.ttft, &m.summary.tpot};
    bench::Series *s[2] = {ttft, tpot};
    for (int k = 0; k < 2; ++k) {
      s[k][0].y.push_back(d[k]->median);
      s[k][1].y.push_back(d[k]->p90);
      s[k][2].y.push_back(d[k]->p99);
    }
  }
  bench::Panel throughput{"Output throughput", "tokens/s", {ours}};
  if (baseline)
    throughput.series.push_back(base);
  const std::vector<bench::Panel> panels = {
      throughput,
      {"Time to first token", "ms", {ttft[0], ttft[1], ttft[2]}},
      {"Time per output token", "ms", {tpot[0], tpot[1], tpot[2]}}};
  std::ofstream out(path);
  out << bench::render_svg("llmrun bench " + sweep.front().name, "concurrency", x_labels, panels);
  if (!out)
    throw std::runtime_error(path + ": cannot write the plot");
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

// Runs `measure` at each concurrency (the sweep when plotting, else the one
// given), the baseline once, and reports.
int report(const Options &o, int argc, char **argv, int32_t single_concurrency,
           const std::function<Measured(int32_t)> &measure,
           const std::function<Measured()> &measure_baseline,
           const nlohmann::json &workload) {
  std::vector<Measured> runs;
  for (int32_t c : o.plot.empty() ? std::vector<int32_t>{single_concurrency} : o.concurrencies) {
    runs.push_back(measure(c));
    print(runs.back());
  }
  std::optional<Measured> baseline;
  if (!o.baseline.empty()) {
    baseline = measure_baseline();
    print(*baseline);
    std::printf("Speed-up over the %s baseline (same workload, same run):\n", o.baseline.c_str());
    for (const Measured &m : runs)
      std::fputs(("  " + ratios(m, *baseline)).c_str(), stdout);
  }
  if (!o.plot.empty()) {
    write_plot(o.plot, runs, baseline ? &*baseline : nullptr);
    std::printf("plot: %s\n", o.plot.c_str());
  }
  if (!o.result_file.empty()) {
    nlohmann::json result = {{"date", utc_now()},
                             {"command", std::vector<std::string>(argv, argv + argc)},
                             {"workload", workload},
                             {"runs", nlohmann::json::array()}};
    for (const Measured &m : runs)
      result["runs"].push_back(to_json(m));
    if (baseline) {
      result["baseline"] = to_json(*baseline);
      result["speedup_output_throughput"] = nlohmann::json::array();
      for (const Measured &m : runs)
        result["speedup_output_throughput"].push_back(
            m.summary.output_throughput / baseline->summary.output_throughput);
    }
    std::ofstream out(o.result_file);
    out << result.dump(2) << '\n';
    if (!out)
      throw std::runtime_error(o.result_file + ": cannot write the result file");
  }
  int64_t failed = baseline ? baseline->summary.failed : 0;
  for (const Measured &m : runs)
    failed += m.summary.failed;
  return failed > 0 ? 1 : 0;
}

nlohmann::json workload_json(const Options &o, const std::vector<bench::BenchRequest> &requests) {
  int64_t input = 0, output = 0;
  for (const bench::BenchRequest &r : requests) {
    input += static_cast<int64_t>(r.prompt_tokens.size());
    output += r.output_len;
  }
  return {{"dataset", o.dataset}, {"num_requests", requests.size()},
          {"input_tokens", input}, {"requested_output_tokens", output}, {"seed", o.seed}};
}

int serve(const Options &o, int argc, char **argv) {
  if (o.tokenizer.empty())
    throw std::invalid_argument("bench serve: --tokenizer is needed to count prompt tokens "
                                "and write prompts of exact token lengths");
  const llmserve::Tokenizer tokenizer = llmserve::Tokenizer::from_file(o.tokenizer);
  bench::ClientOptions client_options = o.client;
  if (client_options.model.empty())
    client_options.model = bench::OpenAiClient(client_options).first_model();
  const bench::OpenAiClient client(client_options);
  const std::vector<bench::BenchRequest> requests = make_workload(o, &tokenizer, 0);
  nlohmann::json workload = workload_json(o, requests);
  workload["url"] = client_options.url;
  workload["model"] = client_options.model;
  workload["request_rate"] = std::isinf(o.arrivals.request_rate)
                                 ? nlohmann::json("inf")
                                 : nlohmann::json(o.arrivals.request_rate);
  workload["burstiness"] = o.arrivals.burstiness;

  auto measure = [&](const bench::OpenAiClient &c, const std::string &name,
                     int32_t concurrency) {
    bench::Arrivals arrivals = o.arrivals;
    arrivals.max_concurrency = concurrency;
    Measured m{name, concurrency, {}, {}, {}};
    m.run = bench::run_serve(c, requests, arrivals,
                             name + " @" + concurrency_text(concurrency));
    m.summary = bench::summarize(m.run.results, m.run.duration_s, m.run.peak_concurrency, o.slo);
    return m;
  };
  bench::ClientOptions baseline_options = client_options;
  if (!o.baseline_url.empty())
    baseline_options.url = o.baseline_url;
  const bench::OpenAiClient baseline_client(baseline_options);
  return report(
      o, argc, argv, o.arrivals.max_concurrency,
      [&](int32_t c) { return measure(client, "serve", c); },
      [&] { return measure(baseline_client, "sequential", 1); }, workload);
}

int offline(Options o, int argc, char **argv) {
  const llmserve::Manifest manifest = llmserve::Bundle::load_manifest(o.bundle);
  if (!manifest.model || !manifest.kv_cache)
    throw std::invalid_argument(o.bundle + ": manifest.json has no model or kv_cache section; "
                                "it is not a model bundle");
  const llmserve::ModelConfig &model = *manifest.model;
  // Random prompts are token ids in-process; only a prompt file needs text
  // made into tokens, with the bundle's tokenizer unless told otherwise.
  std::optional<llmserve::Tokenizer> tokenizer;
  if (o.dataset == "jsonl")
    tokenizer = llmserve::Tokenizer::from_file(o.tokenizer.empty() ? o.bundle : o.tokenizer);
  const std::vector<bench::BenchRequest> requests =
      make_workload(o, tokenizer ? &*tokenizer : nullptr, static_cast<int32_t>(model.vocab_size));

  llmserve::EngineConfig &config = o.engine;
  config.vocab_size = static_cast<int32_t>(model.vocab_size);
  for (int64_t id : model.eos_token_ids)
    config.eos_token_ids.push_back(static_cast<int32_t>(id));
  if (o.max_model_len > model.max_position_embeddings)
    throw std::invalid_argument("--max-model-len " + std::to_string(o.max_model_len) +
                                " exceeds the model's max_position_embeddings (" +
                                std::to_string(model.max_position_embeddings) + ")");
  config.max_model_len = o.max_model_len > 0
                             ? o.max_model_len
                             : static_cast<int32_t>(model.max_position_embeddings);
  config.kv_cache_bytes = static_cast<int64_t>(o.kv_cache_gb * (1 << 30));

  llmserve::ServeOptions load;
  load.bundle_dir = o.bundle;
  load.weights_dir = o.weights;
  load.num_threads = o.threads;
  load.device = o.device;
  load.cuda_graphs = o.cuda_graphs;
  // The CUDA executor's step memory must hold the sweep's largest batch.
  llmserve::EngineConfig largest = config;
  for (int32_t c : o.concurrencies)
    largest.max_num_seqs = std::max(largest.max_num_seqs, c);
  largest.max_num_batched_tokens = std::max(largest.max_num_batched_tokens, largest.max_num_seqs);
  llmserve::ModelExecutor loaded = llmserve::load_model_executor(load, manifest, largest);
  llmserve::Executor &executor = *loaded.executor;
  std::fprintf(stderr, "device: %s\n", loaded.description.c_str());
  nlohmann::json workload = workload_json(o, requests);
  workload["bundle"] = o.bundle;
  workload["device"] = loaded.description;
  if (const auto *cpu = dynamic_cast<const llmserve::CpuExecutor *>(&executor))
    workload["threads"] = cpu->num_threads();

  auto measured = [&](std::string name, int32_t concurrency, const bench::OfflineRun &r) {
    Measured m{std::move(name), concurrency, r.run, {}, {}};
    m.summary = bench::summarize(r.run.results, r.run.duration_s, r.run.peak_concurrency, o.slo);
    const double hit_rate =
        r.prefix_cache_query_tokens
            ? static_cast<double>(r.prefix_cache_hit_tokens) / r.prefix_cache_query_tokens
            : 0.0;
    m.extra = {{"Peak KV cache usage (%)", 100 * r.peak_kv_usage},
               {"Prefix cache hit rate (%)", 100 * hit_rate},
               {"Process CPU time (s)", r.cpu_s},
               {"Output tokens per CPU second", r.cpu_s > 0 ? m.summary.total_output_tokens / r.cpu_s : 0.0}};
    return m;
  };
  // Warm-up: one request first, so the first measured run does not pay for
  // faulting in the mapped weights and the kernels.
  bench::run_offline(executor, config, {requests.front()}, true, "warm-up");
  return report(
      o, argc, argv, config.max_num_seqs,
      [&](int32_t c) {
        llmserve::EngineConfig at = config;
        at.max_num_seqs = c;
        at.max_num_batched_tokens = std::max(at.max_num_batched_tokens, c);
        return measured("offline", c,
                        bench::run_offline(executor, at, requests, true,
                                           "offline @" + std::to_string(c)));
      },
      [&] {
        if (o.baseline == "sequential")
          return measured("sequential", 1,
                          bench::run_sequential(executor, config, requests, true, "sequential"));
        llmserve::EngineConfig uncached = config;
        uncached.enable_prefix_caching = false;
        return measured("no-prefix-cache", config.max_num_seqs,
                        bench::run_offline(executor, uncached, requests, true, "no-prefix-cache"));
      },
      workload);
}

} // namespace

int bench_command(int argc, char **argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "decode"))
    return bench_decode_command(argc - 1, argv + 1);
  if (std::strcmp(argv[1], "serve") != 0 && std::strcmp(argv[1], "offline") != 0) {
    std::fprintf(stderr, "llmrun bench: unknown benchmark '%s'\n%s", argv[1], kUsage);
    return 2;
  }
  const Options options = parse_options(argc, argv);
  return options.mode == "serve" ? serve(options, argc, argv) : offline(options, argc, argv);
}

} // namespace llmrun
