// Runs the workgroups of one dispatch across a fixed set of threads, the way a
// GPU runs the blocks of a grid. The calling thread works too, and run()
// returns once every workgroup has finished.
#ifndef LLMSERVE_CPU_THREAD_POOL_H
#define LLMSERVE_CPU_THREAD_POOL_H

#include "llmserve/abi.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace llmserve {

struct KernelLaunch {
  abi::CpuKernelFn kernel = nullptr;
  void *const *bindings = nullptr;
  const int64_t *push_constants = nullptr;
  int64_t grid[3] = {0, 0, 0}; // workgroups in x, y, z
};

class ThreadPool {
public:
  // `num_threads` counts the caller; 0 means one per hardware thread.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls launch.kernel once for every workgroup of launch.grid, in any order
  // and on any thread. Not reentrant: one run at a time.
  void run(const KernelLaunch &launch);

private:
  void worker_loop();
  // Claims and runs workgroups of the current launch until none are left.
  void work();

  std::vector<std::thread> workers_;

  // The launch being run, written by run() while no worker is in work().
  KernelLaunch launch_;
  int64_t total_ = 0; // workgroups in launch_.grid
  std::atomic<int64_t> next_{0};

  // Bumped by run() to wake the workers; `live_` says whether the launch it
  // announces still has workgroups to claim, `busy_` how many workers are
  // inside work(). run() returns only when busy_ is 0 again.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> live_{false};
  std::atomic<int> busy_{0};
  std::atomic<bool> stop_{false};

  // Workers that found no launch while spinning sleep here.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
};

} // namespace llmserve

#endif // LLMSERVE_CPU_THREAD_POOL_H
