#include "server/http_listener.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include <sys/resource.h>
#include <sys/socket.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace llmserve {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

// After an error answered before the request was read whole, the client may
// still be sending: its bytes are read and dropped for a while, so that the
// connection's close does not reset it before it reads the answer.
constexpr size_t kMaxDrainBytes = size_t{64} << 20;
constexpr auto kDrainTime = std::chrono::seconds(5);

// Lets the process hold `connections` sockets if the hard limit allows.
void raise_open_file_limit(int connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return;
  const rlim_t wanted = static_cast<rlim_t>(connections) + 1024;
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

} // namespace

void limit_request_parser(http::request_parser<http::string_body> &parser,
                          const HttpLimits &limits) {
  parser.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
  parser.body_limit(limits.max_body_bytes);
}

class HttpListener::Session : public std::enable_shared_from_this<Session> {
public:
  Session(HttpListener &listener, tcp::socket socket, std::string client)
      : listener_(listener), stream_(std::move(socket)), deadline_(stream_.get_executor()),
        client_(std::move(client)) {
    beast::error_code ec;
    const tcp::endpoint remote = stream_.socket().remote_endpoint(ec);
    request_.peer = ec ? client_ : client_ + ":" + std::to_string(remote.port());
  }
  ~Session() { listener_.release(client_); }

  void start() { read_request(); }

  // Answers `response` and closes, reading nothing.
  void refuse(HttpResponse response) {
    request_.message = {};
    request_.message.version(11);
    send(std::move(response), false);
  }

private:
  void read_request() {
    parser_.emplace();
    limit_request_parser(*parser_, listener_.limits_);
    // Not the stream's own timeout, which closes the socket: the 408 must
    // still go out.
    stream_.expires_never();
    timed_out_ = false;
    reading_ = ++read_;
    deadline_.expires_after(listener_.limits_.read_timeout);
    deadline_.async_wait([self = shared_from_this(), read = read_](beast::error_code ec) {
      if (ec || self->reading_ != read)
        return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              self->on_header(ec);
                            });
  }

  void on_header(beast::error_code ec) {
    if (ec)
      return fail(ec);
    request_.message = parser_->get();
    if (std::optional<HttpResponse> refusal = listener_.screen_(request_)) {
      end_read();
      return send(std::move(*refusal), false);
    }
    if (request_.message.version() >= 11 &&
        beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
      out_ = "HTTP/1.1 100 Continue\r\n\r\n";
      return net::async_write(stream_, net::buffer(out_),
                              [self = shared_from_this()](beast::error_code ec, size_t) {
                                if (ec)
                                  return self->close();
                                self->read_body();
                              });
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->on_body(ec);
                     });
  }

  void on_body(beast::error_code ec) {
    if (ec)
      return fail(ec);
    end_read();
    request_.message = parser_->release();
    parser_.reset();
    HttpRoute route = listener_.router_(request_);
    if (route.now)
      return send(std::move(*route.now), keep_alive());
    const int socket = stream_.socket().native_handle();
    const uint64_t id = listener_.start_handler(socket);
    if (id == 0) {
      HttpResponse busy = listener_.error_(503, "the server is busy; retry later");
      busy.headers.emplace_back("Retry-After", "1");
      return send(std::move(busy), keep_alive());
    }
    // The handler writes on the socket while no I/O of this session is
    // pending; it hands the connection back when it is done.
    std::thread([self = shared_from_this(), handler = std::move(route.later), socket,
                 id]() mutable {
      HttpListener &listener = self->listener_;
      bool keep_alive = false;
      {
        HttpExchange exchange(self->request_, socket, listener.limits_.write_timeout);
        try {
          handler(exchange);
        } catch (const std::exception &e) {
          if (exchange.status() == 0)
            exchange.respond(listener.error_(500, e.what()));
        }
        self->log(exchange.status());
        keep_alive = exchange.keep_alive() && exchange.status() != 0;
      }
      Session *session = self.get();
      net::post(session->stream_.get_executor(), [self = std::move(self), keep_alive] {
        if (keep_alive)
          self->read_request();
        else
          self->close();
      });
      listener.end_handler(id);
    }).detach();
  }

  // The request's read is over: its deadline no longer applies.
  void end_read() {
    reading_ = 0;
    deadline_.cancel();
  }

  bool keep_alive() const {
    return request_.message.version() >= 11 && request_.message.keep_alive();
  }

  // An HTTP-level error while reading a request.
  void fail(beast::error_code ec) {
    end_read();
    if (timed_out_)
      return send(listener_.error_(408, "the request was not received within " +
                                            std::to_string(listener_.limits_.read_timeout.count()) +
                                            " s"),
                  false);
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset)
      return close();
    if (ec == http::error::body_limit)
      return send(listener_.error_(413, "the request body is larger than the limit of " +
                                            std::to_string(listener_.limits_.max_body_bytes) +
                                            " bytes"),
                  false);
    if (ec == http::error::header_limit)
      return send(listener_.error_(431, "the request head is larger than the limit of " +
                                            std::to_string(listener_.limits_.max_header_bytes) +
                                            " bytes"),
                  false);
    send(listener_.error_(400, "malformed HTTP request: " + ec.message()), false);
  }

  // Answers on an I/O thread; then reads the next request, or closes.
  void send(HttpResponse response, bool keep_alive) {
    stream_.expires_after(listener_.limits_.write_timeout);
    out_ = response_head(request_, response.status, response.content_type,
                         static_cast<long long>(response.body.size()), keep_alive,
                         response.headers) +
           response.body;
    log(response.status);
    net::async_write(stream_, net::buffer(out_),
                     [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                       if (ec)
                         return self->close();
                       if (keep_alive)
                         return self->read_request();
                       self->linger();
                     });
  }

  // Closes the sending side, then reads and drops what the client still
  // sends for a while before closing.
  void linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    drain_.resize(64 << 10);
    stream_.expires_after(kDrainTime);
    drain();
  }

  void drain() {
    stream_.async_read_some(net::buffer(drain_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->drained_ += n;
                              if (ec || self->drained_ > kMaxDrainBytes)
                                return self->close();
                              self->drain();
                            });
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  // One line per response; "-" for what a request that was not read whole
  // did not say.
  void log(int status) const {
    const auto &m = request_.message;
    auto or_dash = [](beast::string_view text) {
      return text.empty() ? std::string("-") : std::string(text);
    };
    std::fprintf(stderr, "INFO %s \"%s %s HTTP/%u.%u\" %d\n", request_.peer.c_str(),
                 or_dash(m.method_string()).c_str(), or_dash(m.target()).c_str(),
                 m.version() / 10, m.version() % 10, status);
  }

  HttpListener &listener_;
  beast::tcp_stream stream_;
  net::steady_timer deadline_; // of the request being read
  uint64_t read_ = 0;           // requests begun
  uint64_t reading_ = 0;        // the one being read, or 0
  bool timed_out_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest request_;
  std::string client_;
  std::string out_;
  std::vector<char> drain_;
  size_t drained_ = 0;
};

