// `llmrun bench ppl`: how well a model predicts a text, and how far a
// quantized model's next-token distributions are from its baseline's. The
// text is scored in windows through the bundles' `logits` entry point
// (llmc import --logits-entry): each window is one step of single-token
// sequences that share one block table, so token t attends to the window's
// tokens up to t as in a prefill, and every row's logits come back.
#ifndef LLMSERVE_BENCH_PERPLEXITY_H
#define LLMSERVE_BENCH_PERPLEXITY_H

#include "bundle/manifest.h"
#include "bundle/step_batch.h"
#include "core/executor.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace llmserve::bench {

// A bundle to score, on either executor: its directory and manifest, the
// executor that holds its KV cache, and what its `logits` entry point gives
// for a step ([S, V] f32, row s that of batch.logits_rows[s]).
struct ScoredModel {
  std::string dir;
  const Manifest &manifest;
  Executor &executor;
  std::function<std::vector<float>(const StepBatch &)> logits;
};

struct PerplexityResult {
  int64_t tokens = 0;       // predictions scored
  double perplexity = 0;    // exp(mean negative log-likelihood)
  // Against the baseline, when there is one: the mean KL divergence
  // KL(baseline || model) of the next-token distributions over the whole
  // vocabulary, the baseline's own perplexity, and how often both models'
  // most likely tokens agree.
  std::optional<double> mean_kl;
  std::optional<double> baseline_perplexity;
  std::optional<double> top1_agreement;
};

// Scores `tokens` in windows of at most `context` positions: each window is
// `bos` (when it is not negative) and then the next `context - 1` tokens (or
// `context` without `bos`), and every token of the window after its first
// position is predicted from the positions before it. `baseline`, when
// given, is scored on the same windows. Throws std::invalid_argument for a
// bundle without a `logits` entry point, models of different vocabularies,
// a context below 2 or longer than the model's, and fewer than 2 tokens.
PerplexityResult measure_perplexity(ScoredModel &model, ScoredModel *baseline,
                                    const std::vector<int32_t> &tokens, int32_t context,
                                    int32_t bos);

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_PERPLEXITY_H
