// A streaming client of an OpenAI-compatible server (/v1/completions or
// /v1/chat/completions), timing each chunk the way vLLM's benchmark does.
#ifndef LLMSERVE_BENCH_OPENAI_CLIENT_H
#define LLMSERVE_BENCH_OPENAI_CLIENT_H

#include "bench/metrics.h"
#include "bench/workload.h"

#include <string>

namespace llmserve::bench {

struct ClientOptions {
  std::string url = "http://127.0.0.1:8000"; // scheme://host:port[/prefix]
  std::string endpoint = "/v1/completions";  // or /v1/chat/completions
  std::string model;                          // empty: the server's first model
  bool ignore_eos = false;
  double read_timeout_s = 600; // longest silence from the server
};

class OpenAiClient {
public:
  // Throws std::invalid_argument for a URL that is not http(s)://host[:port].
  explicit OpenAiClient(ClientOptions options);

  // Sends one streaming request with greedy sampling and max_tokens =
  // output_len, and measures it. Never throws: a connection error, an HTTP
  // error status, an error object or malformed JSON in the stream, or a
  // stream that ends before [DONE] is a failed result saying so.
  RequestResult complete(const BenchRequest &request) const;

  // The id of the first model of GET /v1/models. Throws std::runtime_error
  // naming the URL when there is none.
  std::string first_model() const;

  const ClientOptions &options() const { return options_; }

private:
  std::string body(const BenchRequest &request) const;

  ClientOptions options_;
  std::string origin_;      // scheme://host:port
  std::string path_prefix_; // the URL's path, before the endpoint
  bool chat_ = false;
};

} // namespace llmserve::bench

#endif // LLMSERVE_BENCH_OPENAI_CLIENT_H
