// The OpenAI-compatible HTTP front end over the event-driven listener
// (http_listener.h): routes, the API-key and Host checks, JSON and SSE
// responses, OpenAI-shaped errors, and a graceful stop. Generation requests
// run on threads of their own, waiting on their OutputQueue while the
// EngineLoop runs the model.
#ifndef LLMSERVE_SERVER_HTTP_SERVER_H
#define LLMSERVE_SERVER_HTTP_SERVER_H

#include "server/engine_loop.h"
#include "server/http_listener.h"
#include "server/memory_trimmer.h"
#include "server/openai_protocol.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace llmserve {

struct HttpServerConfig {
  // Non-empty: /v1/*, /tokenize and /detokenize need "Authorization: Bearer
  // <key>"; /health and /metrics stay open.
  std::string api_key;
  // Connections, deadlines and body size (HttpLimits::max_handlers should
  // exceed the EngineLoop's in-flight limit, so that limit answers 503).
  HttpLimits limits;
};

class HttpServer {
public:
  HttpServer(ModelInfo model, EngineLoop &loop, HttpServerConfig config);
  ~HttpServer();

  // Binds host:port (port 0: a free one) and returns the port. Throws
  // std::runtime_error when the address cannot be bound.
  int bind(const std::string &host, int port);
  // Serves until shutdown(). Call after bind().
  void listen();
  // Any thread: refuses new generation requests (503, and /ready answers
  // 503), lets those in flight run for up to `grace`, aborts what is left,
  // lets their responses end, then makes listen() return.
  void shutdown(std::chrono::milliseconds grace);

private:
  std::optional<HttpResponse> screen(const HttpRequest &request) const;
  HttpRoute route(const HttpRequest &request);
  void generate(HttpExchange &exchange, Endpoint endpoint);
  void stream(HttpExchange &exchange, const GenerateRequest &request);

  ModelInfo model_;
  EngineLoop &loop_;
  HttpServerConfig config_;
  int64_t start_time_;
  std::atomic<bool> draining_{false};
  // Bound to a loopback address: requests must name localhost (access.h).
  bool loopback_only_ = false;
  std::atomic<int> active_streams_{0};
  MemoryTrimmer trimmer_;
  HttpListener listener_;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_HTTP_SERVER_H
