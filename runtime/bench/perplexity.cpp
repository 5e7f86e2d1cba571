#include "bench/perplexity.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace llmserve::bench {

namespace {

// One step that scores `window`: token t is sequence t, a single query token
// at position t whose context is the window's first t + 1 tokens, all in one
// block table, so the step computes a causal prefill and returns every row.
StepBatch window_step(const std::vector<int32_t> &window, int32_t block_size) {
  const auto n = static_cast<int32_t>(window.size());
  const int32_t blocks = (n + block_size - 1) / block_size;
  StepBatch batch;
  resize_step_batch(batch, n, n, blocks);
  for (int32_t t = 0; t < n; ++t) {
    batch.token_ids[t] = window[t];
    batch.positions[t] = t;
    batch.slot_mapping[t] = t;
    batch.query_start[t + 1] = t + 1;
    batch.context_len[t] = t + 1;
    batch.logits_rows[t] = t;
    for (int32_t b = 0; b < blocks; ++b)
      batch.block_table[static_cast<size_t>(t) * blocks + b] = b;
  }
  std::fill(batch.top_p.begin(), batch.top_p.end(), 1.0f);
  std::fill(batch.repetition_penalty.begin(), batch.repetition_penalty.end(), 1.0f);
  std::fill(batch.mask_index.begin(), batch.mask_index.end(), -1);
  std::fill(batch.num_logprobs.begin(), batch.num_logprobs.end(), -1);
  return batch;
}

// log-softmax of `row` in double.
void log_softmax(const float *row, int64_t vocab, std::vector<double> &out) {
  out.resize(static_cast<size_t>(vocab));
  const double top = *std::max_element(row, row + vocab);
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v)
    sum += std::exp(row[v] - top);
  const double log_sum = top + std::log(sum);
  for (int64_t v = 0; v < vocab; ++v)
    out[v] = row[v] - log_sum;
}

int64_t vocab_of(const ScoredModel &model) {
  if (!model.manifest.find_entry("logits"))
    throw std::invalid_argument(model.dir + ": no 'logits' entry point (import the model "
                                            "with llmc import --logits-entry)");
  return model.manifest.model->vocab_size;
}

} // namespace

PerplexityResult measure_perplexity(ScoredModel &model, ScoredModel *baseline,
                                    const std::vector<int32_t> &tokens, int32_t context,
                                    int32_t bos) {
  const int64_t vocab = vocab_of(model);
  if (baseline && vocab_of(*baseline) != vocab)
    throw std::invalid_argument("the baseline's vocabulary has " +
                                std::to_string(vocab_of(*baseline)) +
                                " tokens, the model's " + std::to_string(vocab));
  const int64_t max_positions = model.manifest.model->max_position_embeddings;
  if (context < 2 || (max_positions > 0 && context > max_positions))
    throw std::invalid_argument("context " + std::to_string(context) +
                                " is not in [2, " + std::to_string(max_positions) + "]");
  if (tokens.size() < 2)
    throw std::invalid_argument("the text is " + std::to_string(tokens.size()) +
                                " token(s); scoring needs at least 2");

  std::vector<ScoredModel *> models = {&model};
  if (baseline)
    models.push_back(baseline);
  for (ScoredModel *m : models) {
    const int32_t block_size = m->executor.kv_cache_spec().block_size;
    m->executor.allocate_kv_cache((context + block_size - 1) / block_size);
  }

  double nll = 0, baseline_nll = 0, kl = 0;
  int64_t scored = 0, agree = 0;
  std::vector<double> p, q;
  const size_t text_per_window = static_cast<size_t>(bos >= 0 ? context - 1 : context);
  for (size_t begin = 0; begin < tokens.size(); begin += text_per_window) {
    std::vector<int32_t> window;
    if (bos >= 0)
      window.push_back(bos);
    const size_t end = std::min(tokens.size(), begin + text_per_window);
    window.insert(window.end(), tokens.begin() + begin, tokens.begin() + end);
    if (window.size() < 2)
      break;
    const std::vector<float> ours =
        model.logits(window_step(window, model.executor.kv_cache_spec().block_size));
    std::vector<float> theirs;
    if (baseline)
      theirs = baseline->logits(window_step(window, baseline->executor.kv_cache_spec().block_size));
    for (size_t t = 0; t + 1 < window.size(); ++t) {
      const int32_t next = window[t + 1];
      log_softmax(ours.data() + t * vocab, vocab, q);
      nll -= q[next];
      ++scored;
      if (!baseline)
        continue;
      log_softmax(theirs.data() + t * vocab, vocab, p);
      baseline_nll -= p[next];
      double divergence = 0;
      for (int64_t v = 0; v < vocab; ++v)
        divergence += std::exp(p[v]) * (p[v] - q[v]);
      kl += divergence;
      agree += std::max_element(p.begin(), p.end()) - p.begin() ==
               std::max_element(q.begin(), q.end()) - q.begin();
    }
  }
  PerplexityResult result;
  result.tokens = scored;
  result.perplexity = std::exp(nll / static_cast<double>(scored));
  if (baseline) {
    result.mean_kl = kl / static_cast<double>(scored);
    result.baseline_perplexity = std::exp(baseline_nll / static_cast<double>(scored));
    result.top1_agreement = static_cast<double>(agree) / static_cast<double>(scored);
  }
  return result;
}

} // namespace llmserve::bench
