// Bytes as what a client sends on one connection: requests parsed one after
// another by the server's parser under its limits (small ones here, so that
// inputs reach them), each whole request read as the router reads it (path,
// headers) and answered with a response head. A request must keep within
// the limits, whatever its framing (Content-Length, chunked, neither).
#include "server/http_listener.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

using namespace llmserve;
namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  HttpLimits limits;
  limits.max_header_bytes = 1024;
  limits.max_body_bytes = 512;
  std::string_view rest(reinterpret_cast<const char *>(data), size);
  while (!rest.empty()) {
    http::request_parser<http::string_body> parser;
    limit_request_parser(parser, limits);
    parser.eager(true);
    boost::beast::error_code ec;
    // Bytes arrive 7 at a time, as from a slow client; what the parser
    // leaves unused (an incomplete head or chunk header) is offered again
    // with the next ones.
    size_t offered = 0;
    while (!parser.is_done() && !rest.empty()) {
      offered = std::min(rest.size(), offered + 7);
      const size_t used = parser.put(boost::asio::buffer(rest.data(), offered), ec);
      rest.remove_prefix(used);
      offered -= used;
      if (ec == http::error::need_more) {
        ec = {};
        if (offered == rest.size() && used == 0)
          return 0; // a partial request at the end of the input
        continue;
      }
      if (ec)
        return 0; // a malformed request or a limit: the connection ends
    }
    if (!parser.is_done()) {
      parser.put_eof(ec);
      if (ec)
        return 0;
    }
    HttpRequest request;
    request.message = parser.release();
    if (request.message.body().size() > limits.max_body_bytes) {
      std::fprintf(stderr, "a body of %zu bytes passed the limit\n",
                   request.message.body().size());
      std::abort();
    }
    (void)request.path();
    (void)request.header("Host");
    (void)request.header("Content-Encoding");
    (void)response_head(request, 200, "application/json", -1, request.message.keep_alive(),
                        {{"Retry-After", "1"}});
  }
  return 0;
}
