#include "server/http_exchange.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace llmserve {
namespace {

namespace http = boost::beast::http;

HttpRequest request(unsigned version, bool keep_alive = true) {
  HttpRequest r;
  r.message.method(http::verb::post);
  r.message.target("/v1/completions?x=1");
  r.message.version(version);
  r.message.set(http::field::host, "localhost");
  if (!keep_alive)
    r.message.set(http::field::connection, "close");
  return r;
}

std::string read_all(int socket) {
  std::string got;
  char buffer[4096];
  for (ssize_t n; (n = ::read(socket, buffer, sizeof buffer)) > 0;)
    got.append(buffer, static_cast<size_t>(n));
  return got;
}

struct SocketPair {
  int ours, theirs;
  SocketPair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    ours = fds[0];
    theirs = fds[1];
  }
  ~SocketPair() {
    close(ours);
    if (theirs >= 0)
      close(theirs);
  }
  // Closes our end and returns everything the other end got.
  std::string received() {
    shutdown(ours, SHUT_WR);
    return read_all(theirs);
  }
};

TEST(HttpRequest, HeadersAndPath) {
  HttpRequest r = request(11);
  EXPECT_EQ(r.header("Host"), "localhost");
  EXPECT_EQ(r.header("host"), "localhost");
  EXPECT_EQ(r.header("Origin"), "");
  EXPECT_EQ(r.path(), "/v1/completions");
}

TEST(HttpExchange, AWholeResponseKeepsAnHttp11ConnectionAlive) {
  HttpRequest r = request(11);
  SocketPair pair;
  HttpExchange exchange(r, pair.ours, std::chrono::seconds(1));
  EXPECT_TRUE(exchange.respond({201, "application/json", "{}", {{"Retry-After", "1"}}}));
  EXPECT_EQ(exchange.status(), 201);
  EXPECT_TRUE(exchange.keep_alive());
  EXPECT_EQ(pair.received(), "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                             "Content-Length: 2\r\nRetry-After: 1\r\n\r\n{}");
}

TEST(HttpExchange, ConnectionCloseIsHonoured) {
  HttpRequest r = request(11, false);
  SocketPair pair;
  HttpExchange exchange(r, pair.ours, std::chrono::seconds(1));
  EXPECT_FALSE(exchange.keep_alive());
  exchange.respond({404, "", "", {}});
  EXPECT_EQ(pair.received(), "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                             "Connection: close\r\n\r\n");
}

TEST(HttpExchange, StreamsAreChunkedInHttp11AndRawInHttp10) {
  HttpRequest r11 = request(11);
  SocketPair pair11;
  HttpExchange chunked(r11, pair11.ours, std::chrono::seconds(1));
  EXPECT_TRUE(chunked.begin_stream("text/event-stream", {{"Cache-Control", "no-cache"}}));
  EXPECT_TRUE(chunked.write("data: 1\n\n"));
  EXPECT_TRUE(chunked.write(""));
  EXPECT_TRUE(chunked.end_stream());
  EXPECT_TRUE(chunked.keep_alive());
  EXPECT_EQ(pair11.received(), "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n"
                               "9\r\ndata: 1\n\n\r\n0\r\n\r\n");

  HttpRequest r10 = request(10);
  SocketPair pair10;
  HttpExchange raw(r10, pair10.ours, std::chrono::seconds(1));
  EXPECT_TRUE(raw.begin_stream("text/event-stream", {}));
  EXPECT_TRUE(raw.write("data: 1\n\n"));
  EXPECT_TRUE(raw.end_stream());
  EXPECT_FALSE(raw.keep_alive()) << "the connection's end ends the body";
  EXPECT_EQ(pair10.received(), "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Connection: close\r\n\r\ndata: 1\n\n");
}

TEST(HttpExchange, AGoneClientFailsWritesAndIsSeen) {
  HttpRequest r = request(11);
  SocketPair pair;
  HttpExchange exchange(r, pair.ours, std::chrono::seconds(1));
  EXPECT_FALSE(exchange.client_gone());
  close(pair.theirs);
  pair.theirs = -1;
  EXPECT_TRUE(exchange.client_gone());
  EXPECT_FALSE(exchange.respond({200, "", "x", {}}));
  EXPECT_FALSE(exchange.keep_alive());
  exchange.abandon();
  EXPECT_EQ(exchange.status(), 499);
}

TEST(HttpExchange, AClientThatDoesNotReadTimesOut) {
  HttpRequest r = request(11);
  SocketPair pair;
  HttpExchange exchange(r, pair.ours, std::chrono::seconds(1));
  EXPECT_TRUE(exchange.begin_stream("text/event-stream", {}));
  const std::string piece(1 << 16, 'x');
  const auto start = std::chrono::steady_clock::now();
  bool written = true;
  for (int i = 0; i < 1000 && written; ++i)
    written = exchange.write(piece);
  EXPECT_FALSE(written) << "the socket buffers filled and the write timed out";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(exchange.client_gone());
}

} // namespace
} // namespace llmserve
