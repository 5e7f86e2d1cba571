// llmrun serve: the OpenAI-compatible HTTP server over one bundle.
#include "commands.h"
#include "options.h"

#include "server/access.h"
#include "server/http_server.h"
#include "server/kv_event_publisher.h"
#include "server/memory_trimmer.h"
#include "server/reasoning.h"
#include "server/served_model.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <pthread.h>
#include <thread>
#include <unistd.h>

namespace llmrun {
namespace {

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

int serve(const llmserve::ServeOptions &options) {
  llmserve::limit_malloc_arenas();
  // SIGINT and SIGTERM are taken by a thread of their own (sigwait), so
  // every other thread, started after this, has them blocked. A client that
  // hangs up must not kill the server with SIGPIPE.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  // Before the model loads, so that a missing key file fails at once.
  const std::string api_key = llmserve::resolve_api_key(options.api_key, options.api_key_file);
  llmserve::ServedModel model(options);
  llmserve::EngineConfig config = model.engine_config(options);
  llmserve::Engine engine(model.executor, config);
  llmserve::EngineStats stats = engine.stats();
  const int64_t kv_tokens = int64_t(stats.num_kv_blocks) * model.executor.kv_cache_spec().block_size;
  std::fprintf(stderr, "INFO device: %s\n", model.loaded.description.c_str());
  std::fprintf(stderr,
               "INFO model %s: %s, %s parameters, vocabulary %lld, weights from %s\n"
               "INFO KV cache (%s): %d blocks of %d tokens (%s tokens, %s bytes); "
               "max_model_len %d, "
               "so at most %.1f full-length requests at once; max_num_seqs %d\n",
               model.name.c_str(), model.config.architecture.c_str(),
               with_commas(model.num_parameters).c_str(), (long long)model.config.vocab_size,
               model.loaded.weights_source.c_str(), stats.kv_cache_dtype.c_str(),
               stats.num_kv_blocks,
               model.executor.kv_cache_spec().block_size, with_commas(kv_tokens).c_str(),
               with_commas(kv_tokens * model.executor.kv_cache_spec().bytes_per_token).c_str(),
               config.max_model_len, double(kv_tokens) / config.max_model_len,
               config.max_num_seqs);

  std::unique_ptr<llmserve::KvEventPublisher> kv_events;
  if (!options.kv_events_endpoint.empty()) {
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    llmserve::KvEventsConfig events{options.kv_events_endpoint, options.kv_events_topic,
                                    stats.kv_block_size,
                                    model.loaded.device == llmserve::Device::Cuda ? "GPU" : "CPU"};
    if (events.topic.empty())
      events.topic = std::string("kv@") + host + "@" + model.name;
    kv_events = std::make_unique<llmserve::KvEventPublisher>(events);
    std::fprintf(stderr, "INFO KV events on %s, topic '%s'\n", events.endpoint.c_str(),
                 events.topic.c_str());
  }
  const int32_t max_in_flight = options.max_num_seqs + options.max_queued_requests;
  llmserve::EngineLoop loop(engine, max_in_flight, kv_events.get());
  // Structured output: the grammars of the last 64 distinct response
  // formats stay compiled.
  llmserve::GrammarCache grammars(model.grammar_vocabulary(config), 64);
  llmserve::ModelInfo info{model.name, config.max_model_len, &model.tokenizer,
                           model.chat_template ? &*model.chat_template : nullptr,
                           max_in_flight, &grammars};
  info.tool_call_format = options.tool_call_parser.empty()
                              ? llmserve::detect_tool_call_format(model.tokenizer.chat_template())
                              : *llmserve::tool_call_format_named(options.tool_call_parser);
  info.thinks = llmserve::template_thinks(model.tokenizer.chat_template());
  llmserve::HttpServerConfig http;
  http.api_key = api_key;
  // A thread for each request in flight (generation, tokenization), and a
  // few for requests the engine will refuse.
  http.limits.max_handlers = max_in_flight + 8;
  http.limits.read_timeout = std::chrono::seconds(options.http_read_timeout_seconds);
  http.limits.write_timeout = std::chrono::seconds(options.http_write_timeout_seconds);
  http.limits.max_header_bytes = static_cast<size_t>(options.max_request_head_bytes);
  http.limits.max_body_bytes = static_cast<size_t>(options.max_request_body_bytes);
  http.limits.max_connections = options.max_connections;
  http.limits.max_connections_per_client = options.max_connections_per_client;
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
    std::fprintf(stderr, "INFO %s: stopping; requests in flight have %d s to finish\n",
                 strsignal(signal), options.shutdown_grace_seconds);
    server.shutdown(std::chrono::seconds(options.shutdown_grace_seconds));
  });
  server.listen();
  listening_ended = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  std::fprintf(stderr, "INFO stopped\n");
  return 0;
}

} // namespace

Command add_serve_command(CLI::App &llmrun) {
  auto options = std::make_shared<llmserve::ServeOptions>();
  CLI::App *command =
      llmrun.add_subcommand("serve", "serve a bundle over the OpenAI API (HTTP)");
  add_serve_options(*command, *options);
  command->footer("Serves the OpenAI API (/v1/completions, /v1/chat/completions, /v1/models),\n"
                  "/tokenize, /detokenize, /health and /metrics. SIGINT or SIGTERM stops it.");
  return {command, [options] { return serve(*options); }};
}

} // namespace llmrun
