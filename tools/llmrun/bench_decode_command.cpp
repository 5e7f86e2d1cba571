// llmrun bench decode: decode step time at given batch sizes and context
// length, against the memory-bandwidth floor measured in the same run
// (docs/benchmarks.md); --profile adds each op's share of the step.
#include "cli/command_line.h"
#include "commands.h"
#include "options.h"

#include "bench/decode_benchmark.h"
#include "core/sampling_params.h"
#include "cpu/cpu_executor.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/vocabulary.h"
#include "cuda/cuda_executor.h"
#include "server/model_executor.h"
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmrun {
namespace {

namespace bench = llmserve::bench;
namespace cli = llmserve::cli;

struct Options {
  llmserve::ServeOptions model;
  std::vector<int32_t> batches = {1, 64};
  int32_t context = 512;
  int steps = 50;
  bool profile = false;
  std::string json_schema; // a file: time structured output's share of the step
  std::string tokenizer;   // its vocabulary; default: the bundle's tokenizer.json
  float temperature = 0.0f; // every sequence's sampling (greedy by default)
  float top_p = 1.0f;
  int32_t top_k = 0;
  int32_t logprobs = -1; // every sequence's top log-probs asked (-1: none)
};

// The sampling of every sequence of the timed steps, checked.
llmserve::SamplingParams sampling(const Options &o) {
  llmserve::SamplingParams params;
  params.temperature = o.temperature;
  params.top_p = o.top_p;
  params.top_k = o.top_k;
  params.logprobs = o.logprobs;
  params.validate();
  return params;
}

// `step`'s sequences sampling by `params`, each with a seed of its own.
void set_sampling(const llmserve::SamplingParams &params, llmserve::StepBatch &step) {
  for (int32_t s = 0; s < step.num_seqs; ++s) {
    step.temperature[s] = params.temperature;
    step.top_p[s] = params.top_p;
    step.top_k[s] = params.top_k;
    step.num_logprobs[s] = params.logprobs;
    step.seed[s] = s + 1;
  }
}

// The schema compiled against the tokenizer's vocabulary, padded to the
// model's; prints how long that took.
std::shared_ptr<const llmserve::grammar::CompiledGrammar>
schema_grammar(const Options &o, int64_t vocab_size) {
  const std::string path = o.tokenizer.empty() ? o.model.bundle_dir + "/tokenizer.json" : o.tokenizer;
  const llmserve::Tokenizer tokenizer = llmserve::Tokenizer::from_file(path);
  std::vector<std::string> bytes(static_cast<size_t>(vocab_size));
  for (size_t id = 0; id < std::min(bytes.size(), tokenizer.vocab_size()); ++id)
    bytes[id] = tokenizer.token_bytes(static_cast<int32_t>(id));
  auto vocabulary = std::make_shared<const llmserve::grammar::Vocabulary>(
      std::move(bytes), tokenizer.eos_token_ids());
  const auto start = std::chrono::steady_clock::now();
  std::ifstream schema(o.json_schema);
  auto grammar = llmserve::grammar::compile(
      llmserve::grammar::Grammar::parse(
          llmserve::grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(schema))),
      vocabulary);
  std::printf("structured output: %s compiled against %s (%zu tokens) in %.1f ms\n",
              o.json_schema.c_str(), path.c_str(), tokenizer.vocab_size(),
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
  return grammar;
}

constexpr size_t kCopyBytes = size_t{1} << 30;
constexpr int kWarmupSteps = 5;
constexpr size_t kProfileRows = 14;

// `how`: what the total counts.
void print_profile(const llmserve::Manifest &manifest, const std::vector<float> &ms,
                   const char *how) {
  const std::vector<llmserve::Dispatch> &dispatches = manifest.find_entry("step")->dispatches;
  std::map<std::string, std::pair<double, int>> by_label;
  double total = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    auto &[sum, count] = by_label[bench::dispatch_label(manifest, dispatches[i])];
    sum += ms[i];
    ++count;
    total += ms[i];
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> rows(by_label.begin(),
                                                                   by_label.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto &a, const auto &b) { return a.second.first > b.second.first; });
  std::printf("  %-52s %9s %6s %6s\n", "op (weight)", "ms", "share", "count");
  for (size_t i = 0; i < std::min(rows.size(), kProfileRows); ++i)
    std::printf("  %-52s %9.3f %5.1f%% %6d\n", rows[i].first.c_str(), rows[i].second.first,
                100 * rows[i].second.first / total, rows[i].second.second);
  std::printf("  %-52s %9.3f (%s)\n", "all dispatches", total, how);
}

int bench_decode(const Options &o) {
  const llmserve::SamplingParams params = sampling(o);
  const llmserve::Manifest manifest = llmserve::Bundle::load_manifest(o.model.bundle_dir);
  if (!manifest.model || !manifest.kv_cache || !manifest.find_entry("step"))
    throw std::invalid_argument(o.model.bundle_dir + ": not a model bundle (no step entry point)");
  if (o.context > manifest.model->max_position_embeddings)
    throw std::invalid_argument("--context " + std::to_string(o.context) +
                                " exceeds the model's max_position_embeddings (" +
                                std::to_string(manifest.model->max_position_embeddings) + ")");
  const int32_t largest = *std::max_element(o.batches.begin(), o.batches.end());
  llmserve::EngineConfig limits;
  limits.max_num_seqs = limits.max_num_batched_tokens = largest;
  limits.max_model_len = o.context;
  llmserve::ModelExecutor loaded = llmserve::load_model_executor(o.model, manifest, limits);
  llmserve::Executor &executor = *loaded.executor;
  auto *gpu = dynamic_cast<llmserve::cuda::CudaExecutor *>(&executor);
  auto *cpu = dynamic_cast<llmserve::CpuExecutor *>(&executor);
  const int32_t block_size = static_cast<int32_t>(manifest.kv_cache->block_size);
  executor.allocate_kv_cache(bench::decode_step_blocks(largest, o.context, block_size));

  const double bandwidth =
      gpu ? gpu->copy_bandwidth(kCopyBytes) : bench::host_copy_bandwidth(kCopyBytes / 4);
  std::printf("device: %s\n", loaded.description.c_str());
  std::printf("weights: %.3f GiB; KV cache: %s, %lld bytes per token; CUDA graphs: %s\n",
              bench::weight_bytes(manifest) / double(1 << 30),
              llmserve::dtype_name(manifest.kv_cache->dtype),
              static_cast<long long>(manifest.kv_cache->bytes_per_token),
              gpu && o.model.cuda_graphs ? "on" : "off");
  std::printf("copy bandwidth: %.1f GB/s (%s, bytes read + written)\n", bandwidth / 1e9,
              gpu ? "device to device" : "host memcpy");
  std::shared_ptr<const llmserve::grammar::CompiledGrammar> grammar;
  if (!o.json_schema.empty())
    grammar = schema_grammar(o, manifest.model->vocab_size);
  std::printf("\n%6s %8s %10s %10s %10s %11s\n", "batch", "context", "step ms", "tokens/s",
              "floor ms", "floor/step");
  for (int32_t batch : o.batches) {
    llmserve::StepBatch step = bench::decode_step(
        batch, o.context, block_size, static_cast<int32_t>(manifest.model->vocab_size), batch);
    set_sampling(params, step);
    bench::time_steps(executor, step, kWarmupSteps, 0); // the graph's capture among them
    if (gpu)
      gpu->reset_host_timing();
    const double ms = bench::time_steps(executor, step, 0, o.steps);
    const double floor_ms = bench::decode_step_bytes(manifest, batch, o.context) / bandwidth * 1e3;
    std::printf("%6d %8d %10.3f %10.1f %10.3f %10.1f%%\n", batch, o.context, ms,
                batch * 1e3 / ms, floor_ms, 100 * floor_ms / ms);
    if (o.profile && gpu) {
      const llmserve::cuda::CudaExecutor::HostTiming &t = gpu->host_timing();
      const double steps = static_cast<double>(std::max<int64_t>(t.steps, 1));
      std::printf("  host per step: prepare %.1f us, enqueue %.1f us, wait %.3f ms, results "
                  "%.1f us (the GPU idles for prepare and results)\n",
                  1e6 * t.prepare_s / steps, 1e6 * t.enqueue_s / steps, 1e3 * t.wait_s / steps,
                  1e6 * t.results_s / steps);
      print_profile(manifest, gpu->profile_step(step), "uncaptured, kernels only");
    } else if (o.profile) {
      print_profile(manifest, cpu->profile_step(step), "each dispatch's wall time");
    }
    if (grammar) {
      const bench::StructuredStepTiming t =
          bench::time_structured_steps(executor, step, grammar, kWarmupSteps, o.steps);
      std::printf("%6s with the schema: %.3f ms per step (%+.1f%%); per sequence %.1f us "
                  "to fill its mask, %.1f us to accept its token\n",
                  "", t.step_ms, 100 * (t.step_ms - ms) / ms, t.mask_us_per_seq,
                  t.accept_us_per_seq);
    }
  }
  return 0;
}

} // namespace

