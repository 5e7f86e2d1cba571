#include "cpu/cpu_executor.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace llmserve {

namespace {

size_t align_up(size_t n) {
  return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

[[noreturn]] void bad_batch(const std::string &what) {
  throw std::invalid_argument("step batch: " + what);
}

template <typename T>
void check_size(const std::vector<T> &v, const char *name, int64_t want,
                const char *want_text) {
  if (static_cast<int64_t>(v.size()) != want)
    bad_batch(std::string(name) + " has " + std::to_string(v.size()) +
              " entries, expected " + want_text + " = " + std::to_string(want));
}

void check_range(const std::vector<int32_t> &v, const char *name, int64_t lo,
                 int64_t hi) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] < lo || v[i] >= hi)
      bad_batch(std::string(name) + "[" + std::to_string(i) + "] = " +
                std::to_string(v[i]) + " is outside [" + std::to_string(lo) +
                ", " + std::to_string(hi) + ")");
}

// Kernels index memory with these arrays, so an inconsistent batch would read
// or write out of bounds; refuse it before anything runs.
void check_batch(const StepBatch &b, const Manifest &m, int64_t num_blocks) {
  const int64_t T = b.num_tokens, S = b.num_seqs, MB = b.max_blocks_per_seq;
  if (T < 0 || S < 0 || MB < 0)
    bad_batch("negative size: num_tokens " + std::to_string(T) + ", num_seqs " +
              std::to_string(S) + ", max_blocks_per_seq " + std::to_string(MB));
  check_size(b.token_ids, "token_ids", T, "T");
  check_size(b.positions, "positions", T, "T");
  check_size(b.query_start, "query_start", S + 1, "S+1");
  check_size(b.context_len, "context_len", S, "S");
  check_size(b.block_table, "block_table", S * MB, "S*MB");
  check_size(b.slot_mapping, "slot_mapping", T, "T");
  check_size(b.logits_rows, "logits_rows", S, "S");
  check_size(b.temperature, "temperature", S, "S");
  check_size(b.top_p, "top_p", S, "S");
  check_size(b.top_k, "top_k", S, "S");
  check_size(b.min_p, "min_p", S, "S");
  check_size(b.seed, "seed", S, "S");
  check_size(b.presence_penalty, "presence_penalty", S, "S");
  check_size(b.frequency_penalty, "frequency_penalty", S, "S");
  check_size(b.repetition_penalty, "repetition_penalty", S, "S");
  check_size(b.penalty_start, "penalty_start", S + 1, "S+1");
  const int64_t P = static_cast<int64_t>(b.penalty_tokens.size());
  check_size(b.penalty_counts, "penalty_counts", P, "P");
  check_size(b.num_logprobs, "num_logprobs", S, "S");

  // The manifest guarantees model and kv_cache for a bundle with a step.
  const int64_t block_size = m.kv_cache->block_size;
  check_range(b.token_ids, "token_ids", 0, m.model->vocab_size);
  check_range(b.positions, "positions", 0, m.model->max_position_embeddings);
  check_range(b.context_len, "context_len", 0, MB * block_size + 1);
  check_range(b.block_table, "block_table", -1, num_blocks);
  check_range(b.slot_mapping, "slot_mapping", 0, num_blocks * block_size);
  check_range(b.logits_rows, "logits_rows", 0, T);
  if (b.query_start[0] != 0 || b.query_start[S] != T)
    bad_batch("query_start runs from " + std::to_string(b.query_start[0]) +
              " to " + std::to_string(b.query_start[S]) + ", expected 0 to T = " +
              std::to_string(T));
  check_range(b.num_logprobs, "num_logprobs", -1, abi::kMaxTopLogprobs + 1);
  if (b.penalty_start[0] != 0 || b.penalty_start[S] != P)
    bad_batch("penalty_start runs from " + std::to_string(b.penalty_start[0]) +
              " to " + std::to_string(b.penalty_start[S]) +
              ", expected 0 to P = " + std::to_string(P));
  for (int64_t s = 0; s < S; ++s) {
    if (b.penalty_start[s + 1] < b.penalty_start[s])
      bad_batch("penalty_start decreases at " + std::to_string(s + 1));
    if (b.query_start[s + 1] < b.query_start[s])
      bad_batch("query_start decreases at " + std::to_string(s + 1));
    const int64_t used_blocks = (b.context_len[s] + block_size - 1) / block_size;
    for (int64_t j = 0; j < used_blocks; ++j)
      if (b.block_table[s * MB + j] < 0)
        bad_batch("block_table row " + std::to_string(s) + " has no block " +
                  std::to_string(j) + " for context_len " +
                  std::to_string(b.context_len[s]));
  }
}

} // namespace

