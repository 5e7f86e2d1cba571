// llmrun bench ppl: the perplexity of a bundle on a text and, against a
// baseline bundle of the same model (the unquantized one), the mean KL
// divergence of the next-token distributions (docs/benchmarks.md). Each
// bundle runs on the device its target names: an sm_90 bundle on the GPU.
#include "cli/command_line.h"
#include "commands.h"

#include "bench/perplexity.h"
#include "bundle/bundle.h"
#include "bundle/entry_inputs.h"
#include "cpu/cpu_executor.h"
#include "cuda/cuda_executor.h"
#include "server/model_executor.h"
#include "tokenizer/tokenizer.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmrun {
namespace {

namespace bench = llmserve::bench;
namespace cli = llmserve::cli;

struct Options {
  std::string bundle_dir, baseline_dir, text_path;
  int32_t context = 256;
  int64_t max_tokens = 0; // 0: the whole text
  int threads = 0;
};

std::string read_text(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A bundle on the device its target names, scored through its `logits`
// entry point: the CPU executor's, or on the GPU the entry point run as
// llmrun call runs one (uncaptured, its buffers allocated for the call).
class LoadedBundle {
public:
  LoadedBundle(const std::string &dir, int threads) : dir_(dir) {
    llmserve::Bundle bundle(dir);
    manifest_ = bundle.manifest();
    if (llmserve::select_device(dir, manifest_.target, "") == llmserve::Device::Cpu) {
      auto cpu = std::make_unique<llmserve::CpuExecutor>(std::move(bundle), threads);
      llmserve::CpuExecutor *executor = cpu.get();
      logits_ = [executor](const llmserve::StepBatch &batch) { return executor->logits(batch); };
      executor_ = std::move(cpu);
      return;
    }
    llmserve::cuda::CudaExecutorOptions options;
    options.limits = {1, 1, 1}; // run_entry allocates each call's buffers
    options.cuda_graphs = false;
    auto gpu = std::make_unique<llmserve::cuda::CudaExecutor>(std::move(bundle), options);
    llmserve::cuda::CudaExecutor *executor = gpu.get();
    logits_ = [this, executor](const llmserve::StepBatch &batch) {
      const llmserve::EntryPoint *e = manifest_.find_entry("logits");
      std::vector<llmserve::HostTensor> results =
          executor->run_entry("logits", llmserve::step_symbols(batch, 0),
                              llmserve::step_argument_tensors(manifest_, *e, batch));
      if (results.empty() || results[0].dtype != llmserve::DType::F32)
        throw std::invalid_argument(dir_ + ": its logits entry point does not return f32");
      const auto *first = reinterpret_cast<const float *>(results[0].data.data());
      return std::vector<float>(first, first + results[0].data.size() / sizeof(float));
    };
    executor_ = std::move(gpu);
  }
  LoadedBundle(const LoadedBundle &) = delete;
  LoadedBundle &operator=(const LoadedBundle &) = delete;

  bench::ScoredModel scored() { return {dir_, manifest_, *executor_, logits_}; }
  const llmserve::Manifest &manifest() const { return manifest_; }

private:
  std::string dir_;
  llmserve::Manifest manifest_;
  std::unique_ptr<llmserve::Executor> executor_;
  std::function<std::vector<float>(const llmserve::StepBatch &)> logits_;
};

int bench_ppl(const Options &o) {
  LoadedBundle model(o.bundle_dir, o.threads);
  std::unique_ptr<LoadedBundle> baseline;
  if (!o.baseline_dir.empty())
    baseline = std::make_unique<LoadedBundle>(o.baseline_dir, o.threads);
  const llmserve::Tokenizer tokenizer =
      llmserve::Tokenizer::from_file(o.bundle_dir + "/tokenizer.json");
  std::vector<int32_t> tokens = tokenizer.encode(read_text(o.text_path), false);
  if (o.max_tokens > 0 && static_cast<int64_t>(tokens.size()) > o.max_tokens)
    tokens.resize(static_cast<size_t>(o.max_tokens));
  const auto bos = static_cast<int32_t>(model.manifest().model->bos_token_id);
  bench::ScoredModel scored = model.scored();
  std::optional<bench::ScoredModel> baseline_scored;
  if (baseline)
    baseline_scored.emplace(baseline->scored());
  const bench::PerplexityResult r = bench::measure_perplexity(
      scored, baseline_scored ? &*baseline_scored : nullptr, tokens, o.context, bos);
  std::printf("text: %s, %zu tokens, windows of %d positions%s\n", o.text_path.c_str(),
              tokens.size(), o.context, bos >= 0 ? " starting with BOS" : "");
  std::printf("%-12s %s\n", "model", o.bundle_dir.c_str());
  std::printf("%-12s %lld\n", "scored", static_cast<long long>(r.tokens));
  std::printf("%-12s %.4f\n", "perplexity", r.perplexity);
  if (baseline) {
    std::printf("%-12s %s\n", "baseline", o.baseline_dir.c_str());
    std::printf("%-12s %.4f\n", "baseline ppl", *r.baseline_perplexity);
    std::printf("%-12s %+.3f%%\n", "ppl change",
                100 * (r.perplexity / *r.baseline_perplexity - 1));
    std::printf("%-12s %.4g nats\n", "mean KL", *r.mean_kl);
    std::printf("%-12s %.2f%%\n", "same top-1", 100 * *r.top1_agreement);
  }
  return 0;
}

} // namespace

Command add_bench_ppl_command(CLI::App &bench) {
  auto o = std::make_shared<Options>();
  CLI::App *command = bench.add_subcommand(
      "ppl", "perplexity on a text, and KL divergence against a baseline bundle");
  command->add_option("bundle", o->bundle_dir,
                      "the compiled model, imported with llmc import --logits-entry")
      ->type_name("DIR")
      ->required();
  command->add_option("--text", o->text_path, "the text to score")
      ->type_name("FILE")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--baseline", o->baseline_dir,
                      "a bundle of the same model (e.g. unquantized) scored on the same "
                      "windows")
      ->type_name("DIR");
  cli::integer_in(command->add_option("--context", o->context,
                                      "positions per window, BOS included")
                      ->type_name("N")
                      ->capture_default_str(),
                  2, 1 << 20);
  cli::integer_in(command->add_option("--max-tokens", o->max_tokens,
                                      "score at most the text's first N tokens")
                      ->type_name("N"),
                  2, INT64_MAX);
  cli::integer_in(command->add_option("--threads", o->threads, "model threads (default: all)")
                      ->type_name("N"),
                  0, 4096);
  command->footer("The text is cut into windows; each token of a window after its first\n"
                  "position is predicted from the positions before it.");
  return {command, [o] { return bench_ppl(*o); }};
}

} // namespace llmrun