HttpListener::HttpListener(HttpLimits limits, Screen screen, Router router, ErrorResponse error)
    : limits_(limits), screen_(std::move(screen)), router_(std::move(router)),
      error_(std::move(error)), acceptor_(net::make_strand(io_)) {}

HttpListener::~HttpListener() { stop(); }

int HttpListener::bind(const std::string &host, int port) {
  beast::error_code ec;
  tcp::resolver resolver(io_);
  const auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (!ec && !endpoints.empty()) {
    const tcp::endpoint endpoint = endpoints.begin()->endpoint();
    acceptor_.open(endpoint.protocol(), ec);
    // Not SO_REUSEPORT: a second server on the same port must fail.
    if (!ec)
      acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec)
      acceptor_.bind(endpoint, ec);
    if (!ec)
      acceptor_.listen(net::socket_base::max_listen_connections, ec);
  }
  if (ec || endpoints.empty())
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) +
                             (ec ? ": " + ec.message() : ""));
  raise_open_file_limit(limits_.max_connections);
  return acceptor_.local_endpoint().port();
}

void HttpListener::run() {
  accept();
  std::vector<std::thread> threads;
  for (int i = 1; i < limits_.io_threads; ++i)
    threads.emplace_back([this] { io_.run(); });
  io_.run();
  for (std::thread &t : threads)
    t.join();
  std::unique_lock<std::mutex> lock(mutex_);
  handlers_done_.wait(lock, [&] { return handler_sockets_.empty(); });
}

void HttpListener::stop() {
  if (stopping_.exchange(true))
    return;
  net::post(acceptor_.get_executor(), [this] {
    beast::error_code ec;
    acceptor_.close(ec);
  });
  io_.stop();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &[id, socket] : handler_sockets_)
    ::shutdown(socket, SHUT_RDWR);
}

void HttpListener::accept() {
  acceptor_.async_accept(net::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping_ || !acceptor_.is_open())
      return;
    if (ec) {
      // Out of file descriptors: wait a moment rather than spin.
      auto timer = std::make_shared<net::steady_timer>(acceptor_.get_executor(),
                                                       std::chrono::milliseconds(50));
      return timer->async_wait([this, timer](beast::error_code) { accept(); });
    }
    beast::error_code address_error;
    const std::string client =
        socket.remote_endpoint(address_error).address().to_string(address_error);
    // Stream chunks go out as written, not held back for a full segment.
    socket.set_option(tcp::no_delay(true), address_error);
    const bool admitted = admit(client);
    auto session = std::make_shared<Session>(*this, std::move(socket), client);
    if (admitted) {
      session->start();
    } else {
      HttpResponse refusal = error_(503, "too many connections from " + client);
      refusal.headers.emplace_back("Retry-After", "1");
      session->refuse(std::move(refusal));
    }
    accept();
  });
}

bool HttpListener::admit(const std::string &client) {
  std::lock_guard<std::mutex> lock(mutex_);
  int &from_client = connections_by_client_[client];
  ++from_client;
  ++connections_;
  return from_client <= limits_.max_connections_per_client &&
         connections_ <= limits_.max_connections;
}

void HttpListener::release(const std::string &client) {
  std::lock_guard<std::mutex> lock(mutex_);
  --connections_;
  auto it = connections_by_client_.find(client);
  if (it != connections_by_client_.end() && --it->second == 0)
    connections_by_client_.erase(it);
}

uint64_t HttpListener::start_handler(int socket) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (static_cast<int>(handler_sockets_.size()) >= limits_.max_handlers)
    return 0;
  handler_sockets_.emplace(++last_handler_, socket);
  return last_handler_;
}

void HttpListener::end_handler(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  handler_sockets_.erase(id);
  handlers_done_.notify_all();
}

} // namespace llmserve
