// llmrun bench serve | offline: the benchmarks behind every performance
// figure of the project (docs/benchmarks.md), each with a naive baseline
// measured in the same run so the report is a ratio side by side.
//   serve    an OpenAI-compatible server over HTTP, as `vllm bench serve`
//   offline  the engine in-process, as nano-vllm's bench.py
#include "cli/command_line.h"
#include "commands.h"
#include "options.h"

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
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmrun {
namespace {

namespace bench = llmserve::bench;
namespace cli = llmserve::cli;

struct Options {
  std::vector<std::string> command_line; // for the result file
  // Workload.
  std::string dataset = "random";
  int32_t num_prompts = 0;
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
  llmserve::ServeOptions model;
  int32_t num_kv_blocks = 0; // 0: as many as kv_cache_gb holds
  double kv_cache_gb = 2.0;
  bool prefix_caching = true;
  // Report.
  std::string baseline;
  bench::Slo slo;
  std::string plot;
  std::vector<int32_t> concurrencies = {1, 4, 16, 32, 64};
  std::string result_file;
};

// Both modes' workload options; their defaults, which differ, are set in `o`.
void add_workload_options(CLI::App &command, Options &o) {
  auto add = [&](const std::string &name, auto &value, const std::string &help) {
    return command.add_option(name, value, help)->capture_default_str()->group("Workload");
  };
  cli::one_of(add("--dataset", o.dataset, "random token ids, SGLang's shared prefixes or a file"),
              {"random", "shared-prefix", "jsonl"});
  cli::integer_in(add("--num-prompts", o.num_prompts, "random and jsonl")->type_name("N"), 1,
                  INT32_MAX);
  add("--random-input-len", o.input_len, "prompt tokens")->type_name("N|MIN:MAX");
  add("--random-output-len", o.output_len, "output tokens")->type_name("N|MIN:MAX");
  cli::number(add("--random-range-ratio", o.range_ratio, "N means [N(1-R), N(1+R)]")
                  ->type_name("R"));
  auto shared_prefix = [&](const std::string &name, int32_t &value, const std::string &help) {
    cli::integer_in(add(name, value, "shared-prefix: " + help)->type_name("N"), 1, INT32_MAX);
  };
  shared_prefix("--gsp-num-groups", o.shared_prefix.num_groups, "groups of prompts");
  shared_prefix("--gsp-prompts-per-group", o.shared_prefix.prompts_per_group,
                "prompts sharing a system prompt");
  shared_prefix("--gsp-system-prompt-len", o.shared_prefix.system_prompt_len,
                "tokens of the system prompt");
  shared_prefix("--gsp-question-len", o.shared_prefix.question_len,
                "tokens of the question after it");
  shared_prefix("--gsp-output-len", o.shared_prefix.output_len, "output tokens");
  add("--dataset-path", o.dataset_path, "jsonl: {\"prompt\": ..., \"output_len\": N} per line")
      ->type_name("FILE");
  cli::integer_in(add("--jsonl-output-len", o.jsonl_output_len,
                      "jsonl: output tokens where a line has none")
                      ->type_name("N"),
                  1, INT32_MAX);
  add("--tokenizer", o.tokenizer,
      "tokenizer.json or a directory holding it\n(offline: the bundle's by default)")
      ->type_name("PATH");
  cli::integer_in(add("--seed", o.seed, "seed of the random draws")->type_name("N"), 0, INT64_MAX);
}

// Both modes' report options; `baselines` are the baselines the mode offers.
void add_report_options(CLI::App &command, Options &o,
                        const std::vector<std::string> &baselines) {
  cli::one_of(command
                  .add_option("--baseline", o.baseline,
                              "also run a baseline on the same workload: one\n"
                              "request at a time (sequential) or, offline,\n"
                              "without the prefix cache (no-prefix-cache) or\n"
                              "without overlapped scheduling (no-overlap)")
                  ->group("Report"),
              baselines);
  command
      .add_option_function<std::vector<std::string>>(
          "--goodput",
          [&o](const std::vector<std::string> &specs) {
            for (const std::string &spec : specs)
              bench::parse_slo(spec, o.slo);
          },
          "SLOs for goodput: ttft:MS [tpot:MS e2el:MS]")
      ->type_name("METRIC:MS")
      ->group("Report");
  command.add_option("--plot", o.plot, "sweep --concurrencies and draw throughput")
      ->type_name("FILE")
      ->group("Report");
  cli::integer_in(command.add_option("--concurrencies", o.concurrencies, "the sweep")
                      ->type_name("LIST")
                      ->delimiter(',')
                      ->allow_extra_args(false)
                      ->capture_default_str()
                      ->group("Report"),
                  1, 1 << 20);
  command.add_option("--result-file", o.result_file, "the runs and their requests in JSON")
      ->type_name("FILE")
      ->group("Report");
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
  // jsonl, the one left
  if (o.dataset_path.empty())
    throw std::invalid_argument("--dataset jsonl needs --dataset-path");
  if (!tokenizer)
    throw std::invalid_argument("--dataset jsonl needs --tokenizer to count prompt tokens");
  return bench::jsonl_workload(o.dataset_path, o.num_prompts, o.jsonl_output_len, *tokenizer);
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
int report(const Options &o, int32_t single_concurrency,
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
                             {"command", o.command_line},
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

int serve(const Options &o) {
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
      o, o.arrivals.max_concurrency,
      [&](int32_t c) { return measure(client, "serve", c); },
      [&] { return measure(baseline_client, "sequential", 1); }, workload);
}

int offline(const Options &o) {
  const std::string &bundle_dir = o.model.bundle_dir;
  const llmserve::Manifest manifest = llmserve::Bundle::load_manifest(bundle_dir);
  if (!manifest.model || !manifest.kv_cache)
    throw std::invalid_argument(bundle_dir + ": manifest.json has no model or kv_cache section; "
                                "it is not a model bundle");
  const llmserve::ModelConfig &model = *manifest.model;
  // Random prompts are token ids in-process; only a prompt file needs text
  // made into tokens, with the bundle's tokenizer unless told otherwise.
  std::optional<llmserve::Tokenizer> tokenizer;
  if (o.dataset == "jsonl")
    tokenizer = llmserve::Tokenizer::from_file(o.tokenizer.empty() ? bundle_dir : o.tokenizer);
  const std::vector<bench::BenchRequest> requests =
      make_workload(o, tokenizer ? &*tokenizer : nullptr, static_cast<int32_t>(model.vocab_size));

  llmserve::EngineConfig config;
  config.max_num_seqs = o.model.max_num_seqs;
  config.max_num_batched_tokens = o.model.max_num_batched_tokens;
  config.num_kv_blocks = o.num_kv_blocks;
  config.enable_prefix_caching = o.prefix_caching;
  config.overlap_scheduling = o.model.overlap_scheduling;
  config.decode_only_steps = o.model.decode_only_steps;
  config.vocab_size = static_cast<int32_t>(model.vocab_size);
  for (int64_t id : model.eos_token_ids)
    config.eos_token_ids.push_back(static_cast<int32_t>(id));
  if (o.model.max_model_len > model.max_position_embeddings)
    throw std::invalid_argument("--max-model-len " + std::to_string(o.model.max_model_len) +
                                " exceeds the model's max_position_embeddings (" +
                                std::to_string(model.max_position_embeddings) + ")");
  config.max_model_len = o.model.max_model_len > 0
                             ? o.model.max_model_len
                             : static_cast<int32_t>(model.max_position_embeddings);
  config.kv_cache_bytes = static_cast<int64_t>(o.kv_cache_gb * (1 << 30));

  // The CUDA executor's step memory must hold the sweep's largest batch.
  llmserve::EngineConfig largest = config;
  for (int32_t c : o.concurrencies)
    largest.max_num_seqs = std::max(largest.max_num_seqs, c);
  largest.max_num_batched_tokens = std::max(largest.max_num_batched_tokens, largest.max_num_seqs);
  llmserve::ModelExecutor loaded = llmserve::load_model_executor(o.model, manifest, largest);
  llmserve::Executor &executor = *loaded.executor;
  std::fprintf(stderr, "device: %s\n", loaded.description.c_str());
  nlohmann::json workload = workload_json(o, requests);
  workload["bundle"] = bundle_dir;
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
    const double steps = std::max<double>(1.0, static_cast<double>(r.steps));
    m.extra = {{"Peak KV cache usage (%)", 100 * r.peak_kv_usage},
               {"Prefix cache hit rate (%)", 100 * hit_rate},
               {"Process CPU time (s)", r.cpu_s},
               {"Output tokens per CPU second", r.cpu_s > 0 ? m.summary.total_output_tokens / r.cpu_s : 0.0},
               {"Engine steps", static_cast<double>(r.steps)},
               {"Mean host time before execute (us)", 1e6 * r.schedule_s / steps},
               {"Mean execute time (ms)", 1e3 * r.execute_s / steps},
               {"Mean host time after execute (us)", 1e6 * r.postprocess_s / steps},
               {"Executor idle between steps (% of wall)",
                r.run.duration_s > 0 ? 100 * r.idle_s / r.run.duration_s : 0.0}};
    return m;
  };
  // Warm-up: one request first, so the first measured run does not pay for
  // faulting in the mapped weights and the kernels.
  bench::run_offline(executor, config, {requests.front()}, true, "warm-up");
  return report(
      o, config.max_num_seqs,
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
        if (o.baseline == "no-overlap") {
          llmserve::EngineConfig serial = config;
          serial.overlap_scheduling = false;
          return measured("no-overlap", config.max_num_seqs,
                          bench::run_offline(executor, serial, requests, true, "no-overlap"));
        }
        llmserve::EngineConfig uncached = config;
        uncached.enable_prefix_caching = false;
        return measured("no-prefix-cache", config.max_num_seqs,
                        bench::run_offline(executor, uncached, requests, true, "no-prefix-cache"));
      },
      workload);
}

} // namespace

