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
  // `num_threads` counts the caller; 0 means one per CPU this process may
  // run on (its affinity mask, so taskset and cpusets are respected).
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls launch.kernel once for every workgroup of launch.grid, in any order
  // and on any thread. Not reentrant: one run at a time. Throws
  // std::invalid_argument for a negative grid dimension or more than 2^32-2
  // workgroups.
  void run(const KernelLaunch &launch);

private:
  void worker_loop();
  // Claims and runs workgroups of the current launch until none are left;
  // returns the ticket it last saw.
  uint64_t work();

  std::vector<std::thread> workers_;

  // generation << 32 | index of the next workgroup to claim. A claim is a
  // compare-exchange on this word, so a worker still holding the ticket of
  // an earlier launch cannot claim from the next one.
  std::atomic<uint64_t> ticket_{0};
  // The launch of the current generation. Atomic because a worker that lags
  // behind may read it while run() writes the next; its claim then fails.
  std::atomic<abi::CpuKernelFn> kernel_{nullptr};
  std::atomic<void *const *> bindings_{nullptr};
  std::atomic<const int64_t *> push_constants_{nullptr};
  std::atomic<int64_t> grid_x_{0}, grid_y_{0};
  std::atomic<int64_t> total_{0}; // workgroups in the launch
  std::atomic<int64_t> done_{0};  // workgroups finished
  std::atomic<bool> stop_{false};

  // Workers that found nothing to claim while spinning sleep here.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
};

} // namespace llmserve

#endif // LLMSERVE_CPU_THREAD_POOL_H
