#include "cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include <sched.h>

namespace llmserve {

namespace {

// How long an idle worker spins before it sleeps. A step runs hundreds of
// dispatches back to back; spinning across the short gaps between them saves
// a futex wake-up per worker per dispatch, sleeping between steps saves CPU.
constexpr auto kSpinTime = std::chrono::microseconds(100);

// The index half of a ticket: kClosed means no workgroup may be claimed.
constexpr uint64_t kClosed = 0xffffffff;
constexpr int64_t kMaxWorkgroups = static_cast<int64_t>(kClosed) - 1;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

} // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads < 0)
    throw std::invalid_argument("thread pool: " + std::to_string(num_threads) +
                                " threads");
  if (num_threads == 0)
    num_threads = usable_cpus();
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
  bool bad = false;
  for (int64_t n : launch.grid)
    bad |= n < 0 || __builtin_mul_overflow(total, n, &total);
  if (bad || total > kMaxWorkgroups)
    throw std::invalid_argument(
        "thread pool: bad grid [" + std::to_string(launch.grid[0]) + ", " +
        std::to_string(launch.grid[1]) + ", " + std::to_string(launch.grid[2]) +
        "] (at most " + std::to_string(kMaxWorkgroups) + " workgroups)");
  if (total == 0)
    return;
  const int64_t gx = launch.grid[0], gy = launch.grid[1];
  if (workers_.empty() || total == 1) {
    for (int64_t i = 0; i < total; ++i)
      launch.kernel(launch.bindings, launch.push_constants, i % gx, (i / gx) % gy,
                    i / (gx * gy));
    return;
  }

  // Close the finished launch to late claims, then publish the new one.
  const uint64_t generation = (ticket_.load() >> 32) + 1;
  ticket_.store(generation << 32 | kClosed);
  kernel_.store(launch.kernel, std::memory_order_relaxed);
  bindings_.store(launch.bindings, std::memory_order_relaxed);
  push_constants_.store(launch.push_constants, std::memory_order_relaxed);
  grid_x_.store(gx, std::memory_order_relaxed);
  grid_y_.store(gy, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  total_.store(total);
  ticket_.store(generation << 32);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  work();
  // Every workgroup is claimed; wait for those still running elsewhere.
  for (int spins = 0; done_.load(std::memory_order_acquire) != total; ++spins) {
    if (spins < 1024)
      cpu_relax();
    else
      std::this_thread::yield();
  }
}

void ThreadPool::worker_loop() {
  for (;;) {
    const uint64_t seen = work();
    auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
    for (int spins = 1; ticket_.load() == seen && !stop_.load(); ++spins) {
      cpu_relax();
      if (spins % 256 == 0 && std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return ticket_.load() != seen || stop_.load(); });
        sleepers_.fetch_sub(1);
      }
    }
    if (stop_.load())
      return;
  }
}

uint64_t ThreadPool::work() {
  uint64_t ticket = ticket_.load();
  for (;;) {
    const int64_t i = static_cast<int64_t>(ticket & kClosed);
    if (i >= total_.load())
      return ticket;
    if (!ticket_.compare_exchange_weak(ticket, ticket + 1))
      continue; // another claim or a new launch came first; `ticket` is fresh
    // Workgroup i is ours, and run() rewrites the launch only after it is
    // done, so the launch read here is the one the ticket belongs to.
    const int64_t gx = grid_x_.load(std::memory_order_relaxed);
    const int64_t gy = grid_y_.load(std::memory_order_relaxed);
    kernel_.load(std::memory_order_relaxed)(bindings_.load(std::memory_order_relaxed),
                                            push_constants_.load(std::memory_order_relaxed),
                                            i % gx, (i / gx) % gy, i / (gx * gy));
    done_.fetch_add(1, std::memory_order_release);
    ticket = ticket_.load();
  }
}

} // namespace llmserve
