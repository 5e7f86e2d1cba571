#include "options.h"

#include "cli/command_line.h"

#include <cstdint>
#include <string>

namespace llmrun {
namespace cli = llmserve::cli;

void add_model_options(CLI::App &app, llmserve::ServeOptions &o) {
  app.add_option("bundle", o.bundle_dir, "the compiled model (llmc compile -o DIR)")
      ->type_name("DIR")
      ->required();
  app.add_option("--weights", o.weights_dir, "checkpoint to read the weights from")
      ->type_name("DIR")
      ->group("Model");
  cli::integer_in(app.add_option("--threads", o.num_threads, "model threads (default: all)")
                      ->type_name("N")
                      ->group("Model"),
                  0, 4096);
  cli::one_of(app.add_option("--device", o.device,
                             "where to run (default: the bundle's target;\n"
                             "cuda needs a bundle compiled for sm_90)")
                  ->group("Model"),
              {"cpu", "cuda"});
}

void add_step_options(CLI::App &app, llmserve::ServeOptions &o) {
  add_model_options(app, o);
  app.add_flag_callback("--no-cuda-graphs", [&o] { o.cuda_graphs = false; },
                        "run decode steps without CUDA graphs")
      ->group("Model");
  app.add_flag_callback("--no-overlap", [&o] { o.overlap_scheduling = false; },
                        "schedule each step after the one before has\n"
                        "ended, not while it runs")
      ->group("Engine");
  app.add_flag_callback("--decode-only-steps", [&o] { o.decode_only_steps = true; },
                        "run decodes and prompt chunks in separate steps,\n"
                        "so that every decode step can replay a CUDA graph")
      ->group("Engine");
  cli::integer_in(app.add_option("--max-num-seqs", o.max_num_seqs, "requests running at once")
                      ->type_name("N")
                      ->capture_default_str()
                      ->group("Engine"),
                  1, INT32_MAX);
  cli::integer_in(app.add_option("--max-num-batched-tokens", o.max_num_batched_tokens,
                                 "tokens per step")
                      ->type_name("N")
                      ->capture_default_str()
                      ->group("Engine"),
                  1, INT32_MAX);
  cli::integer_in(app.add_option("--max-model-len", o.max_model_len,
                                 "prompt + output tokens (default: the model's)")
                      ->type_name("N")
                      ->group("Engine"),
                  2, INT32_MAX);
}

void add_engine_options(CLI::App &app, llmserve::ServeOptions &o) {
  add_step_options(app, o);
  CLI::Option *kv_memory =
      app.add_option_function<std::string>(
             "--kv-cache-memory",
             [&o](const std::string &size) {
               llmserve::parse_memory_size(size, llmserve::physical_memory_bytes()); // checks it
               o.kv_cache_memory = size;
             },
             "KV cache bytes (512MiB, 2G) or fraction of physical\n"
             "memory, or with --device cuda of the GPU memory left\n"
             "free by the model (0.2)")
          ->type_name("SIZE")
          ->group("Engine");
  cli::positive(app.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                               "with --device cuda: the fraction of the GPU's\n"
                               "memory this process may use, the KV cache taking\n"
                               "what the model leaves of it (vLLM's option)")
                    ->type_name("F")
                    ->excludes(kv_memory)
                    ->group("Engine"),
                1.0);
  app.add_flag_callback("--no-prefix-caching", [&o] { o.enable_prefix_caching = false; },
                        "turn the prefix cache off")
      ->group("Engine");
}

