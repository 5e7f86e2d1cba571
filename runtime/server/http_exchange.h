// One HTTP request and its answer, written from a thread of its own. The
// listener (http_listener.h) reads the request; a handler that may take long
// (a generation) gets it as an HttpExchange and answers on the connection's
// socket directly: a whole response, or a stream of pieces (chunked for
// HTTP/1.1; for HTTP/1.0 the connection's end ends the body). Writes wait for
// a slow client at most the write timeout, after which the client counts as
// gone.
#ifndef LLMSERVE_SERVER_HTTP_EXCHANGE_H
#define LLMSERVE_SERVER_HTTP_EXCHANGE_H

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmserve {

struct HttpRequest {
  boost::beast::http::request<boost::beast::http::string_body> message;
  std::string peer; // "address:port", for the log
  // A header's value, or "" when absent.
  std::string header(std::string_view name) const;
  std::string path() const; // the target without its query
};

struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// The bytes of a response head: status line, Content-Type, the body's
// framing (Content-Length `length`, or chunked when `length` < 0 and the
// request is HTTP/1.1), Connection: close unless `keep_alive`, then
// `headers`.
std::string response_head(const HttpRequest &request, int status,
                          const std::string &content_type, long long length, bool keep_alive,
                          const std::vector<std::pair<std::string, std::string>> &headers);

class HttpExchange {
public:
  HttpExchange(const HttpRequest &request, int socket, std::chrono::seconds write_timeout);

  const HttpRequest &request() const { return request_; }

  // The whole response. Returns false when the client has gone.
  bool respond(const HttpResponse &response);
  // A streamed response: its head, then pieces as they come, then the end.
  bool begin_stream(const std::string &content_type,
                    const std::vector<std::pair<std::string, std::string>> &headers);
  bool write(std::string_view piece);
  bool end_stream();
  // No response: the client has gone (logged as 499, nginx's "client closed
  // request").
  void abandon();

  // Whether the peer has closed its end or the connection broke.
  bool client_gone() const;
  int status() const { return status_; }
  // Whether the connection may carry another request after this one.
  bool keep_alive() const { return keep_alive_; }

private:
  bool send(std::string_view bytes);

  const HttpRequest &request_;
  int socket_;
  std::chrono::seconds write_timeout_;
  int status_ = 0;
  bool keep_alive_;
  bool chunked_ = false;
  bool broken_ = false;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_HTTP_EXCHANGE_H