Command add_bench_serve_command(CLI::App &bench, const std::vector<std::string> &command_line) {
  auto o = std::make_shared<Options>();
  o->command_line = command_line;
  o->num_prompts = 100;
  o->input_len = "1024";
  o->output_len = "128";
  CLI::App *command = bench.add_subcommand(
      "serve", "an OpenAI-compatible server over HTTP, as `vllm bench serve`");
  add_workload_options(*command, *o);
  auto add = [&](const std::string &name, auto &value, const std::string &help) {
    return command->add_option(name, value, help)->group("Server");
  };
  add("--url", o->client.url, "the server")->type_name("URL")->capture_default_str();
  add("--endpoint", o->client.endpoint, "/v1/completions or /v1/chat/completions")
      ->type_name("PATH")
      ->capture_default_str();
  add("--model", o->client.model, "the model's name (default: the server's first)")
      ->type_name("NAME");
  cli::number(add("--request-rate", o->arrivals.request_rate, "requests per second, or inf")
                  ->type_name("R")
                  ->capture_default_str());
  cli::number(add("--burstiness", o->arrivals.burstiness, "1: a Poisson process")
                  ->type_name("B")
                  ->capture_default_str());
  cli::integer_in(add("--max-concurrency", o->arrivals.max_concurrency,
                      "requests in flight at most (default: unlimited)")
                      ->type_name("N"),
                  0, INT32_MAX);
  command->add_flag("--ignore-eos", o->client.ignore_eos,
                    "ask for outputs of the requested lengths")
      ->group("Server");
  cli::positive(add("--timeout", o->client.read_timeout_s, "longest silence from the server")
                    ->type_name("S")
                    ->capture_default_str());
  add("--baseline-url", o->baseline_url, "server for the baseline (default: --url)")
      ->type_name("URL");
  add_report_options(*command, *o, {"sequential"});
  return {command, [o] { return serve(*o); }};
}