CpuExecutor::CpuExecutor(Bundle bundle, int num_threads)
    : bundle_(std::move(bundle)), pool_(num_threads) {
  const Manifest &m = bundle_.manifest();
  buffers_.assign(m.buffers.size(), nullptr);
  for (size_t id = 0; id < m.buffers.size(); ++id)
    buffers_[id] = bundle_.weight(static_cast<int>(id));
  for (const EntryPoint &e : m.entry_points) {
    std::vector<int> scratch = e.results;
    for (const Dispatch &d : e.dispatches)
      for (int id : d.bindings)
        if (m.buffers[id].kind == BufferKind::Activation &&
            std::find(scratch.begin(), scratch.end(), id) == scratch.end())
          scratch.push_back(id);
    scratch_buffers_.push_back(std::move(scratch));
  }
}

KvCacheSpec CpuExecutor::kv_cache_spec() const {
  const std::optional<KvCacheLayout> &kv = bundle_.manifest().kv_cache;
  if (!kv)
    throw std::logic_error(bundle_.dir() + ": the bundle has no KV cache");
  KvCacheSpec spec;
  spec.block_size = static_cast<int32_t>(kv->block_size);
  spec.bytes_per_token = kv->bytes_per_token;
  return spec;
}

void CpuExecutor::allocate_kv_cache(int32_t num_blocks) {
  if (num_blocks < 1)
    throw std::invalid_argument("KV cache: " + std::to_string(num_blocks) +
                                " blocks, need at least 1");
  const Manifest &m = bundle_.manifest();
  kv_cache_.clear();
  Symbols symbols;
  symbols.NB = num_blocks;
  for (size_t id = 0; id < m.buffers.size(); ++id) {
    if (m.buffers[id].kind != BufferKind::KvCache)
      continue;
    kv_cache_.emplace_back(m.buffers[id].byte_size(symbols, static_cast<int>(id)));
    buffers_[id] = kv_cache_.back().data();
  }
  num_kv_blocks_ = num_blocks;
}

const EntryPoint &CpuExecutor::entry(std::string_view name) const {
  if (const EntryPoint *e = bundle_.manifest().find_entry(name))
    return *e;
  throw std::invalid_argument(bundle_.dir() + ": no entry point '" +
                              std::string(name) + "'");
}

void CpuExecutor::execute(const StepBatch &batch, StepOutput &out) {
  if (num_kv_blocks_ == 0)
    throw std::logic_error("execute() before allocate_kv_cache()");
  const EntryPoint &step = entry("step");
  check_batch(batch, bundle_.manifest(), num_kv_blocks_);

  Symbols symbols;
  symbols.T = batch.num_tokens;
  symbols.S = batch.num_seqs;
  symbols.MB = batch.max_blocks_per_seq;
  symbols.NB = num_kv_blocks_;
  symbols.P = static_cast<int64_t>(batch.penalty_tokens.size());
  // In abi::kStepArguments order; kernels only read arguments, so they use
  // the batch's arrays in place.
  const std::array<const void *, abi::kNumStepArguments> arguments = {
      batch.token_ids.data(),         batch.positions.data(),
      batch.query_start.data(),       batch.context_len.data(),
      batch.block_table.data(),       batch.slot_mapping.data(),
      batch.logits_rows.data(),       batch.temperature.data(),
      batch.top_p.data(),             batch.top_k.data(),
      batch.min_p.data(),             batch.seed.data(),
      batch.presence_penalty.data(),  batch.frequency_penalty.data(),
      batch.repetition_penalty.data(), batch.penalty_start.data(),
      batch.penalty_tokens.data(),    batch.penalty_counts.data(),
      batch.num_logprobs.data(),
  };
  static_assert(abi::kNumStepArguments == 19, "bind every step argument");
  run(step, symbols, arguments.data());

  const size_t S = static_cast<size_t>(batch.num_seqs);
  const auto result = [&](int i) { return buffers_[step.results[i]]; };
  const auto *next = static_cast<const int32_t *>(result(0));
  out.next_tokens.assign(next, next + S);
  out.token_logprobs.clear();
  out.top_logprob_tokens.clear();
  out.top_logprobs.clear();
  if (std::none_of(batch.num_logprobs.begin(), batch.num_logprobs.end(),
                   [](int32_t n) { return n >= 0; }))
    return;
  const auto *logprob = static_cast<const float *>(result(1));
  const auto *top_tokens = static_cast<const int32_t *>(result(2));
  const auto *top = static_cast<const float *>(result(3));
  out.token_logprobs.assign(logprob, logprob + S);
  out.top_logprob_tokens.assign(top_tokens, top_tokens + S * abi::kMaxTopLogprobs);
  out.top_logprobs.assign(top, top + S * abi::kMaxTopLogprobs);
}

