#include "cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sched.h>

namespace llmserve {
namespace {

// bindings[0]: one atomic counter per workgroup, x fastest; push_constants:
// the grid.
void count_workgroup(void *const *bindings, const int64_t *grid, int64_t x,
                     int64_t y, int64_t z) {
  auto *counts = static_cast<std::atomic<int> *>(bindings[0]);
  counts[(z * grid[1] + y) * grid[0] + x].fetch_add(1);
}

// How often each workgroup of the grid ran.
std::vector<int> run_counted(ThreadPool &pool, int64_t gx, int64_t gy, int64_t gz) {
  const size_t n = static_cast<size_t>(gx * gy * gz);
  std::vector<std::atomic<int>> counts(n);
  void *bindings[] = {counts.data()};
  const int64_t grid[] = {gx, gy, gz};
  KernelLaunch launch;
  launch.kernel = count_workgroup;
  launch.bindings = bindings;
  launch.push_constants = grid;
  launch.grid[0] = gx;
  launch.grid[1] = gy;
  launch.grid[2] = gz;
  pool.run(launch);
  std::vector<int> ran;
  for (auto &v : counts)
    ran.push_back(v.load());
  return ran;
}

TEST(ThreadPool, RunsEveryWorkgroupExactlyOnce) {
  for (int threads : {1, 2, 4, 7}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    const int64_t grids[][3] = {{1, 1, 1}, {5, 1, 1}, {3, 4, 5}, {1, 7, 1},
                                {1, 1, 9}, {1000, 3, 1}, {2, 2, 2}};
    for (const auto &g : grids) {
      const std::vector<int> ran = run_counted(pool, g[0], g[1], g[2]);
      for (size_t i = 0; i < ran.size(); ++i)
        ASSERT_EQ(ran[i], 1) << "workgroup " << i << " of [" << g[0] << ","
                                  << g[1] << "," << g[2] << "], " << threads
                                  << " threads";
    }
  }
}

TEST(ThreadPool, SpreadsWorkAcrossThreads) {
  ThreadPool pool(4);
  // Each workgroup sleeps, so the caller cannot run them all before the
  // workers wake.
  auto slow = [](void *const *bindings, const int64_t *, int64_t x, int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    static_cast<std::atomic<std::thread::id> *>(bindings[0])[x].store(
        std::this_thread::get_id());
  };
  std::vector<std::atomic<std::thread::id>> ids(32);
  void *bindings[] = {ids.data()};
  KernelLaunch launch;
  launch.kernel = slow;
  launch.bindings = bindings;
  launch.grid[0] = 32;
  launch.grid[1] = launch.grid[2] = 1;
  pool.run(launch);
  std::set<std::thread::id> distinct;
  for (auto &id : ids)
    distinct.insert(id.load());
  EXPECT_GT(distinct.size(), 1u);
}

TEST(ThreadPool, EmptyGridRunsNothing) {
  ThreadPool pool(3);
  for (const auto &g : std::vector<std::vector<int64_t>>{{0, 1, 1}, {4, 0, 1}, {4, 4, 0}}) {
    KernelLaunch launch;
    launch.kernel = [](void *const *, const int64_t *, int64_t, int64_t, int64_t) {
      ADD_FAILURE() << "ran a workgroup of an empty grid";
    };
    std::copy(g.begin(), g.end(), launch.grid);
    pool.run(launch);
  }
}

TEST(ThreadPool, RefusesBadGrids) {
  ThreadPool pool(2);
  KernelLaunch launch;
  launch.grid[0] = -1;
  launch.grid[1] = launch.grid[2] = 1;
  EXPECT_THROW(pool.run(launch), std::invalid_argument);
  launch.grid[0] = launch.grid[1] = launch.grid[2] = INT64_MAX / 2;
  EXPECT_THROW(pool.run(launch), std::invalid_argument);
  launch.grid[0] = launch.grid[1] = int64_t{1} << 20; // 2^40 workgroups
  launch.grid[2] = 1;
  EXPECT_THROW(pool.run(launch), std::invalid_argument);
  EXPECT_THROW(ThreadPool(-1), std::invalid_argument);
}

TEST(ThreadPool, BackToBackDispatchesSeeEachOthersWrites) {
  // A chain of dispatches, each reading what the one before wrote on other
  // threads: the pattern of a step. Also crosses the spin-then-sleep path.
  ThreadPool pool(4);
  constexpr int64_t n = 64;
  std::vector<int64_t> a(n, 0), b(n, 0);
  auto step = [](void *const *bindings, const int64_t *, int64_t x, int64_t, int64_t) {
    const auto *src = static_cast<const int64_t *>(bindings[0]);
    auto *dst = static_cast<int64_t *>(bindings[1]);
    dst[x] = src[(x + 1) % n] + 1;
  };
  for (int round = 0; round < 2000; ++round) {
    void *bindings[] = {round % 2 ? b.data() : a.data(), round % 2 ? a.data() : b.data()};
    KernelLaunch launch;
    launch.kernel = step;
    launch.bindings = bindings;
    launch.grid[0] = n;
    launch.grid[1] = launch.grid[2] = 1;
    pool.run(launch);
    if (round == 1000)
      std::this_thread::sleep_for(std::chrono::milliseconds(20)); // workers sleep
  }
  for (int64_t x = 0; x < n; ++x)
    ASSERT_EQ(a[x], 2000) << x;
}

TEST(ThreadPool, DefaultsToTheCpusItMayRunOn) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(ThreadPool().num_threads(), CPU_COUNT(&all));
  // Restricted to one CPU, as `taskset -c 0` would.
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int restricted = ThreadPool().num_threads();
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(restricted, 1);
}

} // namespace
} // namespace llmserve
