#include "core/scheduler.h"
#include "support/stand_in_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <stdexcept>
#include <vector>

namespace llmserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr int32_t kBlock = 4;

std::vector<int32_t> prompt(int32_t n, int32_t salt) {
  std::vector<int32_t> p(n);
  for (int32_t i = 0; i < n; ++i)
    p[i] = (salt * 131 + i * 7) % 1000;
  return p;
}

// Drives a Scheduler with the stand-in model, checking the step contract
// and the block accounting after every step.
class SchedulerTest : public ::testing::Test {
protected:
  void make(SchedulerConfig config, int32_t num_blocks) {
    pool = std::make_unique<KvPool>(num_blocks, kBlock);
    cache = std::make_unique<RadixCache>(*pool);
    scheduler = std::make_unique<Scheduler>(config, *pool, *cache);
    model.allocate_kv_cache(num_blocks);
  }
  Request *add(int32_t prompt_len, int32_t max_tokens, int32_t salt = 0) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.max_tokens = max_tokens;
    auto r = std::make_unique<Request>(requests.size() + 1,
                                       prompt(prompt_len, salt), params,
                                       Clock::now());
    scheduler->add(r.get());
    requests.push_back(std::move(r));
    return requests.back().get();
  }
  Request *add(std::vector<int32_t> tokens, int32_t max_tokens) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.max_tokens = max_tokens;
    auto r = std::make_unique<Request>(requests.size() + 1, std::move(tokens),
                                       params, Clock::now());
    scheduler->add(r.get());
    requests.push_back(std::move(r));
    return requests.back().get();
  }
  // Runs one step; returns request id -> tokens it ran.
  std::map<uint64_t, int32_t> step() {
    decoding.clear();
    for (auto &r : requests)
      if (r->status == RequestStatus::kRunning && r->num_uncomputed_tokens() == 1)
        decoding.insert(r->id);
    const StepBatch &batch = scheduler->schedule(Clock::now());
    // A row's request: the one holding the block its last token is written
    // to, which no other request holds.
    std::map<uint64_t, int32_t> ran;
    for (int32_t s = 0; s < batch.num_seqs; ++s) {
      const int32_t block = batch.slot_mapping[batch.query_start[s + 1] - 1] / kBlock;
      for (auto &r : requests)
        if (std::find(r->blocks.begin(), r->blocks.end(), block) != r->blocks.end())
          ran[r->id] = batch.query_start[s + 1] - batch.query_start[s];
    }
    EXPECT_EQ(ran.size(), size_t(batch.num_seqs));
    if (batch.num_seqs > 0) {
      StepOutput out;
      model.execute(batch, out);
      scheduler->complete_step(out, Clock::now(), outputs);
    }
    scheduler->check_invariants();
    return ran;
  }
  void run_to_completion() {
    for (int i = 0; i < 10000 && scheduler->has_work(); ++i)
      step();
    ASSERT_FALSE(scheduler->has_work());
  }

  StandInExecutor model{1000, kBlock};
  std::unique_ptr<KvPool> pool;
  std::unique_ptr<RadixCache> cache;
  std::unique_ptr<Scheduler> scheduler;
  std::vector<std::unique_ptr<Request>> requests;
  std::vector<RequestOutput> outputs;
  std::set<uint64_t> decoding; // running and decoding before the last step
};

SchedulerConfig config(int32_t max_num_seqs, int32_t max_num_batched_tokens,
                       bool caching = false) {
  SchedulerConfig c;
  c.max_num_seqs = max_num_seqs;
  c.max_num_batched_tokens = max_num_batched_tokens;
  c.max_model_len = 64;
  c.enable_prefix_caching = caching;
  return c;
}

TEST_F(SchedulerTest, ChunksPromptsWithinTheTokenBudget) {
  make(config(4, 8), 64);
  Request *a = add(20, 3);
  Request *b = add(5, 3, 1);
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 8)));
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 8)));
  EXPECT_THAT(outputs, IsEmpty()) << "a chunk samples no token";
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 4), Pair(b->id, 4)));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].id, a->id);
  EXPECT_EQ(a->num_output_tokens(), 1);
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 1), Pair(b->id, 1)));
  EXPECT_EQ(b->num_output_tokens(), 1);
  run_to_completion();
}

