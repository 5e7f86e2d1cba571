#include "server/serve_options.h"

#include "options.h" // tools/llmrun: the command-line options into ServeOptions

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llmserve {
namespace {

// `llmrun serve`'s options.
ServeOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "serve");
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  ServeOptions options;
  CLI::App app{"", "serve"};
  llmrun::add_serve_options(app, options);
  app.parse(int(argv.size()), argv.data());
  return options;
}

// A usage error: CLI11's own, or one of the checks' (std::invalid_argument).
std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

TEST(ServeOptions, ParsesEveryOption) {
  ServeOptions o = parse({"m.llmb", "--host", "0.0.0.0", "--port", "9000", "--api-key", "k",
                          "--served-model-name", "tiny", "--max-queued-requests", "3",
                          "--weights", "ckpt", "--threads", "2", "--max-num-seqs", "4",
                          "--max-num-batched-tokens", "64", "--max-model-len", "128",
                          "--kv-cache-memory", "1MiB", "--no-prefix-caching",
                          "--device", "cuda", "--no-cuda-graphs",
                          "--kv-events-endpoint", "tcp://*:5557", "--kv-events-topic", "kv@a@b",
                          "--kv-events-hash-seed", "7"});
  EXPECT_EQ(o.bundle_dir, "m.llmb");
  EXPECT_EQ(o.host, "0.0.0.0");
  EXPECT_EQ(o.port, 9000);
  EXPECT_EQ(o.api_key, "k");
  EXPECT_EQ(o.served_model_name, "tiny");
  EXPECT_EQ(o.max_queued_requests, 3);
  EXPECT_EQ(o.weights_dir, "ckpt");
  EXPECT_EQ(o.num_threads, 2);
  EXPECT_EQ(o.max_num_seqs, 4);
  EXPECT_EQ(o.max_num_batched_tokens, 64);
  EXPECT_EQ(o.max_model_len, 128);
  EXPECT_EQ(o.kv_cache_memory, "1MiB");
  EXPECT_FALSE(o.enable_prefix_caching);
  EXPECT_EQ(o.device, "cuda");
  EXPECT_FALSE(o.cuda_graphs);
  EXPECT_EQ(o.kv_events_endpoint, "tcp://*:5557");
  EXPECT_EQ(o.kv_events_topic, "kv@a@b");
  EXPECT_EQ(o.kv_events_hash_seed, "7");
  EXPECT_EQ(parse({"m.llmb"}).device, ""); // the bundle's target
}

TEST(ServeOptions, ErrorsNameTheOption) {
  EXPECT_EQ(error_of({}), "bundle is required");
  EXPECT_EQ(error_of({"m", "--port", "x"}), "--port 'x': not an integer");
  EXPECT_EQ(error_of({"m", "--port", "70000"}), "--port '70000': must be in [0, 65535]");
  EXPECT_EQ(error_of({"m", "--max-num-seqs", "0"}),
            "--max-num-seqs '0': must be in [1, 2147483647]");
  EXPECT_EQ(error_of({"m", "--threads", "-1"}), "--threads '-1': must be in [0, 4096]");
  EXPECT_EQ(error_of({"m", "--host"}), "--host: 1 required H missing");
  EXPECT_EQ(error_of({"m", "--bogus"}), "The following argument was not expected: --bogus");
  EXPECT_EQ(error_of({"m", "other"}), "The following argument was not expected: other");
  EXPECT_EQ(error_of({"m", "--device", "tpu"}), "--device 'tpu': expected cpu or cuda");
  EXPECT_EQ(error_of({"m", "--kv-cache-memory", "2XB"}),
            "--kv-cache-memory '2XB': unknown unit 'XB' (use B, K, KiB, M, MiB, G, GiB)");
}

TEST(ServeOptions, MemorySizes) {
  const int64_t physical = 1000;
  EXPECT_EQ(parse_memory_size("4096", physical), 4096);
  EXPECT_EQ(parse_memory_size("64KiB", physical), 65536);
  EXPECT_EQ(parse_memory_size("2M", physical), 2000000);
  EXPECT_EQ(parse_memory_size("1.5GiB", physical), 1610612736);
  EXPECT_EQ(parse_memory_size("0.25", physical), 250);
  EXPECT_EQ(parse_memory_size("1", physical), 1000); // a fraction of all memory
  EXPECT_THROW(parse_memory_size("0", physical), std::invalid_argument);
  EXPECT_THROW(parse_memory_size("-1G", physical), std::invalid_argument);
  EXPECT_THROW(parse_memory_size("lots", physical), std::invalid_argument);
  EXPECT_THROW(parse_memory_size("1e30G", physical), std::invalid_argument);
}

TEST(ServeOptions, EngineConfigFollowsTheModel) {
  ModelConfig model;
  model.max_position_embeddings = 256;
  model.vocab_size = 300;
  model.eos_token_ids = {2};
  ServeOptions o;
  o.max_num_seqs = 8;
  EngineConfig c = make_engine_config(o, model, 512);
  EXPECT_EQ(c.max_model_len, 256);
  EXPECT_EQ(c.vocab_size, 300);
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{2});
  EXPECT_EQ(c.kv_cache_bytes, 8 * 256 * 512); // max_num_seqs full sequences
  o.max_model_len = 100;
  o.kv_cache_memory = "1MiB";
  c = make_engine_config(o, model, 512);
  EXPECT_EQ(c.max_model_len, 100);
  EXPECT_EQ(c.kv_cache_bytes, 1 << 20);
  o.max_model_len = 300;
  EXPECT_THROW(
      try { make_engine_config(o, model, 512); } catch (const std::invalid_argument &e) {
        EXPECT_STREQ(e.what(),
                     "--max-model-len 300 exceeds the model's max_position_embeddings = 256");
        throw;
      },
      std::invalid_argument);
}

