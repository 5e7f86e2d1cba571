// A tiny OpenAI-compatible server for the client tests, on 127.0.0.1 at a
// free port. The prompt picks the behaviour, so one server covers the good
// stream and every way a server can fail: "ok" streams kChunks chunks, the
// first after kFirstChunkDelay and then one every kChunkGap, then a usage
// chunk and [DONE]; "empty" sends only the usage chunk and [DONE].
#ifndef LLMSERVE_TEST_UNIT_BENCH_MOCK_OPENAI_SERVER_H
#define LLMSERVE_TEST_UNIT_BENCH_MOCK_OPENAI_SERVER_H

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace llmserve::bench::testing {

class MockOpenAiServer {
public:
  static constexpr auto kFirstChunkDelay = std::chrono::milliseconds(120);
  static constexpr auto kChunkGap = std::chrono::milliseconds(40);
  static constexpr int kChunks = 5;

  MockOpenAiServer() {
    server_.Get("/v1/models", [](const httplib::Request &, httplib::Response &res) {
      res.set_content(R"({"object":"list","data":[{"id":"mock-model","object":"model"}]})",
                      "application/json");
    });
    server_.Post("/v1/completions", [this](const httplib::Request &req, httplib::Response &res) {
      complete(req, res, false);
    });
    server_.Post("/v1/chat/completions",
                 [this](const httplib::Request &req, httplib::Response &res) {
                   complete(req, res, true);
                 });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~MockOpenAiServer() {
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int peak_in_flight() const { return peak_in_flight_; }
  nlohmann::json last_body() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_body_;
  }

private:
  static std::string event(const nlohmann::json &chunk) { return "data: " + chunk.dump() + "\n\n"; }

  void complete(const httplib::Request &req, httplib::Response &res, bool chat) {
    const nlohmann::json body = nlohmann::json::parse(req.body);
    {
      // Requests arrive on the server's threads at once.
      std::lock_guard<std::mutex> lock(mutex_);
      last_body_ = body;
    }
    const std::string prompt =
        chat ? body["messages"][0]["content"].get<std::string>() : body["prompt"].get<std::string>();
    if (prompt == "http500") {
      res.status = 500;
      res.set_content(R"({"error":{"message":"engine exploded"}})", "application/json");
      return;
    }
    const int n = prompt == "empty" ? 0 : std::min(kChunks, body["max_tokens"].get<int>());
    auto in_flight = std::make_shared<bool>(false);
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, prompt, chat, n, in_flight, sent = 0](size_t, httplib::DataSink &sink) mutable {
          if (!*in_flight) {
            *in_flight = true;
            const int now = ++in_flight_;
            for (int peak = peak_in_flight_; now > peak && !peak_in_flight_.compare_exchange_weak(peak, now);)
              ;
          }
          auto finish = [&] {
            --in_flight_;
            sink.done();
            return true;
          };
          std::this_thread::sleep_for(sent == 0 ? kFirstChunkDelay : kChunkGap);
          if (prompt == "stall") {
            std::this_thread::sleep_for(std::chrono::seconds(2));
            return finish();
          }
          if (prompt == "drop" && sent == 2) {
            --in_flight_;
            return false; // the connection closes mid-stream
          }
          if (sent < n) {
            std::string chunk;
            if (prompt == "badjson" && sent == 1)
              chunk = "data: {\"choices\": [\n\n";
            else if (prompt == "error" && sent == 1)
              chunk = event({{"error", {{"message", "out of memory"}}}});
            else if (chat)
              chunk = event({{"choices", {{{"index", 0}, {"delta", {{"content", "x"}}}}}}});
            else
              chunk = event({{"choices", {{{"index", 0}, {"text", "x"}}}}});
            sink.write(chunk.data(), chunk.size());
            ++sent;
            return true;
          }
          std::string tail;
          if (prompt != "nousage")
            tail += event({{"choices", nlohmann::json::array()},
                           {"usage", {{"prompt_tokens", 3}, {"completion_tokens", n}}}});
          if (prompt != "nodone")
            tail += "data: [DONE]\n\n";
          sink.write(tail.data(), tail.size());
          return finish();
        });
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> in_flight_{0}, peak_in_flight_{0};
  mutable std::mutex mutex_;
  nlohmann::json last_body_; // guarded by mutex_
};

} // namespace llmserve::bench::testing

#endif
