#include "server/http_exchange.h"

#include <boost/beast/http/status.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>

namespace llmserve {

namespace http = boost::beast::http;

std::string HttpRequest::header(std::string_view name) const {
  auto it = message.find(boost::beast::string_view(name.data(), name.size()));
  return it == message.end() ? std::string() : std::string(it->value());
}

std::string HttpRequest::path() const {
  std::string_view target(message.target().data(), message.target().size());
  return std::string(target.substr(0, target.find('?')));
}

std::string response_head(const HttpRequest &request, int status,
                          const std::string &content_type, long long length, bool keep_alive,
                          const std::vector<std::pair<std::string, std::string>> &headers) {
  const bool http11 = request.message.version() >= 11;
  const auto reason = http::obsolete_reason(static_cast<http::status>(status));
  std::string head = std::string(http11 ? "HTTP/1.1 " : "HTTP/1.0 ") + std::to_string(status) +
                     " " + std::string(reason.data(), reason.size()) + "\r\n";
  if (!content_type.empty())
    head += "Content-Type: " + content_type + "\r\n";
  if (length >= 0)
    head += "Content-Length: " + std::to_string(length) + "\r\n";
  else if (http11)
    head += "Transfer-Encoding: chunked\r\n";
  if (!keep_alive)
    head += "Connection: close\r\n";
  for (const auto &[name, value] : headers)
    head += name + ": " + value + "\r\n";
  return head + "\r\n";
}

HttpExchange::HttpExchange(const HttpRequest &request, int socket,
                           std::chrono::seconds write_timeout)
    : request_(request), socket_(socket), write_timeout_(write_timeout),
      keep_alive_(request.message.version() >= 11 && request.message.keep_alive()) {}

bool HttpExchange::send(std::string_view bytes) {
  const auto deadline = std::chrono::steady_clock::now() + write_timeout_;
  while (!broken_ && !bytes.empty()) {
    const ssize_t sent =
        ::send(socket_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      bytes.remove_prefix(static_cast<size_t>(sent));
      continue;
    }
    if (sent < 0 && errno == EINTR)
      continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{socket_, POLLOUT, 0};
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && left.count() > 0 &&
        ::poll(&p, 1, static_cast<int>(left.count())) > 0 && !(p.revents & (POLLERR | POLLHUP)))
      continue;
    broken_ = true;
  }
  if (broken_)
    keep_alive_ = false;
  return !broken_;
}

bool HttpExchange::respond(const HttpResponse &response) {
  status_ = response.status;
  return send(response_head(request_, response.status, response.content_type,
                            static_cast<long long>(response.body.size()), keep_alive_,
                            response.headers) +
              response.body);
}

bool HttpExchange::begin_stream(const std::string &content_type,
                                const std::vector<std::pair<std::string, std::string>> &headers) {
  status_ = 200;
  chunked_ = request_.message.version() >= 11;
  // HTTP/1.0 has no chunked encoding: the body ends when the connection does.
  if (!chunked_)
    keep_alive_ = false;
  return send(response_head(request_, 200, content_type, -1, keep_alive_, headers));
}

bool HttpExchange::write(std::string_view piece) {
  if (piece.empty())
    return !broken_;
  if (!chunked_)
    return send(piece);
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
  return send(std::string(size) + std::string(piece) + "\r\n");
}

bool HttpExchange::end_stream() { return !chunked_ || send("0\r\n\r\n"); }

void HttpExchange::abandon() {
  status_ = 499;
  keep_alive_ = false;
}

bool HttpExchange::client_gone() const {
  pollfd p{socket_, POLLRDHUP, 0};
  return broken_ ||
         (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0);
}

} // namespace llmserve
