#include "server/http_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A listener on a free loopback port, served on a thread: /now answers on
// the I/O thread, /later streams three pieces from a handler thread, /flood
// writes until its client stops reading.
class Listener {
public:
  explicit Listener(HttpLimits limits)
      : listener_(
            limits, [](const HttpRequest &r) -> std::optional<HttpResponse> {
              if (r.header("X-Refuse").empty())
                return std::nullopt;
              return HttpResponse{403, "text/plain", "refused", {}};
            },
            [this](const HttpRequest &r) { return route(r); },
            [](int status, const std::string &message) {
              return HttpResponse{status, "text/plain", message, {}};
            }) {
    port_ = listener_.bind("127.0.0.1", 0);
    thread_ = std::thread([this] { listener_.run(); });
  }
  ~Listener() {
    listener_.stop();
    thread_.join();
  }
  int port() const { return port_; }

private:
  HttpRoute route(const HttpRequest &r) {
    if (r.path() == "/now")
      return {HttpResponse{200, "text/plain", "now:" + r.message.body(), {}}, {}};
    if (r.path() == "/later")
      return {std::nullopt, [](HttpExchange &e) {
                e.begin_stream("text/plain", {});
                for (const char *piece : {"a", "b", "c"})
                  e.write(piece);
                e.end_stream();
              }};
    // Writes until the client stops reading and a write gives up.
    if (r.path() == "/flood")
      return {std::nullopt, [](HttpExchange &e) {
                e.begin_stream("text/plain", {});
                const std::string piece(1 << 16, 'x');
                while (e.write(piece)) {
                }
              }};
    return {HttpResponse{404, "text/plain", "none", {}}, {}};
  }

  HttpListener listener_;
  int port_ = 0;
  std::thread thread_;
};

int connect_to(int port, const char *source = "127.0.0.1") {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  EXPECT_EQ(bind(s, reinterpret_cast<sockaddr *>(&from), sizeof from), 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  EXPECT_EQ(connect(s, reinterpret_cast<sockaddr *>(&to), sizeof to), 0);
  timeval timeout{10, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return s;
}

void send_text(int s, const std::string &text) {
  ASSERT_EQ(send(s, text.data(), text.size(), MSG_NOSIGNAL), ssize_t(text.size()));
}

// Reads until `end` has arrived (or the connection ends).
std::string read_until(int s, const std::string &end) {
  std::string got;
  char buffer[4096];
  while (got.find(end) == std::string::npos) {
    ssize_t n = recv(s, buffer, sizeof buffer, 0);
    if (n <= 0)
      break;
    got.append(buffer, size_t(n));
  }
  return got;
}

TEST(HttpListener, AnswersNowAndLaterOnOneKeptAliveConnection) {
  Listener server({});
  int s = connect_to(server.port());
  send_text(s, "POST /now HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_THAT(read_until(s, "now:hi"), StartsWith("HTTP/1.1 200 OK\r\n"));
  send_text(s, "GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(read_until(s, "0\r\n\r\n"),
              HasSubstr("Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n\r\n"));
  // Two requests sent at once are answered in order.
  send_text(s, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\nGET /now HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string both = read_until(s, "now:");
  EXPECT_THAT(both, StartsWith("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_THAT(both, HasSubstr("HTTP/1.1 200 OK\r\n"));
  close(s);
}

TEST(HttpListener, RefusesOnTheHeadAndClosesAfterErrors) {
  Listener server({});
  int s = connect_to(server.port());
  send_text(s, "POST /now HTTP/1.1\r\nHost: x\r\nX-Refuse: 1\r\nContent-Length: 5\r\n\r\nhello");
  const std::string refused = read_until(s, "refused");
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 403 Forbidden\r\n"));
  EXPECT_THAT(refused, HasSubstr("Connection: close\r\n"));
  EXPECT_EQ(read_until(s, "never"), "") << "the server closed the connection";
  close(s);

  s = connect_to(server.port());
  send_text(s, "BAD\r\n\r\n");
  EXPECT_THAT(read_until(s, "never"), StartsWith("HTTP/1.1 400 Bad Request\r\n"));
  close(s);
}

TEST(HttpListener, LimitsBodiesHeadsTimeAndConnectionsPerClient) {
  HttpLimits limits;
  limits.max_body_bytes = 8;
  limits.max_header_bytes = 256;
  limits.read_timeout = std::chrono::seconds(1);
  limits.max_connections_per_client = 2;
  Listener server(limits);

  int s = connect_to(server.port());
  send_text(s, "POST /now HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               "5\r\n12345\r\n5\r\n67890\r\n0\r\n\r\n");
  EXPECT_THAT(read_until(s, "never"), StartsWith("HTTP/1.1 413 Payload Too Large\r\n"));
  close(s);

  s = connect_to(server.port());
  send_text(s, "GET /now HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(300, 'a') + "\r\n\r\n");
  EXPECT_THAT(read_until(s, "never"), StartsWith("HTTP/1.1 431 "));
  close(s);

  s = connect_to(server.port());
  send_text(s, "GET /now HTTP/1.1\r\n");
  EXPECT_THAT(read_until(s, "never"), StartsWith("HTTP/1.1 408 Request Timeout\r\n"));
  close(s);

  int first = connect_to(server.port()), second = connect_to(server.port());
  int third = connect_to(server.port());
  send_text(third, "GET /now HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string refused = read_until(third, "never");
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  EXPECT_THAT(refused, HasSubstr("too many connections from 127.0.0.1"));
  int other = connect_to(server.port(), "127.0.0.2");
  send_text(other, "GET /now HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(read_until(other, "now:"), StartsWith("HTTP/1.1 200 OK\r\n"));
  for (int fd : {first, second, third, other})
    close(fd);
}

// Stopping ends a handler blocked on a client that does not read at once,
// not after its write timeout.
TEST(HttpListener, StopDoesNotWaitForAClientThatDoesNotRead) {
  HttpLimits limits;
  limits.write_timeout = std::chrono::seconds(60);
  auto server = std::make_unique<Listener>(limits);
  int s = connect_to(server->port());
  send_text(s, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(500)); // the buffers fill
  const auto start = std::chrono::steady_clock::now();
  server.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  close(s);
}

} // namespace
} // namespace llmserve
