// The HTTP/1.1 connections of the server, event-driven (Boost.Beast over
// Asio): a few I/O threads read every connection's requests, so an idle or
// slow client costs a socket, not a thread. Each request is read whole
// within a deadline, its head and body within limits (the body's decoded
// bytes, whatever the transfer encoding), and at most so many connections
// come from one client address. A request is screened on its head (refused
// without reading its body), then routed: answered at once on an I/O thread
// (probes, metrics, refusals), or handed to a thread of its own that answers
// it through an HttpExchange (generations, which wait on the engine).
#ifndef LLMSERVE_SERVER_HTTP_LISTENER_H
#define LLMSERVE_SERVER_HTTP_LISTENER_H

#include "server/http_exchange.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/parser.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace llmserve {

struct HttpLimits {
  size_t max_header_bytes = size_t{16} << 10;
  size_t max_body_bytes = size_t{16} << 20;
  // From waiting for a request (an idle keep-alive connection included) to
  // the end of its body; then the connection is closed (408).
  std::chrono::seconds read_timeout{30};
  // How long one write may wait for a client that does not read.
  std::chrono::seconds write_timeout{60};
  int max_connections = 16384;
  int max_connections_per_client = 1024;
  // Requests answered on threads of their own at once; beyond, 503.
  int max_handlers = 512;
  int io_threads = 2;
};

// Sets `parser` (one request's) to the head and body limits of `limits`.
void limit_request_parser(
    boost::beast::http::request_parser<boost::beast::http::string_body> &parser,
    const HttpLimits &limits);

// What becomes of a request: an answer now (on an I/O thread), or a handler
// on a thread of its own.
struct HttpRoute {
  std::optional<HttpResponse> now;
  std::function<void(HttpExchange &)> later;
};

class HttpListener {
public:
  // Called on an I/O thread with a request's head (its body unread): a
  // refusal, answered before the connection closes, or nothing.
  using Screen = std::function<std::optional<HttpResponse>(const HttpRequest &)>;
  // Called on an I/O thread with a whole request.
  using Router = std::function<HttpRoute(const HttpRequest &)>;
  // The response to an HTTP-level error (status and what went wrong).
  using ErrorResponse = std::function<HttpResponse(int status, const std::string &message)>;

  HttpListener(HttpLimits limits, Screen screen, Router router, ErrorResponse error);
  ~HttpListener();

  // Binds host:port (port 0: a free one) and returns the port. Throws
  // std::runtime_error when the address cannot be bound.
  int bind(const std::string &host, int port);
  // Serves until stop(); returns once every handler has ended.
  void run();
  // Any thread: stops accepting and ends every connection's I/O; the
  // sockets of handlers still writing are shut down, so that a client that
  // does not read holds none of them up.
  void stop();

private:
  class Session;
  void accept();
  // Counts a connection from `client`; false when a cap is reached.
  bool admit(const std::string &client);
  void release(const std::string &client);
  // A handler answering on `socket` starts (its id; 0: too many run) or
  // ends.
  uint64_t start_handler(int socket);
  void end_handler(uint64_t id);

  const HttpLimits limits_;
  const Screen screen_;
  const Router router_;
  const ErrorResponse error_;
  std::mutex mutex_; // guards the counts below
  std::condition_variable handlers_done_;
  std::unordered_map<std::string, int> connections_by_client_;
  int connections_ = 0;
  std::unordered_map<uint64_t, int> handler_sockets_; // by handler id
  uint64_t last_handler_ = 0;
  std::atomic<bool> stopping_{false};
  // Last: its destruction ends the sessions, which release their counts.
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_HTTP_LISTENER_H
