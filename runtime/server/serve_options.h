// What `llmrun serve`, `generate` and `bench` load and run a model with (their
// command-line options, tools/llmrun/options.h), and the engine configuration
// these and the model resolve to.
#ifndef LLMSERVE_SERVER_SERVE_OPTIONS_H
#define LLMSERVE_SERVER_SERVE_OPTIONS_H

#include "core/engine.h"
#include "bundle/manifest.h"

#include <cstdint>
#include <string>

namespace llmserve {

struct ServeOptions {
  std::string bundle_dir;
  std::string weights_dir;       // --weights: checkpoint to read weights from
  std::string served_model_name; // default: the bundle directory's stem
  std::string host = "127.0.0.1";
  int port = 8000;
  // Non-empty: /v1 routes, /tokenize and /detokenize need "Authorization:
  // Bearer KEY". The key comes from --api-key, else the first line of
  // --api-key-file, else LLMSERVE_API_KEY (server/access.h).
  std::string api_key;
  std::string api_key_file;
  int num_threads = 0; // model threads; 0: one per hardware thread
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
  int32_t max_model_len = 0; // 0: the model's max_position_embeddings
  // Bytes ("512MiB", "2G", "1000000") or a fraction of physical memory
  // ("0.2"); empty: enough for max_num_seqs full-length sequences, at most
  // a tenth of physical memory.
  std::string kv_cache_memory;
  // In (0, 1]: the KV cache takes what this fraction of the GPU's memory
  // leaves after the model (vLLM's --gpu-memory-utilization); 0: unset.
  double gpu_memory_utilization = 0.0;
  int32_t max_queued_requests = 256; // beyond the running ones
  // The HTTP connections (server/http_listener.h): seconds to send a whole
  // request and to wait on one write, a request's head and body size, and
  // how many may be open, in all and from one client address.
  int32_t http_read_timeout_seconds = 30;
  int32_t http_write_timeout_seconds = 60;
  int32_t max_request_head_bytes = 16 << 10;
  int64_t max_request_body_bytes = 16 << 20;
  int32_t max_connections = 16384;
  int32_t max_connections_per_client = 1024;
  // On SIGTERM or SIGINT, how long requests in flight may run on before
  // they are aborted.
  int32_t shutdown_grace_seconds = 30;
  // How the model writes tool calls: "hermes", "llama3_json", "mistral", or
  // empty: what its chat template shows (tool_calls.h).
  std::string tool_call_parser;
  bool enable_prefix_caching = true;
  // Non-empty: publish the prefix cache's KV events there over ZeroMQ
  // (server/kv_event_publisher.h), on `kv_events_topic` (empty:
  // "kv@HOSTNAME@SERVED-MODEL-NAME"), with block hashes seeded by
  // `kv_events_hash_seed` (core/block_hash.h).
  std::string kv_events_endpoint;
  std::string kv_events_topic;
  std::string kv_events_hash_seed;
  std::string device;      // --device: "cpu", "cuda", or empty: the bundle's target
  bool cuda_graphs = true; // --no-cuda-graphs: run decode steps uncaptured
  // --no-overlap: each step runs to the end before the next is scheduled.
  bool overlap_scheduling = true;
  // --decode-only-steps: decodes and prompt chunks in separate steps, so
  // every decode step can replay a CUDA graph (SchedulerConfig).
  bool decode_only_steps = false;
};

// "1000", "64KiB", "512M", "2GiB", "1.5G" in bytes; "0.25" (a number in
// (0, 1]) as that fraction of `physical_memory`. Throws std::invalid_argument
// "--kv-cache-memory 'TEXT': why".
int64_t parse_memory_size(const std::string &text, int64_t physical_memory);
int64_t physical_memory_bytes();

// The memory the KV cache comes out of: physical memory for the CPU, device
// memory left free by the weights and activations for a GPU. A fraction in
// --kv-cache-memory is of `total`; without the option the cache takes what
// max_num_seqs full-length sequences need, at most `default_limit`.
// --gpu-memory-utilization F gives it F of `device_memory` less what the
// device already uses (device_memory - total).
struct KvMemory {
  int64_t total = 0;
  int64_t default_limit = 0;
  int64_t device_memory = 0; // the GPU's whole memory; 0 for the CPU
};
// Physical memory, a tenth of it by default.
KvMemory host_kv_memory();

// The engine's step limits for a model (max_num_seqs,
// max_num_batched_tokens, max_model_len, which defaults to and may not
// exceed the model's max_position_embeddings): what an executor is sized
// from, before the memory left for the KV cache is known.
EngineConfig make_engine_limits(const ServeOptions &options, const ModelConfig &model);

// The engine configuration for a model: its limits, and the KV budget as
// ServeOptions::kv_cache_memory or gpu_memory_utilization says, out of
// `memory`.
EngineConfig make_engine_config(const ServeOptions &options,
                                const ModelConfig &model,
                                int64_t kv_bytes_per_token,
                                const KvMemory &memory = host_kv_memory());

} // namespace llmserve

#endif // LLMSERVE_SERVER_SERVE_OPTIONS_H
