// fma-peak: the f32 FMA throughput of this CPU on 1..N threads, the compute
// roof that docs/benchmarks.md sets the compiled kernels and the serving
// speed-up against. Each thread runs 24 independent vector FMA chains (enough
// to cover the FMA latency on every current x86 core), with AVX-512 where the
// CPU has it and AVX2 otherwise; and where the CPU has AVX-512 BF16, as many
// chains of vdpbf16ps, the roof of the bf16 linear kernel.
//
//   fma-peak [--threads N] [--seconds S]
#include "cli/command_line.h"

#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 24;
constexpr long kStepsPerRound = 1 << 20;

using Clock = std::chrono::steady_clock;

/// FLOPs done in `seconds` by one thread's chains of `Lanes`-wide FMAs
/// (`acc * a + b` in one expression contracts to an FMA); inlined into a
/// function compiled for the instruction set that has them.
template <int Lanes>
[[gnu::always_inline]] inline double chains(double seconds, float *sink) {
  using Vector = float __attribute__((ext_vector_type(Lanes)));
  Vector acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = Vector(float(i));
  const Vector a = Vector(0.999999f), b = Vector(1e-7f);
  long rounds = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  do {
    for (long s = 0; s < kStepsPerRound; ++s)
#pragma clang loop unroll(full)
      for (int i = 0; i < kChains; ++i)
        acc[i] = acc[i] * a + b;
    ++rounds;
  } while (Clock::now() < end);
  for (int i = 0; i < kChains; ++i)
    for (int lane = 0; lane < Lanes; ++lane)
      *sink += acc[i][lane];
  return double(rounds) * kStepsPerRound * kChains * Lanes * 2;
}

__attribute__((target("avx512f"))) double chains512(double seconds, float *sink) {
  return chains<16>(seconds, sink);
}

__attribute__((target("avx2,fma"))) double chains256(double seconds, float *sink) {
  return chains<8>(seconds, sink);
}

/// FLOPs done in `seconds` by chains of vdpbf16ps: each adds 16 lanes' two
/// bf16 products, 64 FLOPs.
__attribute__((target("avx512f,avx512bf16"))) double chainsBf16(double seconds,
                                                                float *sink) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = _mm512_set1_ps(float(i));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.5f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7f), _mm512_set1_ps(1e-7f));
  long rounds = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  do {
    for (long s = 0; s < kStepsPerRound; ++s)
#pragma clang loop unroll(full)
      for (int i = 0; i < kChains; ++i)
        acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    ++rounds;
  } while (Clock::now() < end);
  for (int i = 0; i < kChains; ++i)
    *sink += _mm512_reduce_add_ps(acc[i]);
  return double(rounds) * kStepsPerRound * kChains * 64;
}

using Chains = double (*)(double seconds, float *sink);

/// GFLOP/s of `threads` threads running `chains` at once.
double peak(int threads, double seconds, Chains chains) {
  std::vector<double> flops(threads);
  std::vector<float> sinks(threads);
  std::vector<std::thread> pool;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { flops[t] = chains(seconds, &sinks[t]); });
  for (std::thread &thread : pool)
    thread.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  double total = 0;
  for (double f : flops)
    total += f;
  // Reading the sums keeps the chains from being optimized away.
  static volatile float observed;
  for (float s : sinks)
    observed = observed + s;
  return total / elapsed / 1e9;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"The f32 FMA (and bf16 dot-product) throughput of this CPU on 1..N threads.",
               "fma-peak"};
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  double seconds = 1.0;
  llmserve::cli::integer_in(
      app.add_option("--threads", threads, "from 1 to N threads (default: all)")->type_name("N"),
      1, 10000);
  llmserve::cli::positive(
      app.add_option("--seconds", seconds, "time spent on each thread count")
          ->type_name("S")
          ->capture_default_str(),
      1e4);
  if (std::optional<int> status = llmserve::cli::parse(app, argc, argv))
    return *status;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    std::fprintf(stderr, "fma-peak: the CPU has neither AVX-512 nor AVX2 with FMA\n");
    return 1;
  }
  const bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  std::printf("f32 FMA peak, %s, %d chains per thread%s\n\n", avx512 ? "AVX-512" : "AVX2",
              kChains, bf16 ? "; bf16 dot products (vdpbf16ps), as many" : "");
  std::printf("%8s %10s%s\n", "threads", "GFLOP/s", bf16 ? "  bf16 GFLOP/s" : "");
  for (int t = 1; t <= threads; ++t) {
    std::printf("%8d %10.1f", t, peak(t, seconds, avx512 ? chains512 : chains256));
    if (bf16)
      std::printf(" %14.1f", peak(t, seconds, chainsBf16));
    std::printf("\n");
  }
  return 0;
}
