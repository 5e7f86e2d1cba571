#include "server/http_server.h"

#include "server/access.h"
#include "server/generation.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

namespace llmserve {
namespace {

using json = nlohmann::json;

// How long a stream stays silent before it sends a comment, and how often a
// non-streamed request checks that its client is still there.
constexpr auto kPollInterval = std::chrono::milliseconds(1000);
constexpr auto kClientCheckInterval = std::chrono::milliseconds(100);

// Generated text can hold invalid UTF-8 (a model may sample bytes that form
// no character); it is sent with U+FFFD in their place.
std::string dump(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

HttpResponse json_response(int status, const json &body) {
  return {status, "application/json", dump(body), {}};
}

HttpResponse error_response(int status, const std::string &message,
                            const std::string &param = "", const std::string &code = "") {
  return json_response(status, error_body(status, message, param, code));
}

// Runs a handler that answers `exchange`, turning what it throws before it
// answered into an OpenAI-shaped error.
template <typename Handler>
void guarded(HttpExchange &exchange, Handler handler) {
  std::optional<HttpResponse> error;
  try {
    handler();
  } catch (const ApiError &e) {
    error = error_response(e.status, e.what(), e.param, e.code);
  } catch (const QueueFullError &e) {
    error = error_response(503, e.what());
    error->headers.emplace_back("Retry-After", "1");
  } catch (const std::invalid_argument &e) {
    error = error_response(400, e.what());
  } catch (const std::exception &e) {
    error = error_response(500, e.what());
  }
  if (error && exchange.status() == 0)
    exchange.respond(*error);
}

std::string response_id(Endpoint endpoint) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random()));
  return (endpoint == Endpoint::kCompletions ? "cmpl-" : "chatcmpl-") + std::string(hex);
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string sse(const json &event) { return "data: " + dump(event) + "\n\n"; }

} // namespace

HttpServer::HttpServer(ModelInfo model, EngineLoop &loop, HttpServerConfig config)
    : model_(std::move(model)), loop_(loop), config_(std::move(config)),
      start_time_(unix_seconds()),
      listener_(
          config_.limits, [this](const HttpRequest &request) { return screen(request); },
          [this](const HttpRequest &request) { return route(request); },
          [](int status, const std::string &message) {
            return error_response(status, message);
          }) {}

HttpServer::~HttpServer() = default;

std::optional<HttpResponse> HttpServer::screen(const HttpRequest &request) const {
  if (loopback_only_ &&
      (!loopback_host_header(request.header("Host")) || !loopback_origin(request.header("Origin"))))
    return error_response(403,
                          "this server listens on a loopback address and answers requests for "
                          "localhost only (Host and Origin); bind another --host to serve others",
                          "", "forbidden_host");
  const std::string path = request.path();
  const bool needs_key =
      path.rfind("/v1/", 0) == 0 || path == "/tokenize" || path == "/detokenize";
  if (!config_.api_key.empty() && needs_key &&
      !authorization_matches(request.header("Authorization"), config_.api_key))
    return error_response(401, "missing or wrong API key: send 'Authorization: Bearer <key>'",
                          "", "invalid_api_key");
  // A compressed body could inflate past any limit: refused unread.
  const std::string encoding = request.header("Content-Encoding");
  if (!encoding.empty() && encoding != "identity")
    return error_response(415, "Content-Encoding '" + encoding.substr(0, 64) +
                                   "' is not accepted; send the body uncompressed");
  return std::nullopt;
}

HttpRoute HttpServer::route(const HttpRequest &request) {
  using boost::beast::http::verb;
  const std::string path = request.path();
  if (request.message.method() == verb::post) {
    // The body as JSON, whatever Content-Type says (`curl -d` calls JSON
    // form data unless told otherwise).
    auto post = [this](auto handler) {
      return HttpRoute{std::nullopt, [handler](HttpExchange &exchange) {
                         guarded(exchange, [&] { handler(exchange); });
                       }};
    };
    if (path == "/v1/completions")
      return post([this](HttpExchange &e) { generate(e, Endpoint::kCompletions); });
    if (path == "/v1/chat/completions")
      return post([this](HttpExchange &e) { generate(e, Endpoint::kChatCompletions); });
    if (path == "/tokenize")
      return post([this](HttpExchange &e) {
        std::vector<int32_t> tokens =
            parse_tokenize_request(parse_json_object(e.request().message.body()), model_);
        e.respond(json_response(200, {{"tokens", tokens},
                                      {"count", tokens.size()},
                                      {"max_model_len", model_.max_model_len}}));
      });
    if (path == "/detokenize")
      return post([this](HttpExchange &e) {
        std::vector<int32_t> tokens =
            parse_detokenize_request(parse_json_object(e.request().message.body()), model_);
        e.respond(json_response(200, {{"prompt", model_.tokenizer->decode(tokens, false)}}));
      });
  } else if (request.message.method() == verb::get) {
    if (path == "/v1/models") {
      json card = {{"id", model_.name},      {"object", "model"},
                   {"created", start_time_}, {"owned_by", "llmserve"},
                   {"max_model_len", model_.max_model_len}};
      return {json_response(200, {{"object", "list"}, {"data", json::array({card})}}), {}};
    }
    // Liveness: the process answers, draining or not (a probe that failed
    // while draining would have the replica killed before its grace ends).
    if (path == "/health")
      return {HttpResponse{200, "", "", {}}, {}};
    // Readiness: whether to send it new requests. The port opens once the
    // model is loaded, so a loading replica is not ready either.
    if (path == "/ready")
      return {draining_ ? error_response(503, "the server is shutting down")
                        : HttpResponse{200, "", "", {}},
              {}};
    if (path == "/metrics")
      return {HttpResponse{200, "text/plain; version=0.0.4", loop_.render_metrics(model_.name),
                           {}},
              {}};
  }
  return {error_response(404, "no such route: " + std::string(request.message.method_string()) +
                                  " " + path),
          {}};
}

