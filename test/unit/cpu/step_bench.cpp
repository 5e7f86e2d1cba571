// Step latency of a compiled bundle on the CPU executor: a batched prefill,
// then greedy decode steps, on N threads and on one thread (the reference,
// measured in the same run).
//
// usage: cpu_step_bench <bundle> [threads (default: all usable CPUs)] [sequences]
//                       [prompt tokens] [decode steps]
#include "cpu/cpu_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace {

using llmserve::StepBatch;

struct Timing {
  int threads = 0;
  double prefill_s = 0; // the whole prompt of every sequence in one step
  double decode_s = 0;  // per decode step, best of all
};

// Each sequence owns blocks [s * MB, (s + 1) * MB).
void add_tokens(StepBatch &b, int32_t seq, int32_t first_pos, int32_t count,
                int32_t block_size, int32_t vocab) {
  for (int32_t pos = first_pos; pos < first_pos + count; ++pos) {
    b.token_ids.push_back((seq * 131 + pos * 17 + 3) % vocab);
    b.positions.push_back(pos);
    b.slot_mapping.push_back((seq * b.max_blocks_per_seq + pos / block_size) * block_size +
                             pos % block_size);
  }
}

StepBatch make_batch(int32_t seqs, int32_t first_pos, int32_t count, int32_t max_blocks,
                     int32_t block_size, int32_t vocab) {
  StepBatch b;
  b.num_seqs = seqs;
  b.max_blocks_per_seq = max_blocks;
  b.query_start.push_back(0);
  b.penalty_start.assign(seqs + 1, 0);
  for (int32_t s = 0; s < seqs; ++s) {
    add_tokens(b, s, first_pos, count, block_size, vocab);
    b.query_start.push_back(static_cast<int32_t>(b.token_ids.size()));
    b.logits_rows.push_back(static_cast<int32_t>(b.token_ids.size()) - 1);
    b.context_len.push_back(first_pos + count);
    for (int32_t j = 0; j < max_blocks; ++j)
      b.block_table.push_back(s * max_blocks + j);
    b.temperature.push_back(0);
    b.top_p.push_back(1);
    b.top_k.push_back(0);
    b.min_p.push_back(0);
    b.seed.push_back(s);
    b.presence_penalty.push_back(0);
    b.frequency_penalty.push_back(0);
    b.repetition_penalty.push_back(1);
    b.num_logprobs.push_back(-1);
  }
  b.num_tokens = static_cast<int32_t>(b.token_ids.size());
  return b;
}

Timing measure(const char *bundle, int threads, int32_t seqs, int32_t prompt,
               int32_t decode_steps) {
  llmserve::CpuExecutor executor{llmserve::Bundle(bundle), threads};
  const int32_t block_size = executor.kv_cache_spec().block_size;
  const int32_t vocab = static_cast<int32_t>(executor.bundle().manifest().model->vocab_size);
  const int32_t max_blocks = (prompt + decode_steps + block_size - 1) / block_size;
  executor.allocate_kv_cache(seqs * max_blocks);
  llmserve::StepOutput out;
  Timing t;
  t.threads = executor.num_threads();
  t.decode_s = 1e30;
  auto start = std::chrono::steady_clock::now();
  executor.execute(make_batch(seqs, 0, prompt, max_blocks, block_size, vocab), out);
  t.prefill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int32_t step = 0; step < decode_steps; ++step) {
    const StepBatch batch = make_batch(seqs, prompt + step, 1, max_blocks, block_size, vocab);
    start = std::chrono::steady_clock::now();
    executor.execute(batch, out);
    t.decode_s = std::min(
        t.decode_s,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return t;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cpu_step_bench <bundle> [threads] [sequences] "
                         "[prompt tokens] [decode steps]\n");
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 0;
  const int32_t seqs = argc > 3 ? std::atoi(argv[3]) : 4;
  const int32_t prompt = argc > 4 ? std::atoi(argv[4]) : 64;
  const int32_t decode_steps = argc > 5 ? std::atoi(argv[5]) : 32;
  try {
    const Timing one = measure(argv[1], 1, seqs, prompt, decode_steps);
    const Timing many = measure(argv[1], threads, seqs, prompt, decode_steps);
    const int n = many.threads;
    std::printf("cpu_step_bench: %d sequences, %d prompt tokens each, %d decode steps\n",
                seqs, prompt, decode_steps);
    std::printf("  prefill: 1 thread %8.2f ms, %d threads %8.2f ms (%.2fx, %.0f tokens/s)\n",
                one.prefill_s * 1e3, n, many.prefill_s * 1e3, one.prefill_s / many.prefill_s,
                seqs * prompt / many.prefill_s);
    std::printf("  decode:  1 thread %8.3f ms, %d threads %8.3f ms (%.2fx, %.0f tokens/s)\n",
                one.decode_s * 1e3, n, many.decode_s * 1e3, one.decode_s / many.decode_s,
                seqs / many.decode_s);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cpu_step_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