TEST_F(SchedulerTest, HandsEachSequenceItsPenaltyHistory) {
  make(config(4, 8), 64);
  // a: repetition penalty, so its prompt counts (once per distinct token);
  // b: frequency only, so only its output does; c: none.
  SamplingParams pa, pb, pc;
  pa.repetition_penalty = 1.5f;
  pb.frequency_penalty = 0.5f;
  for (SamplingParams *p : {&pa, &pb, &pc}) {
    p->temperature = 0.0f;
    p->max_tokens = 8;
    p->ignore_eos = true;
    p->logprobs = p == &pb ? 2 : -1;
  }
  auto add_with = [&](std::vector<int32_t> tokens, const SamplingParams &p) {
    requests.push_back(std::make_unique<Request>(requests.size() + 1,
                                                 std::move(tokens), p, Clock::now()));
    scheduler->add(requests.back().get());
    return requests.back().get();
  };
  Request *a = add_with({5, 6, 5}, pa);
  Request *b = add_with({7, 7}, pb);
  add_with({9}, pc);
  step();
  step();
  const StepBatch &batch = scheduler->schedule(Clock::now());
  ASSERT_EQ(batch.num_seqs, 3);
  // Expected histories from the tokens the requests now hold.
  auto expect_row = [&](int s, const Request &r, bool prompt_counts) {
    std::map<int32_t, int32_t> want, got;
    // The launched step's pending token is not in the history yet.
    for (int32_t i = 0; i < static_cast<int32_t>(r.tokens.size()); ++i) {
      const bool output = i >= r.num_prompt_tokens;
      if (output || prompt_counts)
        want[r.tokens[i]] += output;
    }
    for (int32_t e = batch.penalty_start[s]; e < batch.penalty_start[s + 1]; ++e)
      EXPECT_TRUE(got.emplace(batch.penalty_tokens[e], batch.penalty_counts[e]).second);
    EXPECT_EQ(got, want) << "sequence " << s;
  };
  expect_row(0, *a, true);
  expect_row(1, *b, false);
  EXPECT_EQ(batch.penalty_start[2], batch.penalty_start[3]) << "c has no penalties";
  EXPECT_EQ(batch.penalty_start[3], static_cast<int32_t>(batch.penalty_tokens.size()));
  EXPECT_THAT(batch.repetition_penalty, ElementsAre(1.5f, 1.0f, 1.0f));
  EXPECT_THAT(batch.frequency_penalty, ElementsAre(0.0f, 0.5f, 0.0f));
  EXPECT_THAT(batch.num_logprobs, ElementsAre(-1, 2, -1));
  StepOutput out;
  model.execute(batch, out);
  scheduler->complete_step(out, Clock::now(), outputs);
  run_to_completion();
}

TEST_F(SchedulerTest, APromptWaitsForTheSharedPrefixBeingComputed) {
  make(config(4, 8, /*caching=*/true), 64);
  std::vector<int32_t> shared = prompt(12, 3); // 3 blocks
  std::vector<int32_t> a_tokens = shared, b_tokens = shared, c_tokens = prompt(6, 4);
  a_tokens.push_back(900);
  b_tokens.push_back(901);
  Request *a = add(a_tokens, 2);
  Request *b = add(b_tokens, 2);
  Request *c = add(c_tokens, 2);
  // a computes the shared blocks in chunks of 8; b, which would compute
  // them again, waits, and c (nothing shared) goes ahead of it.
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 8)));
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 5), Pair(c->id, 3)));
  EXPECT_EQ(b->status, RequestStatus::kWaiting);
  // Once a's prompt is cached, b reads its 3 blocks from the cache.
  step();
  EXPECT_EQ(b->status, RequestStatus::kRunning);
  EXPECT_EQ(b->num_cached_tokens, 12);
  run_to_completion();
}

TEST_F(SchedulerTest, DecodesGoFirstAndPromptsFillTheRest) {
  make(config(4, 8), 64);
  Request *a = add(3, 10);
  step();
  Request *b = add(30, 2, 1);
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 1), Pair(b->id, 7)));
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 1), Pair(b->id, 7)));
  run_to_completion();
}

