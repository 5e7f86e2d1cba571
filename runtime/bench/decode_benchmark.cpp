#include "bench/decode_benchmark.h"

#include "grammar/matcher.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <iterator>
#include <regex>
#include <set>
#include <stdexcept>
#include <vector>

namespace llmserve::bench {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

int32_t decode_step_blocks(int32_t batch, int32_t context, int32_t block_size) {
  return batch * ((context + block_size - 1) / block_size);
}

StepBatch decode_step(int32_t batch, int32_t context, int32_t block_size, int32_t vocab_size,
                      uint64_t seed) {
  if (batch < 1 || context < 1 || block_size < 1 || vocab_size < 1)
    throw std::invalid_argument("decode step: batch " + std::to_string(batch) + ", context " +
                                std::to_string(context) + " must be positive");
  const int32_t per_seq = (context + block_size - 1) / block_size;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> token(0, vocab_size - 1);
  StepBatch b;
  b.num_tokens = b.num_seqs = batch;
  b.max_blocks_per_seq = per_seq;
  const int32_t position = context - 1;
  for (int32_t s = 0; s < batch; ++s) {
    b.token_ids.push_back(token(rng));
    b.positions.push_back(position);
    b.query_start.push_back(s);
    b.context_len.push_back(context);
    for (int32_t i = 0; i < per_seq; ++i)
      b.block_table.push_back(s * per_seq + i);
    b.slot_mapping.push_back((s * per_seq + position / block_size) * block_size +
                             position % block_size);
    b.logits_rows.push_back(s);
    b.temperature.push_back(0.0f);
    b.top_p.push_back(1.0f);
    b.top_k.push_back(0);
    b.min_p.push_back(0.0f);
    b.seed.push_back(0);
    b.presence_penalty.push_back(0.0f);
    b.frequency_penalty.push_back(0.0f);
    b.repetition_penalty.push_back(1.0f);
    b.penalty_start.push_back(0);
    b.mask_index.push_back(-1);
    b.num_logprobs.push_back(-1);
  }
  b.query_start.push_back(batch);
  b.penalty_start.push_back(0);
  return b;
}

StructuredStepTiming time_structured_steps(Executor &executor, StepBatch step,
                                           std::shared_ptr<const grammar::CompiledGrammar> grammar,
                                           int warmup, int steps) {
  const size_t words = grammar->vocabulary().mask_words();
  std::vector<grammar::Matcher> matchers(step.num_seqs, grammar::Matcher(grammar));
  step.token_mask.assign(words * matchers.size(), 0);
  for (int32_t s = 0; s < step.num_seqs; ++s)
    step.mask_index[s] = s;
  StepOutput out;
  double mask_s = 0, accept_s = 0, total_s = 0;
  for (int i = 0; i < warmup + steps; ++i) {
    const bool timed = i >= warmup;
    const auto start = std::chrono::steady_clock::now();
    for (size_t s = 0; s < matchers.size(); ++s) {
      auto *row = reinterpret_cast<uint32_t *>(step.token_mask.data() + s * words);
      if (matchers[s].fill_next_token_mask(row) == 0) {
        matchers[s] = grammar::Matcher(grammar); // a dead end: start over
        matchers[s].fill_next_token_mask(row);
      }
    }
    const double masks = seconds_since(start);
    executor.execute(step, out);
    const auto accepts = std::chrono::steady_clock::now();
    for (size_t s = 0; s < matchers.size(); ++s)
      if (!matchers[s].accept_token(out.next_tokens[s]) || matchers[s].is_finished())
        matchers[s] = grammar::Matcher(grammar);
    if (timed) {
      mask_s += masks;
      accept_s += seconds_since(accepts);
      total_s += seconds_since(start);
    }
  }
  const double per_seq = 1e6 / (std::max(steps, 1) * double(matchers.size()));
  return {total_s * 1e3 / std::max(steps, 1), mask_s * per_seq, accept_s * per_seq};
}

double time_steps(Executor &executor, const StepBatch &step, int warmup, int steps) {
  StepOutput out;
  for (int i = 0; i < warmup; ++i)
    executor.execute(step, out);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i)
    executor.execute(step, out);
  return seconds_since(start) * 1e3 / std::max(steps, 1);
}

