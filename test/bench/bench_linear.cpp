// llmc-bench-linear: GFLOP/s of the compiled `linear` kernel next to OpenBLAS
// sgemm, and at M = 1 as a fraction of the memory-bandwidth roofline, all
// measured in the same run on the same threads; then the kernel on int8 and
// bf16 weights against the f32 one; then `expert_linear` on Qwen3-30B-A3B's
// expert shapes against the dense linear that reads as many bytes.
//
//   llmc-bench-linear <linear_bench.llmb> [--threads N] [--seconds S]
#include "cli/command_line.h"
#include "cpu/cpu_executor.h"
#include "support/safetensors_writer.h"

#include <cblas.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace llmserve;
using Clock = std::chrono::steady_clock;

namespace {

// Qwen3-30B-A3B's experts: 128 of [768, 2048], 8 per token.
constexpr int64_t kExperts = 128, kExpertRows = 768, kTopK = 8;

// Median seconds of `fn` over repetitions filling about `budget` seconds.
double time_it(const std::function<void()> &fn, double budget) {
  fn(); // warm up
  std::vector<double> samples;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    fn();
    samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  } while (std::chrono::duration<double>(Clock::now() - start).count() < budget ||
           samples.size() < 3);
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

HostTensor random_tensor(std::vector<int64_t> shape, std::mt19937 &rng) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  size_t n = 1;
  for (int64_t d : t.shape)
    n *= d;
  t.data.resize(n * sizeof(float));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float *p = reinterpret_cast<float *>(t.data.data());
  for (size_t i = 0; i < n; ++i)
    p[i] = dist(rng);
  return t;
}

// Read bandwidth (bytes/s) of `threads` threads summing a buffer of `bytes`:
// the roofline for reading a weight matrix of that size, from whatever level
// of the memory hierarchy holds it between repetitions.
double read_bandwidth(size_t bytes, int threads, double budget) {
  // Several passes per timing, so that starting the threads does not count.
  constexpr int kPasses = 16;
  typedef float v16 __attribute__((vector_size(64)));
  const size_t n = bytes / sizeof(v16);
  std::vector<v16> data(n, v16{} + 1.0f);
  std::vector<float> sums(threads);
  const double seconds = time_it(
      [&] {
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
          pool.emplace_back([&, t] {
            v16 acc[8] = {};
            const size_t begin = n * t / threads, end = n * (t + 1) / threads;
            for (int pass = 0; pass < kPasses; ++pass)
              for (size_t i = begin; i + 8 <= end; i += 8)
                for (int j = 0; j < 8; ++j)
                  acc[j] += data[i + j];
            v16 total = acc[0];
            for (int j = 1; j < 8; ++j)
              total += acc[j];
            sums[t] = total[0];
          });
        for (auto &th : pool)
          th.join();
      },
      budget);
  return double(kPasses) * n * sizeof(v16) / seconds;
}

