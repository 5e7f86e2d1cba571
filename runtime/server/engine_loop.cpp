#include "server/engine_loop.h"

#include <string>

namespace llmserve {

std::vector<RequestOutput> OutputQueue::pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return !pending_.empty(); });
  std::vector<RequestOutput> out;
  out.swap(pending_);
  return out;
}

void OutputQueue::push(std::vector<RequestOutput> outputs) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (RequestOutput &o : outputs)
      pending_.push_back(std::move(o));
  }
  ready_.notify_all();
}

EngineLoop::EngineLoop(Engine &engine, int32_t max_in_flight, KvEventPublisher *kv_events)
    : engine_(engine), max_in_flight_(max_in_flight), kv_events_(kv_events),
      thread_([this] { run(); }) {}

EngineLoop::~EngineLoop() {
  abort_all();
  // Let the aborts reach their queues before the thread goes.
  for (int i = 0; i < 1000 && num_in_flight() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stopping_ = true;
  thread_.join();
}

std::vector<uint64_t> EngineLoop::submit(std::vector<Submission> requests,
                                         std::shared_ptr<OutputQueue> outputs) {
  if (requests.size() > size_t(max_in_flight_))
    throw std::invalid_argument("the request needs " + std::to_string(requests.size()) +
                                " sequences (prompts times n); the server holds at most " +
                                std::to_string(max_in_flight_));
  std::lock_guard<std::mutex> lock(mutex_);
  if (routes_.size() + requests.size() > size_t(max_in_flight_))
    throw QueueFullError("the server is at its limit of " +
                         std::to_string(max_in_flight_) +
                         " requests in flight; retry later");
  std::vector<uint64_t> ids;
  try {
    for (Submission &r : requests)
      ids.push_back(engine_.add_request(std::move(r.prompt), std::move(r.params)));
  } catch (...) {
    for (uint64_t id : ids)
      engine_.abort(id);
    throw;
  }
  // Routes are added under the same lock the engine thread routes under, so
  // no output can arrive before its queue is known.
  for (uint64_t id : ids)
    routes_.emplace(id, outputs);
  return ids;
}

void EngineLoop::abort(const std::vector<uint64_t> &ids) {
  for (uint64_t id : ids)
    engine_.abort(id);
}

void EngineLoop::finish(uint64_t id) { engine_.finish(id); }

void EngineLoop::abort_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &route : routes_)
    engine_.abort(route.first);
}

int32_t EngineLoop::num_in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int32_t>(routes_.size());
}

void EngineLoop::run() {
  while (!stopping_) {
    if (!engine_.wait_for_work(std::chrono::milliseconds(50)))
      continue;
    std::vector<RequestOutput> outputs = engine_.step();
    metrics_.observe(outputs);
    metrics_.observe_step(engine_.last_step_timing());
    if (kv_events_)
      kv_events_->publish(engine_.take_kv_events());
    // Group by queue so each waiting thread is woken once per step.
    std::unordered_map<OutputQueue *, std::vector<RequestOutput>> by_queue;
    std::vector<std::shared_ptr<OutputQueue>> queues;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (RequestOutput &o : outputs) {
        auto route = routes_.find(o.id);
        if (route == routes_.end())
          continue;
        std::shared_ptr<OutputQueue> queue = route->second;
        if (o.finished)
          routes_.erase(route);
        auto &list = by_queue[queue.get()];
        if (list.empty())
          queues.push_back(std::move(queue));
        list.push_back(std::move(o));
      }
    }
    for (const auto &queue : queues)
      queue->push(std::move(by_queue[queue.get()]));
  }
}

} // namespace llmserve