Command add_bench_offline_command(CLI::App &bench, const std::vector<std::string> &command_line) {
  auto o = std::make_shared<Options>();
  o->command_line = command_line;
  o->num_prompts = 256;
  o->input_len = o->output_len = "100:1024";
  CLI::App *command =
      bench.add_subcommand("offline", "the engine in-process, as nano-vllm's bench.py");
  add_workload_options(*command, *o);
  add_step_options(*command, o->model);
  cli::positive(command->add_option("--kv-cache-gb", o->kv_cache_gb, "KV cache GiB")
                    ->type_name("G")
                    ->capture_default_str()
                    ->group("Engine"));
  cli::integer_in(command
                      ->add_option("--num-kv-blocks", o->num_kv_blocks,
                                   "KV cache blocks (instead of --kv-cache-gb)")
                      ->type_name("N")
                      ->group("Engine"),
                  1, INT32_MAX);
  command->add_flag_callback("--no-prefix-cache", [o] { o->prefix_caching = false; },
                             "turn the prefix cache off")
      ->group("Engine");
  add_report_options(*command, *o, {"sequential", "no-prefix-cache", "no-overlap"});
  command->footer("Requests always ignore EOS: output lengths are the workload's.");
  return {command, [o] { return offline(*o); }};
}

} // namespace llmrun
