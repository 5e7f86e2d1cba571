// The engine thread and the queues between it and the HTTP threads. HTTP
// threads submit requests and wait on an OutputQueue; the engine thread
// steps the engine and hands each RequestOutput to the queue of the HTTP
// request it belongs to.
#ifndef LLMSERVE_SERVER_ENGINE_LOOP_H
#define LLMSERVE_SERVER_ENGINE_LOOP_H

#include "core/engine.h"
#include "server/kv_event_publisher.h"
#include "server/metrics.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <vector>

namespace llmserve {

// The outputs of the engine requests of one HTTP request, in step order.
class OutputQueue {
public:
  // Everything that arrived since the last call, waiting up to `timeout`
  // for the first; empty on timeout.
  std::vector<RequestOutput> pop(std::chrono::milliseconds timeout);
  void push(std::vector<RequestOutput> outputs);

private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<RequestOutput> pending_;
};

// Thrown by submit when max_in_flight requests are already in the engine.
struct QueueFullError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Submission {
  std::vector<int32_t> prompt;
  SamplingParams params;
};

class EngineLoop {
public:
  // Starts the engine thread. At most `max_in_flight` engine requests may be
  // unfinished at once. `kv_events`, when given, gets the engine's KV events
  // after every step, and must outlive the loop.
  EngineLoop(Engine &engine, int32_t max_in_flight, KvEventPublisher *kv_events = nullptr);
  // Aborts whatever is unfinished and joins the thread.
  ~EngineLoop();

  // Adds all `requests` or none: throws QueueFullError if they do not fit
  // now, std::invalid_argument if they never can (more than max_in_flight)
  // or from Engine::add_request. Returns their ids, in
  // order; their outputs go to `outputs`.
  std::vector<uint64_t> submit(std::vector<Submission> requests,
                               std::shared_ptr<OutputQueue> outputs);
  // Ends requests at the next step (reason abort or stop); their final
  // outputs still arrive.
  void abort(const std::vector<uint64_t> &ids);
  void finish(uint64_t id);
  // Aborts every unfinished request.
  void abort_all();

  int32_t num_in_flight() const;
  std::string render_metrics(const std::string &model_name) const {
    return metrics_.render(engine_.stats(), model_name);
  }
  Engine &engine() { return engine_; }

private:
  void run();

  Engine &engine_;
  const int32_t max_in_flight_;
  KvEventPublisher *const kv_events_;
  Metrics metrics_;

  mutable std::mutex mutex_; // guards routes_
  std::unordered_map<uint64_t, std::shared_ptr<OutputQueue>> routes_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

} // namespace llmserve

#endif // LLMSERVE_SERVER_ENGINE_LOOP_H