int run(int argc, char **argv) {
  CLI::App app{"GFLOP/s of the compiled linear kernel next to OpenBLAS sgemm, and at M = 1\n"
               "as a share of the memory-bandwidth roofline, on the same threads.",
               "llmc-bench-linear"};
  std::string bundle_dir;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  double budget = 1.0;
  app.add_option("bundle", bundle_dir, "linear_bench.llmb, compiled from linear_bench.mlir")
      ->type_name("DIR")
      ->required();
  llmserve::cli::integer_in(
      app.add_option("--threads", threads, "threads of both kernels (default: all)")
          ->type_name("N"),
      1, 1000000);
  llmserve::cli::positive(
      app.add_option("--seconds", budget, "time spent on each measurement")
          ->type_name("S")
          ->capture_default_str(),
      1e6);
  if (std::optional<int> status = llmserve::cli::parse(app, argc, argv))
    return *status;
  // OpenBLAS 0.3.21 does not recognise every AVX-512 CPU (Sapphire Rapids
  // comes up as "Prescott", an SSE3 kernel); compare against its AVX-512
  // kernels wherever the CPU has them. The core type is read at load time,
  // hence the re-exec.
  if (!std::getenv("OPENBLAS_CORETYPE") && __builtin_cpu_supports("avx512f")) {
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    execv("/proc/self/exe", argv);
  }
  openblas_set_num_threads(threads);
  std::mt19937 rng(42);
  const int64_t K = 2048;

  // The weights, as the checkpoint the bundle reads (and OpenBLAS's copy).
  std::map<int64_t, HostTensor> weights;
  for (int64_t N : {int64_t{2048}, int64_t{5632}, kTopK * kExpertRows})
    weights[N] = random_tensor({N, K}, rng);
  std::vector<HostTensor> experts;
  for (int64_t e = 0; e < kExperts; ++e)
    experts.push_back(random_tensor({kExpertRows, K}, rng));
  const std::string checkpoint = std::filesystem::temp_directory_path() /
                                 ("llmc-bench-linear-" + std::to_string(getpid()));
  std::filesystem::create_directories(checkpoint);
  std::vector<TensorView> views;
  for (auto &[N, w] : weights)
    views.push_back({"w" + std::to_string(N), DType::F32, w.shape, w.data.data(),
                     w.data.size()});
  for (size_t e = 0; e < experts.size(); ++e)
    views.push_back({"experts." + std::to_string(e), DType::F32, experts[e].shape,
                     experts[e].data.data(), experts[e].data.size()});
  write_safetensors(checkpoint + "/model.safetensors", views);
  CpuExecutor executor(Bundle(bundle_dir, checkpoint), threads);
  std::filesystem::remove_all(checkpoint);

  std::printf("threads %d, OpenBLAS core %s\n\n", threads,
              openblas_get_corename());
  std::printf("%6s %6s %6s | %10s %10s %7s | %s\n", "M", "N", "K", "ours GF/s",
              "BLAS GF/s", "ours/BLAS", "M=1: share of the read-bandwidth roofline");
  // All of ours first, then all of OpenBLAS, so neither's idle worker
  // threads (which spin for a while after a call) steal the other's cores.
  struct Case {
    int64_t M, N;
    std::vector<HostTensor> inputs;
    double ours = 0, blas = 0;
  };
  std::vector<Case> cases;
  for (int64_t N : {2048, 5632})
    for (int64_t M : {1, 16, 64, 512})
      cases.push_back({M, N, {random_tensor({M, K}, rng)}});
  for (Case &c : cases) {
    const std::string entry =
        "linear_m" + std::to_string(c.M) + "_n" + std::to_string(c.N);
    c.ours = time_it([&] { executor.run_entry(entry, Symbols{}, c.inputs); },
                     budget);
  }
  for (Case &c : cases) {
    std::vector<float> y(c.M * c.N);
    const float *x = reinterpret_cast<const float *>(c.inputs[0].data.data());
    const float *w = reinterpret_cast<const float *>(weights[c.N].data.data());
    c.blas = time_it(
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c.M, c.N, K, 1.0f,
                      x, K, w, K, 0.0f, y.data(), c.N);
        },
        budget);
  }
  for (const Case &c : cases) {
    const double flops = 2.0 * c.M * c.N * K;
    std::printf("%6ld %6ld %6ld | %10.1f %10.1f %8.2f |", c.M, c.N, K,
                flops / c.ours / 1e9, flops / c.blas / 1e9, c.blas / c.ours);
    if (c.M == 1) {
      // Weights dominate the bytes moved at M = 1.
      const double bytes = (c.N * K + K + c.N) * sizeof(float);
      const double bandwidth =
          read_bandwidth(c.N * K * sizeof(float), threads, budget);
      std::printf(" %.0f%% (ours), %.0f%% (BLAS) of %.1f GB/s",
                  100 * bytes / c.ours / bandwidth,
                  100 * bytes / c.blas / bandwidth, bandwidth / 1e9);
    }
    std::printf("\n");
  }

  // Narrow weights against our f32 kernel at the same M.
  struct NarrowFormat {
    const char *name, *title;
    int bytes_per_weight;
  };
  for (const NarrowFormat &format :
       {NarrowFormat{"int8", "int8 weights (int8_channel, quantized at load)", 1},
        NarrowFormat{"bf16", "bf16 weights (rounded at load)", 2}}) {
    std::printf("\n%s against the f32 kernel above\n", format.title);
    std::printf("%6s %6s %6s | %7s GF/s %10s | %s\n", "M", "N", "K", format.name,
                "ratio", "M=1: share of the read-bandwidth roofline");
    for (const Case &c : cases) {
      const std::string entry = std::string("linear_") + format.name + "_m" +
                                std::to_string(c.M) + "_n" + std::to_string(c.N);
      const double seconds = time_it(
          [&] { executor.run_entry(entry, Symbols{}, c.inputs); }, budget);
      std::printf("%6ld %6ld %6ld | %12.1f %10.2f |", c.M, c.N, K,
                  2.0 * c.M * c.N * K / seconds / 1e9, c.ours / seconds);
      if (c.M == 1) {
        // The weights, a scale per row (int8), x and y in f32.
        const double weight_bytes = double(c.N) * K * format.bytes_per_weight;
        const double bytes = weight_bytes + (K + 2 * c.N) * sizeof(float);
        const double bandwidth =
            read_bandwidth(static_cast<size_t>(weight_bytes), threads, budget);
        std::printf(" %.0f%% of %.1f GB/s", 100 * bytes / seconds / bandwidth,
                    bandwidth / 1e9);
      }
      std::printf("\n");
    }
  }
  experts.clear();
  weights.clear();

  // expert_linear: each token's 8 of 128 experts, distinct, drawn at random.
  std::printf("\nexpert_linear: %ld experts of [%ld, %ld], the top %ld of each token\n",
              kExperts, kExpertRows, K, kTopK);
  std::printf("%6s %14s | %10s | %s\n", "tokens", "experts used", "GF/s",
              "the used experts' bytes as a share of the read-bandwidth roofline; 1 token: "
              "against the dense linear of [8 x 768, 2048]");
  Case dense{1, kTopK * kExpertRows, {random_tensor({1, K}, rng)}};
  dense.ours = time_it([&] { executor.run_entry("linear_m1_n6144", Symbols{}, dense.inputs); },
                       budget);
  for (int64_t M : {1, 16, 64}) {
    HostTensor chosen;
    chosen.dtype = DType::I32;
    chosen.shape = {M, kTopK};
    chosen.data.resize(M * kTopK * sizeof(int32_t));
    auto *ids = reinterpret_cast<int32_t *>(chosen.data.data());
    std::vector<bool> used(kExperts);
    for (int64_t t = 0; t < M; ++t) {
      std::vector<int32_t> all(kExperts);
      for (int32_t e = 0; e < kExperts; ++e)
        all[e] = e;
      std::shuffle(all.begin(), all.end(), rng);
      for (int64_t j = 0; j < kTopK; ++j)
        used[ids[t * kTopK + j] = all[j]] = true;
    }
    std::vector<HostTensor> inputs = {random_tensor({M, K}, rng), chosen};
    const double seconds = time_it(
        [&] { executor.run_entry("expert_linear_m" + std::to_string(M), Symbols{}, inputs); },
        budget);
    const int64_t active = std::count(used.begin(), used.end(), true);
    const double weight_bytes = double(active) * kExpertRows * K * sizeof(float);
    const double bandwidth = read_bandwidth(static_cast<size_t>(weight_bytes), threads, budget);
    std::printf("%6ld %14ld | %10.1f | %.0f%% of %.1f GB/s", M, active,
                2.0 * M * kTopK * kExpertRows * K / seconds / 1e9,
                100 * weight_bytes / seconds / bandwidth, bandwidth / 1e9);
    if (M == 1)
      std::printf("; %.2f x the dense linear's time (%.0f%% of the roofline)",
                  seconds / dense.ours, 100 * weight_bytes / dense.ours / bandwidth);
    std::printf("\n");
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "llmc-bench-linear: error: %s\n", e.what());
    return 1;
  }
}