std::vector<HostTensor>
CpuExecutor::run_entry(std::string_view name, Symbols symbols,
                       const std::vector<HostTensor> &inputs) {
  const EntryPoint &e = entry(name);
  const Manifest &m = bundle_.manifest();
  symbols.NB = num_kv_blocks_;
  for (const Dispatch &d : e.dispatches)
    for (int id : d.bindings)
      if (m.buffers[id].kind == BufferKind::KvCache && num_kv_blocks_ == 0)
        throw std::logic_error("entry point '" + e.name +
                               "' needs the KV cache; allocate it first");
  if (inputs.size() != e.arguments.size())
    throw std::invalid_argument("entry point '" + e.name + "' takes " +
                                std::to_string(e.arguments.size()) +
                                " arguments, got " + std::to_string(inputs.size()));
  const auto shape_of = [&](int id) {
    std::vector<int64_t> shape;
    for (const Expression &dim : m.buffers[id].shape)
      shape.push_back(dim.evaluate(symbols));
    return shape;
  };
  std::vector<const void *> arguments;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int id = e.arguments[i];
    const Buffer &b = m.buffers[id];
    const HostTensor &in = inputs[i];
    const std::vector<int64_t> shape = shape_of(id);
    if (in.dtype != b.dtype || in.shape != shape)
      throw std::invalid_argument(
          "entry point '" + e.name + "' argument " + std::to_string(i) + " '" +
          b.name + "': got " + describe(in.dtype, in.shape) + ", expected " +
          describe(b.dtype, shape) + " for [" + shape_text(b.shape) + "]");
    if (in.data.size() != b.byte_size(symbols, id))
      throw std::invalid_argument("entry point '" + e.name + "' argument " +
                                  std::to_string(i) + " '" + b.name + "': " +
                                  std::to_string(in.data.size()) +
                                  " bytes of data for " + describe(in.dtype, in.shape));
    arguments.push_back(in.data.data());
  }

  run(e, symbols, arguments.data());

  std::vector<HostTensor> results;
  for (int id : e.results) {
    HostTensor &r = results.emplace_back();
    r.dtype = m.buffers[id].dtype;
    r.shape = shape_of(id);
    const auto *p = static_cast<const uint8_t *>(buffers_[id]);
    r.data.assign(p, p + m.buffers[id].byte_size(symbols, id));
  }
  return results;
}

void CpuExecutor::run(const EntryPoint &e, const Symbols &symbols,
                      const void *const *arguments) {
  const Manifest &m = bundle_.manifest();
  for (size_t i = 0; i < e.arguments.size(); ++i)
    buffers_[e.arguments[i]] = const_cast<void *>(arguments[i]);

  // Lay the activations and results out back to back in the arena.
  const std::vector<int> &scratch = scratch_buffers_[&e - m.entry_points.data()];
  size_t arena_size = 0;
  for (int id : scratch)
    arena_size += align_up(m.buffers[id].byte_size(symbols, id));
  if (arena_size > arena_.size())
    arena_ = AlignedBuffer(arena_size);
  size_t offset = 0;
  for (int id : scratch) {
    buffers_[id] = static_cast<uint8_t *>(arena_.data()) + offset;
    offset += align_up(m.buffers[id].byte_size(symbols, id));
  }

  for (size_t i = 0; i < e.dispatches.size(); ++i) {
    const Dispatch &d = e.dispatches[i];
    try {
      bindings_.clear();
      for (int id : d.bindings)
        bindings_.push_back(buffers_[id]);
      push_constants_.clear();
      for (const Expression &c : d.push_constants)
        push_constants_.push_back(c.evaluate(symbols));
      KernelLaunch launch;
      launch.kernel = bundle_.kernel(d.kernel);
      launch.bindings = bindings_.data();
      launch.push_constants = push_constants_.data();
      for (int axis = 0; axis < 3; ++axis)
        launch.grid[axis] = d.grid[axis].evaluate(symbols);
      pool_.run(launch);
    } catch (const std::exception &ex) { // an expression or the grid is bad
      throw std::runtime_error("entry point '" + e.name + "' dispatch " +
                               std::to_string(i) + " (kernel '" +
                               m.kernels[d.kernel].name + "'): " + ex.what());
    }
  }
}

} // namespace llmserve