TEST_F(SchedulerTest, RunsAtMostMaxNumSeqs) {
  make(config(2, 16), 64);
  Request *a = add(2, 2);
  Request *b = add(2, 3, 1);
  Request *c = add(2, 2, 2);
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 2), Pair(b->id, 2)));
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 1), Pair(b->id, 1)));
  EXPECT_EQ(a->status, RequestStatus::kFinished);
  EXPECT_THAT(step(), ElementsAre(Pair(b->id, 1), Pair(c->id, 2)));
  run_to_completion();
}

TEST_F(SchedulerTest, PreemptsTheMostRecentlyAdmittedWhenBlocksRunOut) {
  make(config(4, 64), 16);
  Request *a = add(24, 20);
  Request *b = add(24, 20, 1);
  Request *c = add(16, 20, 2);
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 24), Pair(b->id, 24), Pair(c->id, 16)));
  EXPECT_EQ(pool->num_free_blocks(), 0);
  Request *d = add(4, 2, 3);
  // a needs a 7th block for its 25th token: c, admitted last, makes room.
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 1), Pair(b->id, 1)));
  EXPECT_EQ(c->status, RequestStatus::kPreempted);
  EXPECT_EQ(scheduler->num_preemptions(), 1u);
  EXPECT_TRUE(c->blocks.empty());
  EXPECT_EQ(c->num_output_tokens(), 1) << "its output so far is kept";
  // c waits first in line, ahead of d, and is recomputed whole.
  while (c->status != RequestStatus::kRunning) {
    auto ran = step();
    EXPECT_TRUE(ran.count(d->id) == 0 || ran.count(c->id) == 1)
        << "d overtook the preempted c";
  }
  EXPECT_EQ(c->num_computed_tokens, 17);
  run_to_completion();
  for (auto &r : requests)
    EXPECT_EQ(r->finish_reason, FinishReason::kLength);
  EXPECT_EQ(pool->num_free_blocks(), 16);
}

TEST_F(SchedulerTest, ARequestThatCannotGrowPreemptsItself) {
  make(config(4, 64), 16);
  Request *a = add(8, 8);
  Request *b = add(52, 4, 1);
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 8), Pair(b->id, 52)));
  // a takes the last free block; b, admitted last, makes room for itself.
  EXPECT_THAT(step(), ElementsAre(Pair(a->id, 1)));
  EXPECT_EQ(b->status, RequestStatus::kPreempted);
  EXPECT_EQ(scheduler->num_preemptions(), 1u);
  run_to_completion();
  EXPECT_EQ(a->finish_reason, FinishReason::kLength);
  EXPECT_EQ(b->finish_reason, FinishReason::kLength);
  EXPECT_EQ(b->num_output_tokens(), 4);
}

TEST_F(SchedulerTest, NewRequestsWaitTheirTurnForBlocks) {
  make(config(4, 48), 16);
  Request *a = add(48, 8);    // takes the whole first step's budget
  Request *b = add(40, 8, 1); // then needs 10 blocks, at most 3 are free
  Request *c = add(4, 8, 2);  // would fit, but arrived after b
  while (a->status != RequestStatus::kFinished) {
    auto ran = step();
    EXPECT_EQ(ran.count(b->id), 0u);
    EXPECT_EQ(ran.count(c->id), 0u) << "c jumped ahead of b";
  }
  EXPECT_THAT(step(), ElementsAre(Pair(b->id, 40), Pair(c->id, 4)));
  run_to_completion();
}

TEST_F(SchedulerTest, DecodeOnlyStepsNeverMixAndAlternate) {
  SchedulerConfig c = config(4, 16);
  c.decode_only_steps = true;
  make(c, 64);
  Request *a = add(4, 30);
  step();
  add(40, 4, 1);
  std::vector<char> kinds;
  for (int i = 0; i < 8; ++i) {
    auto ran = step();
    bool decodes = false, prompts = false;
    for (auto [id, n] : ran)
      (decoding.count(id) ? decodes : prompts) = true;
    ASSERT_FALSE(decodes && prompts) << "step " << i << " mixed";
    kinds.push_back(decodes ? 'd' : 'p');
  }
  // 40 prompt tokens in chunks of 16, then the new request decodes too.
  EXPECT_EQ(std::string(kinds.begin(), kinds.end()), "dpdpdpdd");
  EXPECT_EQ(a->status, RequestStatus::kRunning);
  run_to_completion();
}

