#include "bench/serve_benchmark.h"

#include "bench/arrivals.h"
#include "bench/progress_bar.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace llmserve::bench {

BenchmarkRun run_serve(const OpenAiClient &client, const std::vector<BenchRequest> &requests,
              const Arrivals &arrivals, const std::string &label) {
  if (arrivals.max_concurrency < 0)
    throw std::invalid_argument("--max-concurrency " + std::to_string(arrivals.max_concurrency) +
                                ": expected 0 (unlimited) or more");
  const std::vector<double> send_times =
      arrival_times(static_cast<int64_t>(requests.size()), arrivals.request_rate,
                    arrivals.burstiness, arrivals.seed);
  const int64_t limit = arrivals.max_concurrency > 0
                            ? arrivals.max_concurrency
                            : static_cast<int64_t>(requests.size());
  BenchmarkRun run;
  run.results.resize(requests.size());
  ProgressBar progress(label, static_cast<int64_t>(requests.size()));

  // One thread per request in flight: the HTTP client blocks on its stream.
  std::mutex mutex;
  std::condition_variable slot_freed;
  int64_t in_flight = 0;
  std::vector<std::thread> threads;
  threads.reserve(requests.size());
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < requests.size(); ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::duration<double>(send_times[i])));
    {
      std::unique_lock<std::mutex> lock(mutex);
      slot_freed.wait(lock, [&] { return in_flight < limit; });
      run.peak_concurrency = std::max(run.peak_concurrency, ++in_flight);
    }
    threads.emplace_back([&, i] {
      run.results[i] = client.complete(requests[i]);
      progress.advance();
      std::lock_guard<std::mutex> lock(mutex);
      --in_flight;
      slot_freed.notify_one();
    });
  }
  for (std::thread &t : threads)
    t.join();
  run.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

} // namespace llmserve::bench