// KV events turn the prefix cache's event log on, and need the cache.
TEST(ServeOptions, KvEventsNeedThePrefixCache) {
  ModelConfig model;
  model.max_position_embeddings = 256;
  ServeOptions o;
  EXPECT_EQ(make_engine_config(o, model, 512).kv_events_hash_seed, std::nullopt);
  o.kv_events_endpoint = "tcp://*:5557";
  o.kv_events_hash_seed = "7";
  EXPECT_EQ(make_engine_config(o, model, 512).kv_events_hash_seed, "7");
  o.enable_prefix_caching = false;
  EXPECT_THROW(
      try { make_engine_config(o, model, 512); } catch (const std::invalid_argument &e) {
        EXPECT_STREQ(e.what(), "--kv-events-endpoint reports the prefix cache's blocks; it "
                               "cannot go with --no-prefix-caching");
        throw;
      },
      std::invalid_argument);
}

// On a GPU the KV cache comes out of the device memory left free.
TEST(ServeOptions, KvMemoryOfTheDevice) {
  ModelConfig model;
  model.max_position_embeddings = 256;
  ServeOptions o;
  o.max_num_seqs = 8;
  const KvMemory gpu = {10000000, 9000000};
  EXPECT_EQ(make_engine_config(o, model, 512, gpu).kv_cache_bytes, 8 * 256 * 512);
  o.max_num_seqs = 100;
  EXPECT_EQ(make_engine_config(o, model, 512, gpu).kv_cache_bytes, 9000000); // the cap
  o.kv_cache_memory = "0.5";
  EXPECT_EQ(make_engine_config(o, model, 512, gpu).kv_cache_bytes, 5000000);
}

// The limits an executor is sized from come before the device memory is
// known, so they leave the KV options alone.
TEST(ServeOptions, EngineLimitsIgnoreTheKvBudget) {
  ModelConfig model;
  model.max_position_embeddings = 256;
  ServeOptions o = parse({"m.llmb", "--gpu-memory-utilization", "0.9", "--max-num-seqs", "8",
                          "--max-model-len", "100"});
  EngineConfig c = make_engine_limits(o, model);
  EXPECT_EQ(c.max_num_seqs, 8);
  EXPECT_EQ(c.max_model_len, 100);
  EXPECT_EQ(c.max_num_batched_tokens, o.max_num_batched_tokens);
}

// vLLM's --gpu-memory-utilization: of an 80 GiB GPU with 70 GiB free after
// the model, 0.9 leaves the KV cache 72 - 10 = 62 GiB.
TEST(ServeOptions, GpuMemoryUtilization) {
  ModelConfig model;
  model.max_position_embeddings = 256;
  ServeOptions o = parse({"m.llmb", "--gpu-memory-utilization", "0.9"});
  EXPECT_DOUBLE_EQ(o.gpu_memory_utilization, 0.9);
  constexpr int64_t GiB = int64_t{1} << 30;
  const KvMemory gpu = {70 * GiB, 63 * GiB, 80 * GiB};
  EXPECT_EQ(make_engine_config(o, model, 512, gpu).kv_cache_bytes,
            static_cast<int64_t>(0.9 * double(80 * GiB)) - 10 * GiB);
  o.gpu_memory_utilization = 0.1;
  EXPECT_THROW(
      {
        try {
          make_engine_config(o, model, 512, gpu);
        } catch (const std::invalid_argument &e) {
          EXPECT_STREQ(e.what(), "--gpu-memory-utilization 0.1 leaves no memory for the "
                                 "KV cache: 10240 MiB of the GPU's 81920 MiB are in use already");
          throw;
        }
      },
      std::invalid_argument);
  o.gpu_memory_utilization = 0.9;
  EXPECT_THROW(make_engine_config(o, model, 512, KvMemory{70 * GiB, 7 * GiB}),
               std::invalid_argument)
      << "the CPU has no such fraction";
  EXPECT_EQ(error_of({"m", "--gpu-memory-utilization", "1.5"}),
            "--gpu-memory-utilization '1.5': must be in (0, 1]");
  EXPECT_EQ(error_of({"m", "--gpu-memory-utilization", "0.9", "--kv-cache-memory", "1G"}),
            "--kv-cache-memory excludes --gpu-memory-utilization");
}

// The engine overlaps its steps and mixes decodes with prompt chunks unless
// told not to.
TEST(ServeOptions, StepPolicies) {
  ModelConfig model;
  model.max_position_embeddings = 256;
  const EngineConfig defaults = make_engine_limits(parse({"m.llmb"}), model);
  EXPECT_TRUE(defaults.overlap_scheduling);
  EXPECT_FALSE(defaults.decode_only_steps);
  const EngineConfig c =
      make_engine_limits(parse({"m.llmb", "--no-overlap", "--decode-only-steps"}), model);
  EXPECT_FALSE(c.overlap_scheduling);
  EXPECT_TRUE(c.decode_only_steps);
}

} // namespace
} // namespace llmserve