Command add_bench_decode_command(CLI::App &bench) {
  auto o = std::make_shared<Options>();
  CLI::App *command = bench.add_subcommand(
      "decode", "decode step time at given batch sizes, against the memory-bandwidth floor");
  cli::integer_in(command->add_option("--batch", o->batches, "sequences per step")
                      ->type_name("LIST")
                      ->delimiter(',')
                      ->allow_extra_args(false)
                      ->capture_default_str(),
                  1, 4096);
  cli::integer_in(command->add_option("--context", o->context,
                                      "tokens of context per sequence")
                      ->type_name("N")
                      ->capture_default_str(),
                  1, 1 << 20);
  cli::integer_in(command->add_option("--steps", o->steps,
                                      "timed steps per batch size (after 5 warm-up)")
                      ->type_name("N")
                      ->capture_default_str(),
                  1, 1 << 20);
  command->add_flag("--profile", o->profile, "time every dispatch of one step, summed by op");
  command->add_option("--json-schema", o->json_schema,
                      "also time the steps with every sequence following this JSON schema "
                      "(masks filled, tokens accepted)")
      ->type_name("FILE")
      ->check(CLI::ExistingFile);
  command->add_option("--tokenizer", o->tokenizer,
                      "tokenizer.json whose vocabulary the schema is compiled against "
                      "(default: the bundle's)")
      ->type_name("FILE")
      ->check(CLI::ExistingFile);
  cli::number(command->add_option("--temperature", o->temperature,
                                  "every sequence's temperature (0 is greedy)")
                  ->type_name("T")
                  ->capture_default_str());
  cli::number(command->add_option("--top-p", o->top_p, "every sequence's top_p")
                  ->type_name("P")
                  ->capture_default_str());
  cli::integer_in(command->add_option("--top-k", o->top_k, "every sequence's top_k (0 is off)")
                      ->type_name("K")
                      ->capture_default_str(),
                  INT32_MIN, INT32_MAX);
  cli::integer_in(command->add_option("--logprobs", o->logprobs,
                                      "every sequence's top log-probabilities (-1 is none)")
                      ->type_name("N")
                      ->capture_default_str(),
                  INT32_MIN, INT32_MAX);
  add_engine_options(*command, o->model);
  command->footer("Times decode-only steps (every sequence one token, greedy unless\n"
                  "--temperature is set) and prints each next to the floor:\n"
                  "(weight bytes + KV bytes read) / copy bandwidth,\n"
                  "where an embedding table counts its tokens' rows and a mixture of\n"
                  "experts the experts its tokens choose on average.");
  return {command, [o] { return bench_decode(*o); }};
}

} // namespace llmrun
