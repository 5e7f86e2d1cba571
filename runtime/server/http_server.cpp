#include "server/http_server.h"

#include "server/access.h"

#include "server/connection_socket.h"
#include "server/generation.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <functional>
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

void send_json(httplib::Response &res, int status, const json &body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response &res, int status, const std::string &message,
                const std::string &param = "", const std::string &code = "") {
  send_json(res, status, error_body(status, message, param, code));
}

// Runs a handler, turning what it throws into an OpenAI-shaped error.
template <typename Handler>
void guarded(httplib::Response &res, Handler handler) {
  try {
    handler();
  } catch (const ApiError &e) {
    send_error(res, e.status, e.what(), e.param, e.code);
  } catch (const QueueFullError &e) {
    res.set_header("Retry-After", "1");
    send_error(res, 503, e.what());
  } catch (const std::invalid_argument &e) {
    send_error(res, 400, e.what());
  } catch (const std::exception &e) {
    send_error(res, 500, e.what());
  }
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

// httplib 0.11 listens with a backlog of 5 connections, too few when many
// clients connect at once: the kernel then drops or resets the rest.
class Listener : public httplib::Server {
public:
  void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }
};

std::string sse(const json &event) { return "data: " + dump(event) + "\n\n"; }

const char *status_message(int status) {
  switch (status) {
  case 400:
    return "malformed HTTP request";
  case 404:
    return "no such route";
  case 413:
    return "the request body is too large";
  default:
    return "HTTP error";
  }
}

} // namespace

