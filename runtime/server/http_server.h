// The OpenAI-compatible HTTP front end (cpp-httplib): routes, API-key
// check, JSON and SSE responses, OpenAI-shaped errors, and a graceful stop.
// Each connection is served on a thread of its own; generation requests
// wait on their OutputQueue while the EngineLoop runs the model.
#ifndef LLMSERVE_SERVER_HTTP_SERVER_H
#define LLMSERVE_SERVER_HTTP_SERVER_H

#include "server/engine_loop.h"
#include "server/memory_trimmer.h"
#include "server/openai_protocol.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace httplib {
class Server;
struct Request;
struct Response;
} // namespace httplib

namespace llmserve {

struct HttpServerConfig {
  // Non-empty: /v1/*, /tokenize and /detokenize need "Authorization: Bearer
  // <key>"; /health and /metrics stay open.
  std::string api_key;
  // Connections served at once; beyond it they wait to be accepted. Should
  // exceed the EngineLoop's in-flight limit, so that limit answers 503
  // rather than connections queueing unseen.
  int num_threads = 64;
  size_t max_body_bytes = 16u << 20;
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
  // Any thread: refuses new generation requests (503, and /health answers
  // 503), lets those in flight run for up to `grace`, aborts what is left,
  // lets their responses end, then makes listen() return.
  void shutdown(std::chrono::milliseconds grace);

private:
  void add_routes();
  void generate(const nlohmann::json &body, std::string_view text, const httplib::Request &req,
                httplib::Response &res, Endpoint endpoint);
  void stream(const httplib::Request &req, httplib::Response &res,
              const GenerateRequest &request);

  ModelInfo model_;
  EngineLoop &loop_;
  HttpServerConfig config_;
  std::unique_ptr<httplib::Server> server_;
  int64_t start_time_;
  std::atomic<bool> draining_{false};
  // Bound to a loopback address: requests must name localhost (access.h).
  bool loopback_only_ = false;
  std::atomic<int> active_streams_{0};
  MemoryTrimmer trimmer_;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_HTTP_SERVER_H
