// llmrun bench ppl: the perplexity of a bundle on a text and, against a
// baseline bundle of the same model (the unquantized one), the mean KL
// divergence of the next-token distributions (docs/benchmarks.md).
#include "cli/command_line.h"
#include "commands.h"

#include "bench/perplexity.h"
#include "bundle/bundle.h"
#include "cpu/cpu_executor.h"
#include "tokenizer/tokenizer.h"

#include <cstdio>
#include <fstream>
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

std::unique_ptr<llmserve::CpuExecutor> load(const std::string &dir, int threads) {
  llmserve::Bundle bundle(dir);
  if (bundle.manifest().target != "cpu")
    throw std::invalid_argument(dir + ": a bundle for " + bundle.manifest().target +
                                "; bench ppl runs CPU bundles");
  return std::make_unique<llmserve::CpuExecutor>(std::move(bundle), threads);
}

int bench_ppl(const Options &o) {
  std::unique_ptr<llmserve::CpuExecutor> model = load(o.bundle_dir, o.threads);
  std::unique_ptr<llmserve::CpuExecutor> baseline;
  if (!o.baseline_dir.empty())
    baseline = load(o.baseline_dir, o.threads);
  const llmserve::Tokenizer tokenizer =
      llmserve::Tokenizer::from_file(o.bundle_dir + "/tokenizer.json");
  std::vector<int32_t> tokens = tokenizer.encode(read_text(o.text_path), false);
  if (o.max_tokens > 0 && static_cast<int64_t>(tokens.size()) > o.max_tokens)
    tokens.resize(static_cast<size_t>(o.max_tokens));
  const auto bos = static_cast<int32_t>(model->bundle().manifest().model->bos_token_id);
  const bench::PerplexityResult r =
      bench::measure_perplexity(*model, baseline.get(), tokens, o.context, bos);
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
