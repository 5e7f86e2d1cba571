// Thousands of steps of random traffic through the engine and the stand-in
// model, with a pool small enough to force eviction and preemption. After
// every step the block accounting must be exact; every request must produce
// exactly what the model gives it run alone.
#include "core/engine.h"
#include "support/stand_in_executor.h"
#include "reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace llmserve {
namespace {

using test::Reference;
using test::run_alone;

constexpr int32_t kVocab = 512;
constexpr int32_t kEos = 1;

struct Sent {
  std::vector<int32_t> prompt;
  SamplingParams params;
  std::vector<int32_t> tokens;
  bool finished = false;
  int64_t arrival_step = 0;
};

struct Policy {
  bool prefix_caching;
  bool decode_only_steps;
  bool overlap_scheduling;
};

std::string name(const ::testing::TestParamInfo<Policy> &info) {
  return std::string(info.param.prefix_caching ? "Cached" : "Uncached") +
         (info.param.decode_only_steps ? "DecodeOnlySteps" : "MixedSteps") +
         (info.param.overlap_scheduling ? "Overlapped" : "Serial");
}

class EngineRandomTest : public ::testing::TestWithParam<Policy> {};

TEST_P(EngineRandomTest, OutputsMatchTheModelRunAloneAndNothingLeaks) {
  std::mt19937 rng(1234);
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  auto chance = [&](double p) { return std::uniform_real_distribution<>()(rng) < p; };
  auto random_tokens = [&](int n) {
    std::vector<int32_t> t(n);
    for (int32_t &x : t)
      x = uniform(2, kVocab - 1);
    return t;
  };

  StandInExecutor model(kVocab);
  EngineConfig config;
  config.max_num_seqs = 16;
  config.max_num_batched_tokens = 256;
  config.max_model_len = 4096 + 64;
  config.num_kv_blocks = 300; // 4800 tokens: two long prompts do not fit
  config.enable_prefix_caching = GetParam().prefix_caching;
  config.decode_only_steps = GetParam().decode_only_steps;
  config.overlap_scheduling = GetParam().overlap_scheduling;
  config.eos_token_ids = {kEos};
  config.vocab_size = kVocab;
  Engine engine(model, config);

  std::vector<std::vector<int32_t>> system_prompts;
  for (int n : {100, 500, 1500, 3000})
    system_prompts.push_back(random_tokens(n));

  std::map<uint64_t, Sent> sent;
  std::vector<uint64_t> active;
  std::vector<uint64_t> done; // finished normally: their history is reusable
  constexpr int kArrivalSteps = 1500;
  int64_t step = 0;
  int64_t max_wait = 0;

  auto make_prompt = [&] {
    std::vector<int32_t> p;
    double kind = std::uniform_real_distribution<>()(rng);
    if (kind < 0.1 && !sent.empty()) { // the same prompt again
      auto it = sent.begin();
      std::advance(it, uniform(0, int(sent.size()) - 1));
      p = it->second.prompt;
      // Cut to whole blocks, it can be cached entirely.
      if (p.size() >= 16 && chance(0.5))
        p.resize(p.size() / 16 * 16);
      return p;
    }
    if (kind < 0.25 && !done.empty()) { // the next turn of a finished chat
      const Sent &prev = sent[done[uniform(0, int(done.size()) - 1)]];
      p = prev.prompt;
      p.insert(p.end(), prev.tokens.begin(), prev.tokens.end());
    } else if (kind < 0.65) { // a shared system prompt, maybe cut short
      const auto &sys = system_prompts[uniform(0, 3)];
      p.assign(sys.begin(), sys.begin() + uniform(1, int(sys.size())));
    }
    int tail = chance(0.6) ? uniform(1, 128)
                           : chance(0.75) ? uniform(129, 1024)
                                          : uniform(1025, 4096);
    auto extra = random_tokens(tail);
    p.insert(p.end(), extra.begin(), extra.end());
    p.resize(std::min<size_t>(p.size(), 4096));
    return p;
  };

  auto check_finished = [&](uint64_t id, const RequestOutput &o) {
    Sent &s = sent[id];
    s.finished = true;
    const SamplingParams &p = s.params;
    Reference ref = run_alone(model, s.prompt, p, p.seed ? *p.seed : default_seed(id),
                              config.eos_token_ids, config.max_model_len);
    if (o.finish_reason == FinishReason::kAbort ||
        (o.finish_reason == FinishReason::kStop && s.tokens.size() < ref.tokens.size())) {
      // Ended from outside: what it produced so far is the reference's start.
      ASSERT_LE(s.tokens.size(), ref.tokens.size()) << "request " << id;
      ASSERT_TRUE(std::equal(s.tokens.begin(), s.tokens.end(), ref.tokens.begin()))
          << "request " << id << " diverged from the model run alone";
    } else {
      ASSERT_EQ(s.tokens, ref.tokens) << "request " << id << " at step " << step;
      ASSERT_EQ(o.finish_reason, ref.reason) << "request " << id;
      done.push_back(id);
    }
    max_wait = std::max(max_wait, step - s.arrival_step);
  };

  while (step < kArrivalSteps || engine.has_work()) {
    if (step < kArrivalSteps && chance(0.2)) {
      for (int n = uniform(1, 2); n > 0; --n) {
        Sent s;
        s.prompt = make_prompt();
        s.arrival_step = step;
        SamplingParams &p = s.params;
        p.temperature = chance(0.5) ? 0.0f : 0.8f;
        if (chance(0.5))
          p.seed = uniform(0, 1 << 30);
        // Penalties make the stand-in's token depend on the history the
        // scheduler hands it, whatever the chunking and preemption.
        if (chance(0.2))
          p.repetition_penalty = 1.3f;
        if (chance(0.2))
          p.frequency_penalty = 0.5f;
        if (chance(0.1))
          p.presence_penalty = -0.5f;
        p.max_tokens = chance(0.9) ? uniform(1, 64) : uniform(65, 200);
        p.min_tokens = chance(0.2) ? uniform(0, p.max_tokens) : 0;
        p.ignore_eos = chance(0.2);
        if (chance(0.2))
          p.stop_token_ids = {uniform(2, kVocab - 1), uniform(2, kVocab - 1)};
        uint64_t id = engine.add_request(s.prompt, p);
        sent[id] = std::move(s);
        active.push_back(id);
      }
    }
    if (!active.empty() && chance(0.03))
      engine.abort(active[uniform(0, int(active.size()) - 1)]);
    if (!active.empty() && chance(0.01))
      engine.finish(active[uniform(0, int(active.size()) - 1)]);

    for (const RequestOutput &o : engine.step()) {
      Sent &s = sent.at(o.id);
      ASSERT_FALSE(s.finished) << "request " << o.id << " reported after finishing";
      if (o.token >= 0)
        s.tokens.push_back(o.token);
      if (o.finished) {
        ASSERT_NE(o.finish_reason, FinishReason::kError) << o.error;
        check_finished(o.id, o);
        active.erase(std::find(active.begin(), active.end(), o.id));
      }
    }
    ASSERT_NO_THROW(engine.check_invariants()) << "after step " << step;
    ++step;
    ASSERT_LT(step, 100000) << "the engine stopped making progress";
  }

  for (auto &[id, s] : sent)
    EXPECT_TRUE(s.finished) << "request " << id << " never finished";
  const KvPool &pool = engine.kv_pool();
  EXPECT_EQ(pool.num_free_blocks() + engine.radix_cache().num_cached_blocks(),
            pool.num_blocks());
  if (!config.enable_prefix_caching)
    EXPECT_EQ(pool.num_free_blocks(), pool.num_blocks());

  EngineStats stats = engine.stats();
  // The traffic must have exercised what this test is about.
  EXPECT_GT(sent.size(), 300u);
  EXPECT_GT(stats.num_preemptions, 10u);
  EXPECT_GT(stats.num_finished[int(FinishReason::kAbort)], 10u);
  EXPECT_GT(stats.num_finished[int(FinishReason::kStop)], 10u);
  EXPECT_GT(stats.num_finished[int(FinishReason::kLength)], 10u);
  if (config.enable_prefix_caching)
    EXPECT_GT(stats.prefix_cache_hit_tokens, stats.prefix_cache_query_tokens / 10);
  // Overlapped, decodes take their token from the step before, except those
  // of requests with penalties (about half of them here), and of any request
  // in a step that waits for their tokens.
  if (config.overlap_scheduling)
    EXPECT_GT(model.num_deferred_tokens(), int64_t(stats.num_generated_tokens / 10));
  else
    EXPECT_EQ(model.num_deferred_tokens(), 0);
  RecordProperty("deferred_tokens", std::to_string(model.num_deferred_tokens()));
  RecordProperty("steps", std::to_string(step));
  RecordProperty("max_wait_steps", std::to_string(max_wait));
  RecordProperty("preemptions", std::to_string(stats.num_preemptions));
}

INSTANTIATE_TEST_SUITE_P(
    Policies, EngineRandomTest,
    ::testing::Values(Policy{true, false, true}, Policy{true, true, true},
                      Policy{false, false, true}, Policy{false, true, true},
                      Policy{true, false, false}, Policy{true, true, false},
                      Policy{false, false, false}, Policy{false, true, false}),
    name);

// A long prompt arriving in a steady flood of short requests is served first
// come first served: nothing that arrived after it starts before it, and it
// finishes while the flood goes on. While three short requests run, its
// 60-block prompt does not fit beside them, so an admission that let later
// requests fill the free slot would starve it.
class StarvationTest : public ::testing::TestWithParam<bool> {};

TEST_P(StarvationTest, ALongPromptInAFloodOfShortOnesIsServedInTurn) {
  StandInExecutor model(kVocab);
  EngineConfig config;
  config.max_num_seqs = 4;
  config.max_num_batched_tokens = 1024;
  config.max_model_len = 1024;
  config.num_kv_blocks = 72;
  config.decode_only_steps = GetParam();
  config.vocab_size = kVocab;
  Engine engine(model, config);
  std::minstd_rand rng(5);
  auto short_request = [&] {
    std::vector<int32_t> p(40 + rng() % 61);
    for (int32_t &t : p)
      t = 2 + rng() % (kVocab - 2);
    SamplingParams params;
    params.max_tokens = 16;
    params.ignore_eos = true;
    return engine.add_request(p, params);
  };
  constexpr int kFloodSteps = 600;
  uint64_t big = 0;
  std::vector<uint64_t> later;
  std::map<uint64_t, Clock::time_point> first_scheduled;
  int big_finished_at = -1;
  for (int step = 0; step < kFloodSteps; ++step) {
    uint64_t id = short_request();
    if (big)
      later.push_back(id);
    if (step == 20) {
      SamplingParams params;
      params.max_tokens = 20;
      params.ignore_eos = true;
      big = engine.add_request(std::vector<int32_t>(950, 7), params);
    }
    for (const RequestOutput &o : engine.step()) {
      first_scheduled.emplace(o.id, o.times.first_scheduled);
      if (o.id == big && o.finished)
        big_finished_at = step;
    }
    engine.check_invariants();
  }
  ASSERT_GE(big_finished_at, 0) << "the long prompt starved";
  // Ahead of it: 21 short requests of 17 steps each, four at a time; then
  // its prompt and 20 tokens; doubled for decode-only steps' alternation.
  EXPECT_LE(big_finished_at, 20 + 2 * ((21 + 3) / 4 * 17 + 1 + 20));
  for (uint64_t id : later)
    if (first_scheduled.count(id))
      EXPECT_GE(first_scheduled[id], first_scheduled[big]) << "request " << id;
}

INSTANTIATE_TEST_SUITE_P(Policies, StarvationTest, ::testing::Bool());

} // namespace
} // namespace llmserve