void HttpServer::generate(HttpExchange &exchange, Endpoint endpoint) {
  if (draining_)
    throw QueueFullError("the server is shutting down");
  const std::string &text = exchange.request().message.body();
  const json body = parse_json_object(text);
  GenerateRequest request = endpoint == Endpoint::kCompletions
                                ? parse_completion_request(body, model_, text)
                                : parse_chat_request(body, model_, text);
  if (request.stream)
    return stream(exchange, request);

  Generation generation(request, model_.max_model_len, *model_.tokenizer, loop_);
  std::vector<Choice> choices(generation.num_choices());
  if (request.params.logprobs >= 0)
    for (Choice &c : choices)
      c.logprobs.emplace();
  auto apply = [&](const std::vector<Generation::Delta> &deltas) {
    for (const Generation::Delta &d : deltas) {
      choices[d.index].text += d.text;
      choices[d.index].reasoning += d.reasoning;
      choices[d.index].tool_calls.insert(choices[d.index].tool_calls.end(),
                                         d.tool_calls.begin(), d.tool_calls.end());
      if (d.logprobs)
        choices[d.index].logprobs->insert(choices[d.index].logprobs->end(),
                                          d.logprobs->begin(), d.logprobs->end());
      if (!d.finish_reason.empty())
        choices[d.index].finish_reason = d.finish_reason;
    }
  };
  apply(generation.start());
  while (!generation.done()) {
    // Nobody to answer: the Generation aborts what still runs.
    if (exchange.client_gone())
      return exchange.abandon();
    if (auto deltas = generation.next(kClientCheckInterval))
      apply(*deltas);
  }
  if (!generation.error().empty())
    throw ApiError(500, "generation failed: " + generation.error());
  ResponseHeader header{response_id(endpoint), unix_seconds(), model_.name};
  exchange.respond(json_response(200, full_response(endpoint, header, choices,
                                                    generation.usage())));
}

void HttpServer::stream(HttpExchange &exchange, const GenerateRequest &request) {
  // Submitted before the status is sent, so a full queue or a bad prompt is
  // still an error status.
  Generation generation(request, model_.max_model_len, *model_.tokenizer, loop_);
  const ResponseHeader header{response_id(request.endpoint), unix_seconds(), model_.name};
  const Endpoint endpoint = request.endpoint;
  ++active_streams_;
  struct Release {
    std::atomic<int> &streams;
    ~Release() { --streams; }
  } release{active_streams_};

  // Each write returns false once the client has gone; returning then drops
  // the Generation, which aborts what still runs.
  auto write = [&](const std::string &text) { return exchange.write(text); };
  auto write_deltas = [&](const std::vector<Generation::Delta> &deltas) {
    for (const Generation::Delta &d : deltas)
      if (!write(sse(chunk(endpoint, header, d.index, d.text, d.finish_reason, false,
                           request.include_usage, d.logprobs, d.tool_calls, d.reasoning))))
        return false;
    return true;
  };
  if (!exchange.begin_stream("text/event-stream", {{"Cache-Control", "no-cache"}}))
    return;
  try {
    if (endpoint == Endpoint::kChatCompletions)
      for (int32_t i = 0; i < generation.num_choices(); ++i)
        if (!write(sse(chunk(endpoint, header, i, "", "", true, request.include_usage))))
          return;
    if (!write_deltas(generation.start()))
      return;
    while (!generation.done()) {
      // An SSE comment when nothing comes for a while: a client that has
      // gone is noticed when the write fails, even before the first token.
      std::optional<std::vector<Generation::Delta>> deltas = generation.next(kPollInterval);
      if (!(deltas ? write_deltas(*deltas) : write(": waiting\n\n")))
        return;
    }
    if (!generation.error().empty() &&
        !write(sse(error_body(500, "generation failed: " + generation.error()))))
      return;
    if (request.include_usage && !write(sse(usage_chunk(endpoint, header, generation.usage()))))
      return;
    if (write("data: [DONE]\n\n"))
      exchange.end_stream();
  } catch (const std::exception &e) {
    // The status is sent: the error ends the stream as an event.
    write(sse(error_body(500, e.what())));
    exchange.end_stream();
  }
}

int HttpServer::bind(const std::string &host, int port) {
  const int bound = listener_.bind(host, port);
  loopback_only_ = is_loopback_bind(host);
  return bound;
}

void HttpServer::listen() { listener_.run(); }

void HttpServer::shutdown(std::chrono::milliseconds grace) {
  draining_ = true;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while ((active_streams_ > 0 || loop_.num_in_flight() > 0) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  loop_.abort_all();
  // Streams end with their aborted choices; give them a moment to be sent.
  for (int i = 0; i < 500 && (active_streams_ > 0 || loop_.num_in_flight() > 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  listener_.stop();
}

} // namespace llmserve
