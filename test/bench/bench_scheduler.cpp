// Host cost of the serving core (issue 3's performance goals):
//  - one schedule() + complete_step() with 256 running sequences and a pool of
//    64k tokens, against a reference measured in the same run: writing the
//    same step's contract arrays from flat precomputed data, the least any
//    scheduler must do (goal: <= 20 us per step);
//  - match_prefix and insert on a radix tree holding 100k blocks;
//  - a whole Engine::step() with the stand-in executor.
// Prints the ratios after the Google Benchmark table.
#include "core/engine.h"
#include "core/radix_cache.h"
#include "core/scheduler.h"
#include "support/stand_in_executor.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace llmserve {
namespace {

constexpr int32_t kBlockSize = 16;
constexpr int32_t kPoolBlocks = 65536 / kBlockSize;
constexpr int32_t kRunning = 256;
constexpr int32_t kPromptLen = 128;
constexpr int32_t kMaxTokens = 128; // 256 sequences of <= 256 tokens fill the pool

// A cheap generator keeps the harness's share of the timings small.
std::vector<int32_t> random_prompt(std::minstd_rand &rng, int32_t n) {
  std::vector<int32_t> p(n);
  for (int32_t &t : p)
    t = 2 + int32_t(rng() % 30000);
  return p;
}

SamplingParams decode_params(int32_t max_tokens) {
  SamplingParams p;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

// 256 sequences decoding in a steady state: finish times are staggered, so
// about two requests end and two new 128-token prompts join every step.
struct SteadyScheduler {
  explicit SteadyScheduler(bool caching)
      : pool(kPoolBlocks, kBlockSize), cache(pool),
        scheduler(config(caching), pool, cache) {
    for (int32_t i = 0; i < kRunning; ++i)
      add(kMaxTokens - i % kMaxTokens);
    // Past the first wave of prompts and into staggered finishes.
    for (int32_t i = 0; i < 2 * kMaxTokens || scheduler.num_waiting() > 0; ++i)
      step();
  }
  static SchedulerConfig config(bool caching) {
    SchedulerConfig c;
    c.max_num_seqs = kRunning;
    c.max_num_batched_tokens = 2048;
    c.max_model_len = 4096;
    c.enable_prefix_caching = caching;
    return c;
  }
  void add(int32_t max_tokens) {
    auto r = std::make_unique<Request>(next_id++, random_prompt(rng, kPromptLen),
                                       decode_params(max_tokens), Clock::now());
    scheduler.add(r.get());
    live[r->id] = std::move(r);
  }
  void step() {
    Clock::time_point now = Clock::now();
    const StepBatch &batch = scheduler.schedule(now);
    out.next_tokens.assign(batch.num_seqs, 7);
    outputs.clear();
    scheduler.complete_step(out, now, outputs);
    for (const RequestOutput &o : outputs)
      if (o.finished) {
        live.erase(o.id);
        add(kMaxTokens);
      }
  }
  KvPool pool;
  RadixCache cache;
  Scheduler scheduler;
  std::minstd_rand rng{1};
  uint64_t next_id = 1;
  std::map<uint64_t, std::unique_ptr<Request>> live;
  StepOutput out;
  std::vector<RequestOutput> outputs;
};

void BM_SchedulePostprocess(benchmark::State &state) {
  SteadyScheduler s(state.range(0) != 0);
  int64_t seqs = 0;
  for (auto _ : state) {
    s.step();
    seqs += s.out.next_tokens.size();
  }
  state.counters["seqs_per_step"] = double(seqs) / state.iterations();
  if (s.scheduler.num_preemptions() != 0)
    state.SkipWithError("the steady state preempted: the pool is too small");
}
BENCHMARK(BM_SchedulePostprocess)->ArgName("prefix_caching")->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

// The reference: the same step's contract arrays written from data already
// laid out per sequence (what a persistent batch would copy).
void BM_FillStepContract(benchmark::State &state) {
  SteadyScheduler s(true);
  s.step();
  const StepBatch captured = s.scheduler.schedule(Clock::now());
  struct Seq {
    std::vector<int32_t> tokens, blocks;
    int32_t first_position;
  };
  std::vector<Seq> seqs(captured.num_seqs);
  for (int32_t i = 0; i < captured.num_seqs; ++i) {
    int32_t begin = captured.query_start[i], end = captured.query_start[i + 1];
    seqs[i].tokens.assign(captured.token_ids.begin() + begin, captured.token_ids.begin() + end);
    seqs[i].first_position = captured.positions[begin];
    for (int32_t j = 0; j < captured.max_blocks_per_seq; ++j) {
      int32_t b = captured.block_table[size_t(i) * captured.max_blocks_per_seq + j];
      if (b >= 0)
        seqs[i].blocks.push_back(b);
    }
  }
  StepBatch b;
  for (auto _ : state) {
    int32_t S = captured.num_seqs, T = captured.num_tokens, MB = captured.max_blocks_per_seq;
    resize_step_batch(b, T, S, MB);
    std::fill(b.block_table.begin(), b.block_table.end(), -1);
    int32_t t = 0;
    for (int32_t i = 0; i < S; ++i) {
      const Seq &q = seqs[i];
      for (size_t j = 0; j < q.tokens.size(); ++j, ++t) {
        int32_t pos = q.first_position + int32_t(j);
        b.token_ids[t] = q.tokens[j];
        b.positions[t] = pos;
        b.slot_mapping[t] = q.blocks[pos / kBlockSize] * kBlockSize + pos % kBlockSize;
      }
      b.query_start[i + 1] = t;
      b.context_len[i] = q.first_position + int32_t(q.tokens.size());
      b.logits_rows[i] = t - 1;
      std::copy(q.blocks.begin(), q.blocks.end(), b.block_table.begin() + size_t(i) * MB);
      b.temperature[i] = 1.0f;
      b.top_p[i] = 1.0f;
      b.top_k[i] = 0;
      b.min_p[i] = 0.0f;
      b.seed[i] = i;
      b.presence_penalty[i] = 0.0f;
      b.frequency_penalty[i] = 0.0f;
      b.repetition_penalty[i] = 1.0f;
      b.num_logprobs[i] = -1;
    }
    benchmark::DoNotOptimize(b.slot_mapping.data());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_FillStepContract)->Unit(benchmark::kMicrosecond);

// 1250 conversations of 80 blocks after one of 10 shared 20-block system
// prompts: 100,200 blocks in the tree.
struct BigTree {
  static constexpr int32_t kSystems = 10, kSystemBlocks = 20;
  static constexpr int32_t kConversations = 1250, kOwnBlocks = 80;
  BigTree() : pool(110000, kBlockSize), cache(pool) {
    for (int32_t s = 0; s < kSystems; ++s)
      systems.push_back(random_prompt(rng, kSystemBlocks * kBlockSize));
    for (int32_t c = 0; c < kConversations; ++c) {
      std::vector<int32_t> tokens = systems[c % kSystems];
      auto own = random_prompt(rng, kOwnBlocks * kBlockSize);
      tokens.insert(tokens.end(), own.begin(), own.end());
      insert(tokens);
      conversations.push_back(std::move(tokens));
    }
  }
  // A request's life: its blocks, cached, then released by the request.
  void insert(const std::vector<int32_t> &tokens) {
    std::vector<int32_t> blocks;
    for (size_t i = 0; i < tokens.size() / kBlockSize; ++i)
      blocks.push_back(pool.allocate());
    cache.insert(tokens.data(), int32_t(blocks.size()), blocks);
    for (int32_t b : blocks)
      pool.release(b);
  }
  KvPool pool;
  RadixCache cache;
  std::minstd_rand rng{2};
  std::vector<std::vector<int32_t>> systems, conversations;
};

void BM_RadixMatchPrefix(benchmark::State &state) {
  BigTree tree;
  std::vector<int32_t> blocks;
  size_t i = 0;
  for (auto _ : state) {
    const auto &tokens = tree.conversations[i++ % tree.conversations.size()];
    blocks.clear();
    tree.cache.match_prefix(tokens.data(), int32_t(tokens.size()), blocks);
    benchmark::DoNotOptimize(blocks.data());
  }
  state.counters["tree_blocks"] = tree.cache.num_cached_blocks();
  state.counters["blocks_per_match"] = double(blocks.size());
}
BENCHMARK(BM_RadixMatchPrefix)->Unit(benchmark::kMicrosecond);

// The next turn of a conversation: its 100 blocks are cached (unless evicted
// since), 16 are new; evicting as many as were added keeps the tree's size.
void BM_RadixInsertTurn(benchmark::State &state) {
  BigTree tree;
  std::vector<std::vector<int32_t>> turns;
  for (const auto &c : tree.conversations) {
    std::vector<int32_t> turn = c;
    auto more = random_prompt(tree.rng, 16 * kBlockSize);
    turn.insert(turn.end(), more.begin(), more.end());
    turns.push_back(std::move(turn));
  }
  int64_t added = 0;
  for (auto _ : state) {
    int32_t before = tree.cache.num_cached_blocks();
    // Random order: LRU eviction would always hit the next turn otherwise.
    tree.insert(turns[tree.rng() % turns.size()]);
    int32_t grown = tree.cache.num_cached_blocks() - before;
    tree.cache.evict(grown);
    added += grown;
  }
  state.counters["tree_blocks"] = tree.cache.num_cached_blocks();
  state.counters["new_blocks_per_insert"] = double(added) / state.iterations();
}
BENCHMARK(BM_RadixInsertTurn)->Unit(benchmark::kMicrosecond);

// A whole engine step, the stand-in model included (it reads every
// sequence's whole context back through its block table).
void BM_EngineStep(benchmark::State &state) {
  StandInExecutor model(32000, kBlockSize, 1024);
  EngineConfig c;
  c.max_num_seqs = kRunning;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 4096;
  c.num_kv_blocks = kPoolBlocks;
  Engine engine(model, c);
  std::minstd_rand rng(3);
  for (int32_t i = 0; i < kRunning; ++i)
    engine.add_request(random_prompt(rng, kPromptLen), decode_params(kMaxTokens - i % kMaxTokens));
  std::string error;
  auto step = [&] {
    for (const RequestOutput &o : engine.step()) {
      if (o.finish_reason == FinishReason::kError)
        error = o.error;
      if (o.finished)
        engine.add_request(random_prompt(rng, kPromptLen), decode_params(kMaxTokens));
    }
  };
  for (int32_t i = 0; i < 2 * kMaxTokens; ++i)
    step();
  for (auto _ : state)
    step();
  if (!error.empty())
    state.SkipWithError(error.c_str());
  EngineStats stats = engine.stats();
  state.counters["running"] = stats.num_running;
  state.counters["waiting"] = stats.num_waiting;
  state.counters["preemptions"] = stats.num_preemptions;
}
BENCHMARK(BM_EngineStep)->Unit(benchmark::kMicrosecond);

// Keeps each run's time per iteration, for the ratios printed at the end.
class RatioReporter : public benchmark::ConsoleReporter {
public:
  // CPU time: the machine may be shared, and this is single-threaded work.
  // With --benchmark_repetitions, the median.
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs) {
      failed |= r.error_occurred;
      if (!r.error_occurred && (r.run_type == Run::RT_Iteration ||
                                r.aggregate_name == "median"))
        micros[r.run_name.str()] = r.GetAdjustedCPUTime();
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> micros;
  bool failed = false;
};

} // namespace
} // namespace llmserve

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  llmserve::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto &m = reporter.micros;
  const char *schedule = "BM_SchedulePostprocess/prefix_caching:1";
  if (m.count(schedule) && m.count("BM_FillStepContract")) {
    std::printf("\nschedule+postprocess at 256 running: %.2f us per step, "
                "%.2fx the step-contract fill reference (%.2f us), "
                "%.2f of the 20 us goal\n",
                m[schedule], m[schedule] / m["BM_FillStepContract"],
                m["BM_FillStepContract"], m[schedule] / 20.0);
  }
  benchmark::Shutdown();
  return reporter.failed ? 1 : 0;
}