namespace {

// The weight buffers that only embedding dispatches read: a step reads one
// row of them per token.
std::set<int> embedding_tables(const Manifest &manifest) {
  std::set<int> tables, others;
  for (const EntryPoint &entry : manifest.entry_points)
    for (const Dispatch &d : entry.dispatches) {
      static const std::string kSuffix = "_embedding";
      const std::string &name = manifest.kernels[d.kernel].name;
      const bool embedding = name.size() >= kSuffix.size() &&
                             name.compare(name.size() - kSuffix.size(), kSuffix.size(),
                                          kSuffix) == 0;
      for (int id : d.bindings)
        if (manifest.buffers[id].kind == BufferKind::Weight)
          (embedding ? tables : others).insert(id);
    }
  std::set<int> only;
  std::set_difference(tables.begin(), tables.end(), others.begin(), others.end(),
                      std::inserter(only, only.end()));
  return only;
}

} // namespace

int64_t weight_bytes(const Manifest &manifest) {
  int64_t bytes = 0;
  for (size_t id = 0; id < manifest.buffers.size(); ++id)
    if (manifest.buffers[id].kind == BufferKind::Weight)
      bytes += static_cast<int64_t>(manifest.buffers[id].byte_size({}, static_cast<int>(id)));
  return bytes;
}

int64_t decode_step_bytes(const Manifest &manifest, int32_t batch, int32_t context) {
  // A stacked weight (a sparse layer's experts) is read for the experts the
  // step's tokens choose: E (1 - (1 - k / E)^batch) of its E on average when
  // each token picks k distinct experts uniformly; k at batch 1.
  double expert_share = 1;
  if (manifest.model && manifest.model->num_experts > 0) {
    const double e = static_cast<double>(manifest.model->num_experts);
    const double k = static_cast<double>(manifest.model->num_experts_per_tok);
    expert_share = 1 - std::pow(1 - k / e, batch);
  }
  const std::set<int> tables = embedding_tables(manifest);
  int64_t bytes = 0;
  for (size_t id = 0; id < manifest.buffers.size(); ++id) {
    const Buffer &b = manifest.buffers[id];
    if (b.kind != BufferKind::Weight)
      continue;
    const auto size = static_cast<double>(b.byte_size({}, static_cast<int>(id)));
    if (tables.count(static_cast<int>(id))) {
      const double rows = static_cast<double>(b.shape.front().evaluate({}));
      bytes += static_cast<int64_t>(size * std::min(1.0, batch / rows));
    } else {
      bytes += static_cast<int64_t>(b.stacked ? size * expert_share : size);
    }
  }
  if (manifest.kv_cache)
    bytes += int64_t{batch} * context * manifest.kv_cache->bytes_per_token;
  return bytes;
}

double host_copy_bandwidth(size_t bytes) {
  std::vector<char> from(bytes, 1), to(bytes, 0);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    best = std::max(best, 2.0 * static_cast<double>(bytes) / seconds_since(start));
  }
  const volatile char last = to.back(); // the copies are used
  (void)last;
  return best;
}

std::string dispatch_label(const Manifest &manifest, const Dispatch &dispatch) {
  static const std::regex kNumberPrefix("^d[0-9]+_");
  static const std::regex kLayerIndex("\\.[0-9]+\\.");
  std::string label = std::regex_replace(manifest.kernels[dispatch.kernel].name, kNumberPrefix, "");
  for (int id : dispatch.bindings) {
    const Buffer &b = manifest.buffers[id];
    if (b.kind == BufferKind::Weight) {
      label += " " + std::regex_replace(b.name.empty() ? b.tensor : b.name, kLayerIndex, ".*.");
      break;
    }
  }
  return label;
}

} // namespace llmserve::bench