void add_serve_options(CLI::App &app, llmserve::ServeOptions &o) {
  app.add_option("--host", o.host, "where to listen")->type_name("H")->capture_default_str();
  cli::integer_in(app.add_option("--port", o.port, "where to listen (0: any free port)")
                      ->type_name("P")
                      ->capture_default_str(),
                  0, 65535);
  CLI::Option *key =
      app.add_option("--api-key", o.api_key,
                     "/v1 routes, /tokenize and /detokenize need\n"
                     "'Authorization: Bearer KEY' (default: the\n"
                     "LLMSERVE_API_KEY environment variable)")
          ->type_name("KEY");
  app.add_option("--api-key-file", o.api_key_file,
                 "the key on the first line of FILE, kept out of\n"
                 "the command line")
      ->type_name("FILE")
      ->excludes(key);
  app.add_option("--tool-call-parser", o.tool_call_parser,
                 "how the model writes tool calls (default: what\n"
                 "its chat template shows, else hermes)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"hermes", "llama3_json", "mistral"}));
  app.add_option("--served-model-name", o.served_model_name,
                 "the model's name in the API (default: the\n"
                 "bundle directory's stem)")
      ->type_name("NAME");
  cli::integer_in(app.add_option("--shutdown-grace", o.shutdown_grace_seconds,
                                 "on SIGTERM or SIGINT, seconds requests in\n"
                                 "flight may run on before they are aborted")
                      ->type_name("S")
                      ->capture_default_str(),
                  0, 86400);
  cli::integer_in(app.add_option("--max-queued-requests", o.max_queued_requests,
                                 "requests waiting beyond --max-num-seqs before\n"
                                 "new ones get 503")
                      ->type_name("N")
                      ->capture_default_str(),
                  0, 1 << 20);
  cli::integer_in(app.add_option("--http-read-timeout", o.http_read_timeout_seconds,
                                 "seconds a connection has to send a whole\n"
                                 "request, head and body (an idle keep-alive\n"
                                 "connection included), before a 408 closes it")
                      ->type_name("S")
                      ->capture_default_str()
                      ->group("Connections"),
                  1, 86400);
  cli::integer_in(app.add_option("--http-write-timeout", o.http_write_timeout_seconds,
                                 "seconds one write may wait for a client that\n"
                                 "does not read, before it counts as gone")
                      ->type_name("S")
                      ->capture_default_str()
                      ->group("Connections"),
                  1, 86400);
  cli::integer_in(app.add_option("--max-request-head", o.max_request_head_bytes,
                                 "bytes of a request's line and headers (431)")
                      ->type_name("BYTES")
                      ->capture_default_str()
                      ->group("Connections"),
                  1024, 1 << 20);
  cli::integer_in(app.add_option("--max-request-body", o.max_request_body_bytes,
                                 "bytes of a request's body, as decoded (413)")
                      ->type_name("BYTES")
                      ->capture_default_str()
                      ->group("Connections"),
                  1, int64_t{1} << 32);
  cli::integer_in(app.add_option("--max-connections", o.max_connections,
                                 "open connections, beyond which new ones get\n"
                                 "503 and are closed")
                      ->type_name("N")
                      ->capture_default_str()
                      ->group("Connections"),
                  1, 1 << 20);
  cli::integer_in(app.add_option("--max-connections-per-client", o.max_connections_per_client,
                                 "open connections from one client address")
                      ->type_name("N")
                      ->capture_default_str()
                      ->group("Connections"),
                  1, 1 << 20);
  app.add_option("--kv-events-endpoint", o.kv_events_endpoint,
                 "publish the prefix cache's KV events (vLLM's\n"
                 "schema) on a ZeroMQ PUB socket: tcp://*:5557\n"
                 "binds, tcp://indexer:5557 connects")
      ->type_name("URL")
      ->group("KV events");
  app.add_option("--kv-events-topic", o.kv_events_topic,
                 "their topic (default kv@HOSTNAME@MODEL-NAME)")
      ->type_name("TOPIC")
      ->group("KV events");
  app.add_option("--kv-events-hash-seed", o.kv_events_hash_seed,
                 "seed of the chained block hashes: the router's\n"
                 "HashSeed (vLLM's PYTHONHASHSEED); default empty")
      ->type_name("SEED")
      ->group("KV events");
  add_engine_options(app, o);
}

} // namespace llmrun