TEST_F(SchedulerTest, ReusesCachedPrefixBlocks) {
  make(config(4, 64, /*caching=*/true), 64);
  Request *a = add(16, 2);
  run_to_completion();
  EXPECT_EQ(cache->num_cached_blocks(), 4);
  // Same prompt: everything but the last token's block is reused.
  Request *b = add(prompt(16, 0), 2);
  EXPECT_THAT(step(), ElementsAre(Pair(b->id, 4)));
  EXPECT_EQ(b->num_cached_tokens, 12);
  // Multi-turn: a's prompt and answer plus a new turn.
  std::vector<int32_t> turn = a->tokens;
  turn.insert(turn.end(), {5, 6, 7, 8, 9});
  Request *c = add(turn, 2);
  auto ran = step();
  EXPECT_EQ(c->num_cached_tokens, 16);
  EXPECT_EQ(ran[c->id], int32_t(turn.size()) - 16);
  run_to_completion();
  EXPECT_EQ(pool->num_free_blocks() + cache->num_cached_blocks(), 64);
}

TEST_F(SchedulerTest, EvictsCachedBlocksBeforePreempting) {
  make(config(4, 64, /*caching=*/true), 16);
  add(60, 1);
  run_to_completion();
  EXPECT_EQ(cache->num_cached_blocks(), 15);
  Request *b = add(60, 4, 1);
  run_to_completion();
  EXPECT_EQ(b->finish_reason, FinishReason::kLength);
  EXPECT_EQ(scheduler->num_preemptions(), 0u);
}

TEST_F(SchedulerTest, FinishFreesTheRequestWhereverItIs) {
  make(config(4, 64), 16);
  Request *a = add(40, 8);
  Request *b = add(40, 8, 1);
  step();
  scheduler->finish(b, FinishReason::kAbort, Clock::now()); // waiting
  scheduler->finish(a, FinishReason::kAbort, Clock::now()); // running
  scheduler->finish(a, FinishReason::kStop, Clock::now());  // no-op
  EXPECT_EQ(a->finish_reason, FinishReason::kAbort);
  EXPECT_FALSE(scheduler->has_work());
  Request stranger(99, prompt(4, 9), SamplingParams(), Clock::now());
  EXPECT_THROW(scheduler->finish(&stranger, FinishReason::kAbort, Clock::now()),
               std::logic_error);
  EXPECT_EQ(pool->num_free_blocks(), 16);
  scheduler->check_invariants();
}

TEST_F(SchedulerTest, FailedStepEndsItsRequestsWithTheError) {
  make(config(4, 64, /*caching=*/true), 16);
  Request *a = add(8, 8);
  scheduler->schedule(Clock::now());
  scheduler->fail_step("device lost", Clock::now(), outputs);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].finish_reason, FinishReason::kError);
  EXPECT_EQ(outputs[0].error, "device lost");
  EXPECT_EQ(a->status, RequestStatus::kFinished);
  EXPECT_EQ(pool->num_free_blocks(), 16);
  EXPECT_EQ(cache->num_cached_blocks(), 0) << "half-written KV is not cached";
  scheduler->check_invariants();
}

TEST(SchedulerConfigTest, RejectsConfigsThatCannotMakeProgress) {
  KvPool pool(8, 16);
  RadixCache cache(pool);
  auto error = [&](SchedulerConfig c) -> std::string {
    try {
      Scheduler s(c, pool, cache);
    } catch (const std::invalid_argument &e) {
      return e.what();
    }
    return "accepted";
  };
  SchedulerConfig c;
  c.max_model_len = 128;
  EXPECT_EQ(error(c), "accepted");
  c.max_num_batched_tokens = 100;
  EXPECT_THAT(error(c), HasSubstr("max_num_batched_tokens = 100, must be >= max_num_seqs = 256"));
  c = SchedulerConfig();
  c.max_model_len = 129;
  EXPECT_THAT(error(c), HasSubstr("8 blocks of 16 tokens cannot hold one sequence of max_model_len = 129"));
  c.max_num_seqs = 0;
  EXPECT_THAT(error(c), HasSubstr("max_num_seqs = 0"));
}

} // namespace
} // namespace llmserve
