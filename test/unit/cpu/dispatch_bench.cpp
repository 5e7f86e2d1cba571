// How well the thread pool runs a step's dispatch program: the speedup of a
// step-like chain of dispatches on N threads over the same chain on the
// calling thread alone (the reference, measured in the same run), and the
// cost of a dispatch whose workgroups do nothing.
//
// usage: cpu_dispatch_bench [threads (default: all usable CPUs)] [dispatches per step]
#include "cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using llmserve::KernelLaunch;
using llmserve::ThreadPool;

constexpr int64_t kRows = 1024, kCols = 1024, kRowsPerWorkgroup = 16;

// y[r] = sum_c w[r, c] * x[c] for one tile of rows: a linear layer of decode.
void matvec_tile(void *const *bindings, const int64_t *, int64_t tile, int64_t,
                 int64_t) {
  const float *w = static_cast<const float *>(bindings[0]);
  const float *x = static_cast<const float *>(bindings[1]);
  float *y = static_cast<float *>(bindings[2]);
  for (int64_t r = tile * kRowsPerWorkgroup; r < (tile + 1) * kRowsPerWorkgroup; ++r) {
    float sum = 0;
    for (int64_t c = 0; c < kCols; ++c)
      sum += w[r * kCols + c] * x[c];
    y[r] = sum;
  }
}

void nothing(void *const *, const int64_t *, int64_t, int64_t, int64_t) {}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Seconds per step of `dispatches` chained matvecs (each reads the previous
// one's output), best of `repeats`.
double step_time(ThreadPool &pool, int dispatches, int repeats) {
  std::vector<float> w(kRows * kCols), a(kCols, 1.0f), b(kCols);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(i % 7) * (1.0f / 4096);
  double best = 1e30;
  for (int rep = 0; rep < repeats; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    for (int d = 0; d < dispatches; ++d) {
      void *bindings[] = {w.data(), d % 2 ? b.data() : a.data(), d % 2 ? a.data() : b.data()};
      KernelLaunch launch;
      launch.kernel = matvec_tile;
      launch.bindings = bindings;
      launch.grid[0] = kRows / kRowsPerWorkgroup;
      launch.grid[1] = launch.grid[2] = 1;
      pool.run(launch);
    }
    best = std::min(best, seconds_since(start));
  }
  return best;
}

double empty_dispatch_time(ThreadPool &pool, int count) {
  KernelLaunch launch;
  launch.kernel = nothing;
  launch.grid[0] = pool.num_threads();
  launch.grid[1] = launch.grid[2] = 1;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i)
    pool.run(launch);
  return seconds_since(start) / count;
}

} // namespace

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 0;
  const int dispatches = argc > 2 ? std::atoi(argv[2]) : 200;
  ThreadPool serial(1), pool(threads);
  const int repeats = 5;
  step_time(pool, dispatches, 1); // warm the caches and the workers
  const double t1 = step_time(serial, dispatches, repeats);
  const double tn = step_time(pool, dispatches, repeats);
  const double empty = empty_dispatch_time(pool, 20000);
  std::printf("dispatch_bench: %d dispatches of a %lldx%lld f32 matvec (%lld workgroups)\n",
              dispatches, static_cast<long long>(kRows), static_cast<long long>(kCols),
              static_cast<long long>(kRows / kRowsPerWorkgroup));
  std::printf("  1 thread (reference): %8.3f ms/step\n", t1 * 1e3);
  std::printf("  %d threads:          %8.3f ms/step\n", pool.num_threads(), tn * 1e3);
  std::printf("  speedup %.2fx on %d threads (parallel efficiency %.0f%%)\n", t1 / tn,
              pool.num_threads(), 100 * t1 / tn / pool.num_threads());
  std::printf("  empty dispatch (grid = %d): %.2f us\n", pool.num_threads(), empty * 1e6);
  return 0;
}