HttpServer::HttpServer(ModelInfo model, EngineLoop &loop, HttpServerConfig config)
    : model_(std::move(model)), loop_(loop), config_(std::move(config)),
      server_(std::make_unique<Listener>()), start_time_(unix_seconds()) {
  int threads = config_.num_threads;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_payload_max_length(config_.max_body_bytes);
  server_->set_tcp_nodelay(true);
  // httplib's default adds SO_REUSEPORT, which would let a second server
  // bind the same port and split its connections with the first.
  server_->set_socket_options([](socket_t socket) {
    int yes = 1;
    ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_->set_logger([](const httplib::Request &req, const httplib::Response &res) {
    std::fprintf(stderr, "INFO %s:%d \"%s %s %s\" %d\n", req.remote_addr.c_str(),
                 req.remote_port, req.method.c_str(), req.path.c_str(), req.version.c_str(),
                 res.status);
  });
  // Statuses httplib sets itself (unknown route, body too large, malformed
  // request) get a JSON body too; ours already have one.
  server_->set_error_handler([](const httplib::Request &req, httplib::Response &res) {
    if (res.body.empty() && !res.content_provider_)
      send_error(res, res.status,
                 std::string(status_message(res.status)) + ": " + req.method + " " + req.path);
  });
  server_->set_exception_handler(
      [](const httplib::Request &, httplib::Response &res, std::exception_ptr) {
        send_error(res, 500, "internal error");
      });
  server_->set_pre_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
    if (loopback_only_ && (!loopback_host_header(req.get_header_value("Host")) ||
                           !loopback_origin(req.get_header_value("Origin")))) {
      send_error(res, 403,
                 "this server listens on a loopback address and answers requests for "
                 "localhost only (Host and Origin); bind another --host to serve others",
                 "", "forbidden_host");
      return httplib::Server::HandlerResponse::Handled;
    }
    const bool needs_key = req.path.rfind("/v1/", 0) == 0 || req.path == "/tokenize" ||
                           req.path == "/detokenize";
    if (config_.api_key.empty() || !needs_key ||
        authorization_matches(req.get_header_value("Authorization"), config_.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 401, "missing or wrong API key: send 'Authorization: Bearer <key>'", "",
               "invalid_api_key");
    return httplib::Server::HandlerResponse::Handled;
  });
  add_routes();
}

HttpServer::~HttpServer() = default;

void HttpServer::add_routes() {
  using Req = httplib::Request;
  using Res = httplib::Response;
  // POST handlers read the body themselves: httplib would refuse bodies
  // over 8 KiB sent as application/x-www-form-urlencoded, which is what
  // `curl -d` says JSON is unless told otherwise. The size limit is checked
  // on the bytes as they arrive, so it holds for chunked bodies too, and a
  // compressed body, whose size after inflating nothing bounds, is refused.
  // Handlers get the parsed body and its text.
  using Handler = std::function<void(const json &, std::string_view, const Req &, Res &)>;
  auto post = [this](const char *path, Handler f) {
    server_->Post(path, [this, f](const Req &req, Res &res, const httplib::ContentReader &reader) {
      const std::string encoding = req.get_header_value("Content-Encoding");
      if (!encoding.empty() && encoding != "identity")
        return send_error(res, 415, "Content-Encoding '" + encoding.substr(0, 64) +
                                        "' is not accepted; send the body uncompressed");
      std::string body;
      bool too_large = false;
      bool complete = reader([&](const char *data, size_t size) {
        too_large = body.size() + size > config_.max_body_bytes;
        if (!too_large)
          body.append(data, size);
        return !too_large;
      });
      // httplib sets 413 itself when Content-Length exceeds the limit.
      if (too_large || (!complete && res.status == 413))
        return send_error(res, 413, "the request body is larger than the limit of " +
                                        std::to_string(config_.max_body_bytes) + " bytes");
      if (!complete)
        return send_error(res, 400, "the request body could not be read");
      guarded(res, [&] { f(parse_json_object(body), body, req, res); });
    });
  };
  post("/v1/completions", [this](const json &body, std::string_view text, const Req &req,
                                 Res &res) {
    generate(body, text, req, res, Endpoint::kCompletions);
  });
  post("/v1/chat/completions", [this](const json &body, std::string_view text, const Req &req,
                                      Res &res) {
    generate(body, text, req, res, Endpoint::kChatCompletions);
  });
  post("/tokenize", [this](const json &body, std::string_view, const Req &, Res &res) {
    std::vector<int32_t> tokens = parse_tokenize_request(body, model_);
    send_json(res, 200, {{"tokens", tokens},
                         {"count", tokens.size()},
                         {"max_model_len", model_.max_model_len}});
  });
  post("/detokenize", [this](const json &body, std::string_view, const Req &, Res &res) {
    std::vector<int32_t> tokens = parse_detokenize_request(body, model_);
    send_json(res, 200, {{"prompt", model_.tokenizer->decode(tokens, false)}});
  });
  server_->Get("/v1/models", [this](const Req &, Res &res) {
    json card = {{"id", model_.name},       {"object", "model"},
                 {"created", start_time_},  {"owned_by", "llmserve"},
                 {"max_model_len", model_.max_model_len}};
    send_json(res, 200, {{"object", "list"}, {"data", json::array({card})}});
  });
  // Liveness: the process answers, draining or not (a probe that failed
  // while draining would have the replica killed before its grace ends).
  server_->Get("/health", [](const Req &, Res &res) { res.status = 200; });
  // Readiness: whether to send it new requests. The port opens once the
  // model is loaded, so a loading replica is not ready either.
  server_->Get("/ready", [this](const Req &, Res &res) {
    if (draining_)
      send_error(res, 503, "the server is shutting down");
    else
      res.status = 200;
  });
  server_->Get("/metrics", [this](const Req &, Res &res) {
    res.set_content(loop_.render_metrics(model_.name), "text/plain; version=0.0.4");
  });
}

void HttpServer::generate(const json &body, std::string_view text, const httplib::Request &req,
                          httplib::Response &res, Endpoint endpoint) {
  if (draining_)
    throw QueueFullError("the server is shutting down");
  GenerateRequest request = endpoint == Endpoint::kCompletions
                                ? parse_completion_request(body, model_, text)
                                : parse_chat_request(body, model_, text);
  if (request.stream)
    return stream(req, res, request);

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
  // cpp-httplib 0.11 keeps the connection's socket from handlers.
  const int client = find_connection_socket(req.local_addr, req.local_port, req.remote_addr,
                                            req.remote_port);
  while (!generation.done()) {
    // Nobody to answer: the Generation aborts what still runs. The status,
    // nginx's "client closed request", is only for the log.
    if (peer_has_closed(client))
      return send_error(res, 499, "the client closed the connection");
    if (auto deltas = generation.next(kClientCheckInterval))
      apply(*deltas);
  }
  if (!generation.error().empty())
    throw ApiError(500, "generation failed: " + generation.error());
  ResponseHeader header{response_id(endpoint), unix_seconds(), model_.name};
  send_json(res, 200, full_response(endpoint, header, choices, generation.usage()));
}

void HttpServer::stream(const httplib::Request &req, httplib::Response &res,
                        const GenerateRequest &request) {
  // Submits before the status is sent, so a full queue or a bad prompt is
  // still an error status.
  struct State {
    std::shared_ptr<Generation> generation;
    ResponseHeader header;
    Endpoint endpoint;
    bool include_usage;
    bool started = false;
  };
  auto state = std::make_shared<State>(State{
      std::make_shared<Generation>(request, model_.max_model_len, *model_.tokenizer, loop_),
      ResponseHeader{response_id(request.endpoint), unix_seconds(), model_.name},
      request.endpoint, request.include_usage});

  // Writes what is ready. Returns false when the client has gone: httplib
  // then closes the connection and drops `state`, whose Generation aborts
  // what still runs.
  auto write_ready = [state](httplib::DataSink &sink) {
    Generation &generation = *state->generation;
    auto write = [&](const std::string &text) { return sink.write(text.data(), text.size()); };
    auto write_deltas = [&](const std::vector<Generation::Delta> &deltas) {
      for (const Generation::Delta &d : deltas)
        if (!write(sse(chunk(state->endpoint, state->header, d.index, d.text, d.finish_reason,
                             false, state->include_usage, d.logprobs, d.tool_calls,
                             d.reasoning))))
          return false;
      return true;
    };
    if (!state->started) {
      state->started = true;
      if (state->endpoint == Endpoint::kChatCompletions)
        for (int32_t i = 0; i < generation.num_choices(); ++i)
          if (!write(sse(chunk(state->endpoint, state->header, i, "", "", true,
                               state->include_usage))))
            return false;
      return write_deltas(generation.start());
    }
    if (generation.done()) {
      if (!generation.error().empty() &&
          !write(sse(error_body(500, "generation failed: " + generation.error()))))
        return false;
      if (state->include_usage &&
          !write(sse(usage_chunk(state->endpoint, state->header, generation.usage()))))
        return false;
      if (!write("data: [DONE]\n\n"))
        return false;
      sink.done();
      return true;
    }
    // An SSE comment when nothing comes for a while: a client that has gone
    // is noticed when the write fails, even before the first token.
    std::optional<std::vector<Generation::Delta>> deltas = generation.next(kPollInterval);
    return deltas ? write_deltas(*deltas) : write(": waiting\n\n");
  };
  // Nothing may escape into httplib's thread: an error ends the stream.
  auto provider = [write_ready](size_t, httplib::DataSink &sink) {
    try {
      return write_ready(sink);
    } catch (const std::exception &e) {
      std::string event = sse(error_body(500, e.what()));
      sink.write(event.data(), event.size());
      return false;
    }
  };
  auto release = [this](bool) { --active_streams_; };
  ++active_streams_;
  res.set_header("Cache-Control", "no-cache");
  // HTTP/1.0 has no chunked encoding: the body ends when the connection does.
  if (req.version == "HTTP/1.0")
    res.set_content_provider("text/event-stream", provider, release);
  else
    res.set_chunked_content_provider("text/event-stream", provider, release);
}

int HttpServer::bind(const std::string &host, int port) {
  int bound = port == 0 ? server_->bind_to_any_port(host)
                        : (server_->bind_to_port(host, port) ? port : -1);
  if (bound <= 0)
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port));
  loopback_only_ = is_loopback_bind(host);
  static_cast<Listener &>(*server_).widen_backlog();
  return bound;
}

void HttpServer::listen() { server_->listen_after_bind(); }

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
  server_->stop();
}

} // namespace llmserve
