#include "server/serve_options.h"

#include <CLI/TypeTools.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace llmserve {
namespace {

[[noreturn]] void bad_value(const std::string &option, const std::string &value,
                            const std::string &why) {
  throw std::invalid_argument(option + " '" + value + "': " + why);
}

const char *value_of(int &i, int argc, char **argv) {
  if (i + 1 >= argc)
    throw std::invalid_argument(std::string(argv[i]) + ": missing value");
  return argv[++i];
}

} // namespace

int64_t parse_integer(const std::string &option, const std::string &text,
                      int64_t min, int64_t max) {
  size_t end = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &end);
  } catch (const std::exception &) {
    end = 0;
  }
  if (end == 0 || end != text.size())
    bad_value(option, text, "not an integer");
  if (value < min || value > max)
    bad_value(option, text, "must be in [" + std::to_string(min) + ", " +
                                std::to_string(max) + "]");
  return value;
}

bool parse_engine_option(ServeOptions &o, int &i, int argc, char **argv) {
  const std::string flag = argv[i];
  auto int_value = [&](int64_t min, int64_t max) {
    return parse_integer(flag, value_of(i, argc, argv), min, max);
  };
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  if (flag == "--weights")
    o.weights_dir = value_of(i, argc, argv);
  else if (flag == "--threads")
    o.num_threads = static_cast<int>(int_value(0, 4096));
  else if (flag == "--max-num-seqs")
    o.max_num_seqs = static_cast<int32_t>(int_value(1, kInt32Max));
  else if (flag == "--max-num-batched-tokens")
    o.max_num_batched_tokens = static_cast<int32_t>(int_value(1, kInt32Max));
  else if (flag == "--max-model-len")
    o.max_model_len = static_cast<int32_t>(int_value(2, kInt32Max));
  else if (flag == "--kv-cache-memory") {
    o.kv_cache_memory = value_of(i, argc, argv);
    parse_memory_size(o.kv_cache_memory, physical_memory_bytes()); // checks it
  } else if (flag == "--no-prefix-caching") {
    o.enable_prefix_caching = false;
  } else if (flag == "--device") {
    o.device = value_of(i, argc, argv);
    if (o.device != "cpu" && o.device != "cuda")
      bad_value(flag, o.device, "expected cpu or cuda");
  } else if (flag == "--no-cuda-graphs") {
    o.cuda_graphs = false;
  } else
    return false;
  return true;
}

ServeOptions parse_serve_options(int argc, char **argv) {
  ServeOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (parse_engine_option(o, i, argc, argv))
      continue;
    if (flag == "--host")
      o.host = value_of(i, argc, argv);
    else if (flag == "--port")
      o.port = static_cast<int>(parse_integer(flag, value_of(i, argc, argv), 0, 65535));
    else if (flag == "--api-key")
      o.api_key = value_of(i, argc, argv);
    else if (flag == "--served-model-name")
      o.served_model_name = value_of(i, argc, argv);
    else if (flag == "--max-queued-requests")
      o.max_queued_requests = static_cast<int32_t>(
          parse_integer(flag, value_of(i, argc, argv), 0, 1 << 20));
    else if (flag[0] != '-' && o.bundle_dir.empty())
      o.bundle_dir = flag;
    else
      throw std::invalid_argument("unknown argument '" + flag + "'");
  }
  if (o.bundle_dir.empty())
    throw std::invalid_argument("missing the bundle directory");
  return o;
}

int64_t parse_memory_size(const std::string &text, int64_t physical_memory) {
  const char *option = "--kv-cache-memory";
  // A number, read as the command line's numbers are (CLI11), then letters.
  size_t end = text.size();
  while (end > 0 && std::isalpha(static_cast<unsigned char>(text[end - 1])))
    --end;
  double value = 0;
  if (!CLI::detail::lexical_cast(text.substr(0, end), value))
    bad_value(option, text, "not a size");
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

EngineConfig make_engine_config(const ServeOptions &o, const ModelConfig &model,
                                int64_t kv_bytes_per_token, const KvMemory &memory) {
  EngineConfig c;
  c.max_num_seqs = o.max_num_seqs;
  c.max_num_batched_tokens = o.max_num_batched_tokens;
  const int64_t model_len = model.max_position_embeddings;
  if (o.max_model_len > model_len)
    throw std::invalid_argument(
        "--max-model-len " + std::to_string(o.max_model_len) +
        " exceeds the model's max_position_embeddings = " + std::to_string(model_len));
  c.max_model_len = static_cast<int32_t>(o.max_model_len > 0 ? o.max_model_len : model_len);
  if (!o.kv_cache_memory.empty()) {
    c.kv_cache_bytes = parse_memory_size(o.kv_cache_memory, memory.total);
  } else {
    int64_t full = int64_t(c.max_num_seqs) * c.max_model_len * kv_bytes_per_token;
    c.kv_cache_bytes = std::min(full, memory.default_limit);
  }
  c.enable_prefix_caching = o.enable_prefix_caching;
  for (int64_t id : model.eos_token_ids)
    c.eos_token_ids.push_back(static_cast<int32_t>(id));
  c.vocab_size = static_cast<int32_t>(model.vocab_size);
  return c;
}

} // namespace llmserve
