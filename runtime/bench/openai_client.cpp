#include "bench/openai_client.h"

#include "bench/sse.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <stdexcept>

namespace llmserve::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Error bodies go into failure messages, which are grouped by text: keep
// them short.
std::string excerpt(const std::string &text) {
  constexpr size_t kMax = 200;
  return text.size() <= kMax ? text : text.substr(0, kMax) + "...";
}

void set_timeouts(httplib::Client &client, double seconds) {
  const auto timeout = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::duration<double>(seconds));
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
}

// Reads one stream: every chunk that carries choices is an output chunk.
class StreamReader {
public:
  StreamReader(bool chat, Clock::time_point start, RequestResult &result)
      : chat_(chat), start_(start), last_(start), result_(result) {}

  // False once the stream is known bad (the transfer is then cancelled).
  bool feed(const char *data, size_t size) {
    const Clock::time_point now = Clock::now();
    for (const std::string &payload : parser_.feed(std::string_view(data, size)))
      if (!on_event(payload, now))
        return false;
    return true;
  }

  // Fills in the result once the transfer is over; `transfer_error` is
  // non-empty if it failed (also when feed() cancelled it: the stream's own
  // error is kept).
  void finish(const std::string &transfer_error) {
    if (result_.error.empty()) {
      if (!transfer_error.empty())
        result_.error = "stream broken: " + transfer_error;
      else if (!done_)
        result_.error = "stream ended before data: [DONE]";
      else if (num_chunks_ == 0)
        result_.error = "stream carried no output";
    }
    result_.success = result_.error.empty();
    result_.latency = seconds_between(start_, last_);
    if (result_.output_len == 0)
      result_.output_len = num_chunks_; // no usage: one token per chunk
  }

private:
  bool fail(const std::string &why) {
    result_.error = why;
    return false;
  }

  bool on_event(const std::string &payload, Clock::time_point now) {
    if (payload == "[DONE]") {
      done_ = true;
      return true;
    }
    if (done_)
      return fail("data after data: [DONE]");
    const nlohmann::json chunk = nlohmann::json::parse(payload, nullptr, false);
    if (chunk.is_discarded() || !chunk.is_object())
      return fail("malformed stream chunk: " + excerpt(payload));
    if (chunk.contains("error"))
      return fail("error in stream: " + excerpt(chunk["error"].dump()));
    const auto choices = chunk.find("choices");
    if (choices != chunk.end() && choices->is_array() && !choices->empty()) {
      const nlohmann::json &choice = choices->front();
      const nlohmann::json *text = chat_ ? (choice.contains("delta") ? &choice["delta"] : nullptr)
                                         : &choice;
      if (!choice.is_object() || !text || !text->is_object())
        return fail("malformed stream chunk: " + excerpt(payload));
      if (num_chunks_ == 0)
        result_.ttft = seconds_between(start_, now);
      else
        result_.itl.push_back(seconds_between(last_, now));
      last_ = now;
      ++num_chunks_;
    }
    const auto usage = chunk.find("usage");
    if (usage != chunk.end() && usage->is_object()) {
      const auto tokens = usage->find("completion_tokens");
      if (tokens != usage->end() && tokens->is_number_integer())
        result_.output_len = tokens->get<int32_t>();
    }
    return true;
  }

  bool chat_;
  Clock::time_point start_, last_;
  RequestResult &result_;
  SseParser parser_;
  int32_t num_chunks_ = 0;
  bool done_ = false;
};

} // namespace

OpenAiClient::OpenAiClient(ClientOptions options) : options_(std::move(options)) {
  const std::string &url = options_.url;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos ||
      (url.compare(0, scheme_end, "http") != 0 && url.compare(0, scheme_end, "https") != 0) ||
      scheme_end + 3 == url.size())
    throw std::invalid_argument("--url '" + url + "': expected http://HOST[:PORT]");
  const size_t path_start = url.find('/', scheme_end + 3);
  origin_ = url.substr(0, path_start);
  if (path_start != std::string::npos)
    path_prefix_ = url.substr(path_start);
  while (!path_prefix_.empty() && path_prefix_.back() == '/')
    path_prefix_.pop_back();
  if (options_.endpoint.empty() || options_.endpoint.front() != '/')
    throw std::invalid_argument("--endpoint '" + options_.endpoint +
                                "': expected a path such as /v1/completions");
  const std::string chat_suffix = "chat/completions";
  chat_ = options_.endpoint.size() >= chat_suffix.size() &&
          options_.endpoint.compare(options_.endpoint.size() - chat_suffix.size(),
                                    chat_suffix.size(), chat_suffix) == 0;
}

std::string OpenAiClient::body(const BenchRequest &request) const {
  nlohmann::json body = {
      {"model", options_.model},
      {"max_tokens", request.output_len},
      {"temperature", 0},
      {"stream", true},
      {"stream_options", {{"include_usage", true}}},
  };
  if (chat_)
    body["messages"] = {{{"role", "user"}, {"content", request.prompt}}};
  else
    body["prompt"] = request.prompt;
  if (options_.ignore_eos)
    body["ignore_eos"] = true; // vLLM's and SGLang's extension
  return body.dump();
}

RequestResult OpenAiClient::complete(const BenchRequest &request) const {
  RequestResult result;
  result.prompt_len = static_cast<int32_t>(request.prompt_tokens.size());
  httplib::Client client(origin_);
  set_timeouts(client, options_.read_timeout_s);

  httplib::Request http;
  http.method = "POST";
  http.path = path_prefix_ + options_.endpoint;
  http.body = body(request);
  http.set_header("Content-Type", "application/json");
  http.set_header("Accept", "text/event-stream");

  const Clock::time_point start = Clock::now();
  StreamReader reader(chat_, start, result);
  int status = 0;
  std::string error_body;
  http.response_handler = [&](const httplib::Response &response) {
    status = response.status;
    return true;
  };
  http.content_receiver = [&](const char *data, size_t size, uint64_t, uint64_t) {
    if (status != 200) {
      error_body.append(data, size);
      return true;
    }
    return reader.feed(data, size);
  };
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client.send(http, response, error);
  if (status != 0 && status != 200) {
    result.error = "HTTP " + std::to_string(status) + ": " +
                   excerpt(error_body.empty() ? response.body : error_body);
    return result;
  }
  if (status == 0) { // no response at all
    result.error = "request failed: " + httplib::to_string(error);
    return result;
  }
  reader.finish(sent ? std::string() : httplib::to_string(error));
  return result;
}

std::string OpenAiClient::first_model() const {
  httplib::Client client(origin_);
  set_timeouts(client, options_.read_timeout_s);
  const std::string url = origin_ + path_prefix_ + "/v1/models";
  const httplib::Result response = client.Get(path_prefix_ + "/v1/models");
  if (!response)
    throw std::runtime_error("GET " + url + ": " + httplib::to_string(response.error()) +
                             " (is the server running? --model skips this query)");
  if (response->status != 200)
    throw std::runtime_error("GET " + url + ": HTTP " + std::to_string(response->status));
  const nlohmann::json models = nlohmann::json::parse(response->body, nullptr, false);
  if (models.is_object() && models.contains("data") && models["data"].is_array() &&
      !models["data"].empty() && models["data"][0].is_object() &&
      models["data"][0].contains("id") && models["data"][0]["id"].is_string())
    return models["data"][0]["id"].get<std::string>();
  throw std::runtime_error("GET " + url + ": no model id in the response: " +
                           excerpt(response->body));
}

} // namespace llmserve::bench
