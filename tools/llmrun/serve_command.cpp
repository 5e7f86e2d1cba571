// llmrun serve: the OpenAI-compatible HTTP server over one bundle.
#include "commands.h"

#include "server/http_server.h"
#include "server/served_model.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <pthread.h>
#include <thread>

namespace llmrun {
namespace {

const char kUsage[] =
    "usage: llmrun serve <bundle> [--host 127.0.0.1] [--port 8000] [options]\n"
    "  Serves the OpenAI API (/v1/completions, /v1/chat/completions, /v1/models),\n"
    "  /tokenize, /detokenize, /health and /metrics. SIGINT or SIGTERM stops it.\n"
    "  --host H, --port P            where to listen (port 0: any free port)\n"
    "  --api-key KEY                 /v1 routes need 'Authorization: Bearer KEY'\n"
    "  --served-model-name NAME      the model's name in the API (default: the\n"
    "                                bundle directory's stem)\n"
    "  --max-queued-requests N       requests waiting beyond --max-num-seqs before\n"
    "                                new ones get 503 (default 256)\n"
    "  --weights DIR                 checkpoint to read the weights from\n"
    "  --threads N                   model threads (default: all)\n"
    "  --max-num-seqs N              requests running at once (default 256)\n"
    "  --max-num-batched-tokens N    tokens per step (default 2048)\n"
    "  --max-model-len N             prompt + output tokens (default: the model's)\n"
    "  --kv-cache-memory SIZE        KV cache bytes (512MiB, 2G) or fraction of\n"
    "                                physical memory, or with --device cuda of the\n"
    "                                GPU memory left free by the model (0.2)\n"
    "  --no-prefix-caching           turn the prefix cache off\n"
    "  --device cpu|cuda             where to run (default: the bundle's target;\n"
    "                                cuda needs a bundle compiled for sm_90)\n"
    "  --no-cuda-graphs              run decode steps without CUDA graphs\n";

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

} // namespace

int serve_command(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  llmserve::ServeOptions options;
  try {
    options = llmserve::parse_serve_options(argc, argv);
  } catch (const std::invalid_argument &e) {
    std::fprintf(stderr, "llmrun serve: %s\n%s", e.what(), kUsage);
    return 2;
  }

  // SIGINT and SIGTERM are taken by a thread of their own (sigwait), so
  // every other thread, started after this, has them blocked. A client that
  // hangs up must not kill the server with SIGPIPE.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  llmserve::ServedModel model(options);
  llmserve::EngineConfig config = model.engine_config(options);
  llmserve::Engine engine(model.executor, config);
  llmserve::EngineStats stats = engine.stats();
  const int64_t kv_tokens = int64_t(stats.num_kv_blocks) * model.executor.kv_cache_spec().block_size;
  std::fprintf(stderr, "INFO device: %s\n", model.loaded.description.c_str());
  std::fprintf(stderr,
               "INFO model %s: %s, %s parameters, vocabulary %lld, weights from %s\n"
               "INFO KV cache: %d blocks of %d tokens (%s tokens, %s bytes); max_model_len %d, "
               "so at most %.1f full-length requests at once; max_num_seqs %d\n",
               model.name.c_str(), model.config.architecture.c_str(),
               with_commas(model.num_parameters).c_str(), (long long)model.config.vocab_size,
               model.loaded.weights_source.c_str(), stats.num_kv_blocks,
               model.executor.kv_cache_spec().block_size, with_commas(kv_tokens).c_str(),
               with_commas(kv_tokens * model.executor.kv_cache_spec().bytes_per_token).c_str(),
               config.max_model_len, double(kv_tokens) / config.max_model_len,
               config.max_num_seqs);

  const int32_t max_in_flight = options.max_num_seqs + options.max_queued_requests;
  llmserve::EngineLoop loop(engine, max_in_flight);
  llmserve::ModelInfo info{model.name, config.max_model_len, &model.tokenizer,
                           model.chat_template ? &*model.chat_template : nullptr};
  llmserve::HttpServerConfig http;
  http.api_key = options.api_key;
  // A thread per request in flight, and a few for /health, /metrics and
  // requests to be refused.
  http.num_threads = max_in_flight + 8;
  llmserve::HttpServer server(info, loop, http);
  const int port = server.bind(options.host, options.port);
  std::fprintf(stderr, "INFO listening on http://%s:%d (%s)\n", options.host.c_str(), port,
               model.chat_template ? "completions and chat" : "completions; no chat template");

  std::atomic<bool> listening_ended{false};
  std::thread signal_thread([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    if (listening_ended) // woken by the exit path below
      return;
    std::fprintf(stderr, "INFO %s: stopping\n", strsignal(signal));
    server.shutdown();
  });
  server.listen();
  listening_ended = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  std::fprintf(stderr, "INFO stopped\n");
  return 0;
}

} // namespace llmrun
