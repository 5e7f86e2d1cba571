#include "cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace llmserve {

namespace {

// How long an idle worker spins before it sleeps. A step runs hundreds of
// dispatches back to back; spinning across the short gaps between them saves
// a futex wake-up per worker per dispatch, sleeping between steps saves CPU.
constexpr auto kSpinTime = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

} // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads < 0)
    throw std::invalid_argument("thread pool: " + std::to_string(num_threads) +
                                " threads");
  if (num_threads == 0)
    num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  workers_.reserve(num_threads - 1);
  for (int i = 1; i < num_threads; ++i)
    workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

void ThreadPool::run(const KernelLaunch &launch) {
  int64_t total = 1;
  for (int64_t n : launch.grid) {
    if (n < 0 || __builtin_mul_overflow(total, n, &total))
      throw std::invalid_argument(
          "thread pool: bad grid [" + std::to_string(launch.grid[0]) + ", " +
          std::to_string(launch.grid[1]) + ", " + std::to_string(launch.grid[2]) +
          "]");
  }
  if (total == 0)
    return;

  launch_ = launch;
  total_ = total;
  next_.store(0, std::memory_order_relaxed);
  if (workers_.empty() || total == 1) {
    work();
    return;
  }

  live_.store(true);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  work();
  // Every workgroup is claimed. A worker that enters after this sees live_
  // false and leaves without touching launch_; wait for those still inside.
  live_.store(false);
  for (int spins = 0; busy_.load() != 0; ++spins) {
    if (spins < 1024)
      cpu_relax();
    else
      std::this_thread::yield();
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
    for (int spins = 1; generation_.load() == seen && !stop_.load(); ++spins) {
      cpu_relax();
      if (spins % 256 == 0 && std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_.load() != seen || stop_.load(); });
        sleepers_.fetch_sub(1);
      }
    }
    if (stop_.load())
      return;
    seen = generation_.load();
    // Registering in busy_ before reading live_ pairs with run() clearing
    // live_ before reading busy_: one of the two always sees the other.
    busy_.fetch_add(1);
    if (live_.load())
      work();
    busy_.fetch_sub(1);
  }
}

void ThreadPool::work() {
  const int64_t gx = launch_.grid[0], gy = launch_.grid[1];
  for (;;) {
    const int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= total_)
      return;
    launch_.kernel(launch_.bindings, launch_.push_constants, i % gx,
                   (i / gx) % gy, i / (gx * gy));
  }
}

} // namespace llmserve
