#include "server/serve_options.h"

#include "cli/command_line.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace llmserve {
namespace {

[[noreturn]] void bad_value(const std::string &option, const std::string &value,
                            const std::string &why) {
  throw std::invalid_argument(option + " '" + value + "': " + why);
}

} // namespace

int64_t parse_memory_size(const std::string &text, int64_t physical_memory) {
  const char *option = "--kv-cache-memory";
  // A number, read as the command line's numbers are, then letters.
  size_t end = text.size();
  while (end > 0 && std::isalpha(static_cast<unsigned char>(text[end - 1])))
    --end;
  const std::optional<double> number = cli::to_number(text.substr(0, end));
  if (!number)
    bad_value(option, text, "not a size");
  const double value = *number;
  const std::string unit = text.substr(end);
  if (!std::isfinite(value) || value <= 0)
    bad_value(option, text, "must be positive");
  if (unit.empty() && value <= 1.0)
    return static_cast<int64_t>(value * double(physical_memory));
  const std::pair<const char *, double> kUnits[] = {
      {"", 1.0},        {"B", 1.0},           {"K", 1e3},
      {"KB", 1e3},      {"KiB", 1024.0},      {"M", 1e6},
      {"MB", 1e6},      {"MiB", 1048576.0},   {"G", 1e9},
      {"GB", 1e9},      {"GiB", 1073741824.0}};
  for (const auto &[name, scale] : kUnits)
    if (unit == name) {
      double bytes = value * scale;
      if (bytes > double(std::numeric_limits<int64_t>::max() / 2))
        bad_value(option, text, "too large");
      return static_cast<int64_t>(bytes);
    }
  bad_value(option, text, "unknown unit '" + unit + "' (use B, K, KiB, M, MiB, G, GiB)");
}

int64_t physical_memory_bytes() {
  return int64_t(sysconf(_SC_PHYS_PAGES)) * int64_t(sysconf(_SC_PAGE_SIZE));
}

KvMemory host_kv_memory() {
  const int64_t physical = physical_memory_bytes();
  return {physical, physical / 10};
}

EngineConfig make_engine_limits(const ServeOptions &o, const ModelConfig &model) {
  EngineConfig c;
  c.max_num_seqs = o.max_num_seqs;
  c.max_num_batched_tokens = o.max_num_batched_tokens;
  c.overlap_scheduling = o.overlap_scheduling;
  c.decode_only_steps = o.decode_only_steps;
  const int64_t model_len = model.max_position_embeddings;
  if (o.max_model_len > model_len)
    throw std::invalid_argument(
        "--max-model-len " + std::to_string(o.max_model_len) +
        " exceeds the model's max_position_embeddings = " + std::to_string(model_len));
  c.max_model_len = static_cast<int32_t>(o.max_model_len > 0 ? o.max_model_len : model_len);
  return c;
}

EngineConfig make_engine_config(const ServeOptions &o, const ModelConfig &model,
                                int64_t kv_bytes_per_token, const KvMemory &memory) {
  EngineConfig c = make_engine_limits(o, model);
  if (o.gpu_memory_utilization > 0) {
    if (memory.device_memory <= 0)
      throw std::invalid_argument("--gpu-memory-utilization sizes the KV cache on a GPU; on the "
                                  "CPU use --kv-cache-memory");
    const int64_t in_use = memory.device_memory - memory.total;
    const int64_t allowed =
        static_cast<int64_t>(o.gpu_memory_utilization * double(memory.device_memory));
    if (allowed <= in_use) {
      char fraction[32];
      std::snprintf(fraction, sizeof fraction, "%g", o.gpu_memory_utilization);
      throw std::invalid_argument("--gpu-memory-utilization " + std::string(fraction) +
                                  " leaves no memory for the KV cache: " +
                                  std::to_string(in_use >> 20) + " MiB of the GPU's " +
                                  std::to_string(memory.device_memory >> 20) +
                                  " MiB are in use already");
    }
    c.kv_cache_bytes = allowed - in_use;
  } else if (!o.kv_cache_memory.empty()) {
    c.kv_cache_bytes = parse_memory_size(o.kv_cache_memory, memory.total);
  } else {
    int64_t full = int64_t(c.max_num_seqs) * c.max_model_len * kv_bytes_per_token;
    c.kv_cache_bytes = std::min(full, memory.default_limit);
  }
  c.enable_prefix_caching = o.enable_prefix_caching;
  if (!o.kv_events_endpoint.empty()) {
    if (!o.enable_prefix_caching)
      throw std::invalid_argument("--kv-events-endpoint reports the prefix cache's blocks; "
                                  "it cannot go with --no-prefix-caching");
    c.kv_events_hash_seed = o.kv_events_hash_seed;
  }
  for (int64_t id : model.eos_token_ids)
    c.eos_token_ids.push_back(static_cast<int32_t>(id));
  c.vocab_size = static_cast<int32_t>(model.vocab_size);
  return c;
}

} // namespace llmserve
