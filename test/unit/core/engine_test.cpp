#include "core/engine.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/vocabulary.h"
#include "support/stand_in_executor.h"
#include "reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using test::Reference;
using test::run_alone;

constexpr int32_t kVocab = 256;
constexpr int32_t kEos = 3;

std::vector<int32_t> prompt(int32_t n, int32_t salt) {
  std::vector<int32_t> p(n);
  for (int32_t i = 0; i < n; ++i)
    p[i] = (salt * 131 + i * 7 + 5) % kVocab;
  return p;
}

// Every test runs with overlapped scheduling on and off.
class EngineTest : public ::testing::TestWithParam<bool> {
protected:
  EngineConfig small_config() const;
};

INSTANTIATE_TEST_SUITE_P(, EngineTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "Overlapped" : "Serial";
                         });

EngineConfig EngineTest::small_config() const {
  EngineConfig c;
  c.overlap_scheduling = GetParam();
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 256;
  c.num_kv_blocks = 64;
  c.eos_token_ids = {kEos};
  c.vocab_size = kVocab;
  return c;
}

struct Collected {
  std::vector<int32_t> tokens;
  FinishReason reason = FinishReason::kNone;
  std::string error;
  int32_t num_cached_tokens = 0;
  int finished_events = 0;
};

// Steps until idle, checking invariants; returns each request's outputs.
std::map<uint64_t, Collected> run(Engine &engine, int max_steps = 100000) {
  std::map<uint64_t, Collected> got;
  for (int i = 0; i < max_steps && engine.has_work(); ++i) {
    for (const RequestOutput &o : engine.step()) {
      Collected &c = got[o.id];
      if (o.token >= 0)
        c.tokens.push_back(o.token);
      if (o.finished) {
        c.reason = o.finish_reason;
        c.error = o.error;
        c.num_cached_tokens = o.num_cached_tokens;
        ++c.finished_events;
      }
    }
    engine.check_invariants();
  }
  EXPECT_FALSE(engine.has_work());
  return got;
}

template <typename F> std::string error_of(F &&f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "accepted";
}

TEST_P(EngineTest, RejectsConfigsItCannotServe) {
  StandInExecutor model(kVocab, 16, 1024);
  EngineConfig c = small_config();
  c.block_size = 32;
  EXPECT_THAT(error_of([&] { Engine engine(model, c); }),
              HasSubstr("block_size = 32, but the executor's KV layout has blocks of 16"));
  c = small_config();
  c.num_kv_blocks = 0;
  c.kv_cache_bytes = 1000;
  EXPECT_THAT(error_of([&] { Engine engine(model, c); }),
              HasSubstr("budget of 1000 bytes holds no block of 16384 bytes"));
  c.kv_cache_bytes = 16384 * 10;
  EXPECT_THAT(error_of([&] { Engine engine(model, c); }),
              HasSubstr("10 blocks of 16 tokens cannot hold one sequence of max_model_len = 256"));
  c.kv_cache_bytes = 16384 * 16 + 16383;
  Engine engine(model, c);
  EXPECT_EQ(engine.kv_pool().num_blocks(), 16);
  EXPECT_EQ(engine.stats().num_kv_blocks, 16);
}

TEST_P(EngineTest, RejectsBadRequestsWithTheReason) {
  StandInExecutor model(kVocab);
  Engine engine(model, small_config());
  SamplingParams p;
  EXPECT_THAT(error_of([&] { engine.add_request({}, p); }), HasSubstr("the prompt is empty"));
  EXPECT_THAT(error_of([&] { engine.add_request(prompt(256, 0), p); }),
              HasSubstr("the prompt has 256 tokens, which leaves no room for output in max_model_len = 256"));
  EXPECT_THAT(error_of([&] { engine.add_request({1, 256}, p); }),
              HasSubstr("the prompt holds token id 256, outside the vocabulary of 256"));
  EXPECT_THAT(error_of([&] { engine.add_request({1, -1}, p); }), HasSubstr("token id -1"));
  p.stop_token_ids = {999};
  EXPECT_THAT(error_of([&] { engine.add_request({1}, p); }), HasSubstr("stop_token_ids holds token id 999"));
  p = SamplingParams();
  p.top_p = 2.0f;
  EXPECT_THAT(error_of([&] { engine.add_request({1}, p); }), HasSubstr("top_p = 2"));
  p = SamplingParams();
  p.presence_penalty = 2.5f;
  EXPECT_THAT(error_of([&] { engine.add_request({1}, p); }),
              HasSubstr("presence_penalty = 2.5"));
  p = SamplingParams();
  p.frequency_penalty = -3.0f;
  EXPECT_THAT(error_of([&] { engine.add_request({1}, p); }),
              HasSubstr("frequency_penalty = -3"));
  p = SamplingParams();
  p.repetition_penalty = 0.0f;
  EXPECT_THAT(error_of([&] { engine.add_request({1}, p); }),
              HasSubstr("repetition_penalty = 0"));
  p = SamplingParams();
  p.logprobs = 21;
  EXPECT_THAT(error_of([&] { engine.add_request({1}, p); }), HasSubstr("logprobs = 21"));
  EXPECT_FALSE(engine.has_work());
}

TEST_P(EngineTest, LogitEntriesSeeTheHistoryAndBiasOfTheRequestAlone) {
  // The stand-in's token depends on the logit entries it is handed, so any
  // entry missing, repeated, miscounted or mis-biased (across chunked prefill, or across
  // requests sharing a step) changes the output.
  StandInExecutor model(kVocab);
  EngineConfig config = small_config();
  config.max_num_batched_tokens = 16; // long prompts come in chunks
  Engine engine(model, config);
  std::map<uint64_t, std::pair<std::vector<int32_t>, SamplingParams>> sent;
  for (int i = 0; i < 12; ++i) {
    SamplingParams p;
    p.temperature = i % 2 ? 0.0f : 0.7f;
    p.max_tokens = 20;
    p.ignore_eos = true;
    p.repetition_penalty = i % 3 == 0 ? 1.0f : 1.1f + 0.1f * i;
    p.frequency_penalty = i % 4 == 1 ? 0.0f : 0.25f * (i % 5);
    p.presence_penalty = i % 2 ? -1.5f : 0.0f;
    auto tokens = prompt(5 + i * 7, i);
    tokens.insert(tokens.end(), tokens.begin(), tokens.begin() + 3); // repeats
    // A biased prompt token shares its entry; another is biased alone.
    if (i % 3 != 1)
      p.logit_bias = {{tokens[1], 2.5f}, {kVocab - 1 - i, -100.0f}};
    sent[engine.add_request(tokens, p)] = {tokens, p};
  }
  auto got = run(engine);
  for (auto &[id, req] : sent) {
    const SamplingParams &p = req.second;
    Reference ref = run_alone(model, req.first, p, default_seed(id),
                              config.eos_token_ids, config.max_model_len);
    EXPECT_EQ(got[id].tokens, ref.tokens) << "request " << id;
  }
}

TEST_P(EngineTest, ReportsLogprobsOnlyToRequestsThatAsk) {
  StandInExecutor model(kVocab);
  Engine engine(model, small_config());
  SamplingParams none, zero, three;
  for (SamplingParams *p : {&none, &zero, &three}) {
    p->max_tokens = 4;
    p->ignore_eos = true;
  }
  zero.logprobs = 0;
  three.logprobs = 3;
  const uint64_t a = engine.add_request(prompt(9, 1), none);
  const uint64_t b = engine.add_request(prompt(30, 2), zero);
  const uint64_t c = engine.add_request(prompt(4, 3), three);
  int tokens_seen = 0;
  while (engine.has_work())
    for (const RequestOutput &o : engine.step()) {
      if (o.token < 0)
        continue;
      ++tokens_seen;
      if (o.id == a || o.id == b) {
        EXPECT_TRUE(o.top_logprobs.empty());
        EXPECT_EQ(o.logprob, o.id == b ? StandInExecutor::kSampledLogprob : 0.0f);
        continue;
      }
      ASSERT_EQ(o.id, c);
      EXPECT_EQ(o.logprob, StandInExecutor::kSampledLogprob);
      ASSERT_EQ(o.top_logprobs.size(), 3u);
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(o.top_logprobs[k].first, (o.token + k) % kVocab);
        EXPECT_EQ(o.top_logprobs[k].second, -1.0f - k);
      }
    }
  EXPECT_EQ(tokens_seen, 12);
}

TEST_P(EngineTest, OutputsEqualTheModelRunAlone) {
  StandInExecutor model(kVocab);
  EngineConfig config = small_config();
  Engine engine(model, config);
  std::map<uint64_t, std::pair<std::vector<int32_t>, SamplingParams>> sent;
  for (int i = 0; i < 20; ++i) {
    SamplingParams p;
    p.temperature = i % 2 ? 0.0f : 0.9f;
    if (i % 3 == 0)
      p.seed = 1000 + i;
    p.max_tokens = 1 + i * 3;
    p.ignore_eos = i % 4 == 0;
    auto tokens = prompt(1 + i * 9, i);
    sent[engine.add_request(tokens, p)] = {tokens, p};
  }
  auto got = run(engine);
  ASSERT_EQ(got.size(), sent.size());
  for (auto &[id, req] : sent) {
    const SamplingParams &p = req.second;
    Reference ref = run_alone(model, req.first, p, p.seed ? *p.seed : default_seed(id),
                              config.eos_token_ids, config.max_model_len);
    EXPECT_EQ(got[id].tokens, ref.tokens) << "request " << id;
    EXPECT_EQ(got[id].reason, ref.reason) << "request " << id;
    EXPECT_EQ(got[id].finished_events, 1);
  }
  EXPECT_EQ(engine.kv_pool().num_free_blocks() + engine.radix_cache().num_cached_blocks(),
            engine.kv_pool().num_blocks());
}

// Finds a prompt whose greedy continuation first samples `token` at index
// *at, somewhere in [1, within).
std::vector<int32_t> prompt_reaching(const StandInExecutor &model, int32_t token,
                                     int within, int *at) {
  for (int salt = 0;; ++salt) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = within;
    Reference ref = run_alone(model, prompt(5, salt), p, 0, {}, 1000);
    auto first = std::find(ref.tokens.begin(), ref.tokens.end(), token);
    if (first != ref.tokens.begin() && first != ref.tokens.end()) {
      *at = static_cast<int>(first - ref.tokens.begin());
      return prompt(5, salt);
    }
  }
}

// A vocabulary for structured output: kEos ends generation, the other tokens
// spell pieces of bracketed digit lists, and pieces that never fit them.
std::shared_ptr<const grammar::Vocabulary> list_vocabulary(int32_t size = kVocab) {
  const std::vector<std::string> pieces = {"[", "]", ",", "0", "1", "2", "3",  "4",
                                           "5", "6", "7", "8", "9", "12", "[3", "4]",
                                           ",5", "a", "b", "]]", "[,", " "};
  std::vector<std::string> bytes(size);
  for (int32_t v = 0; v < size; ++v)
    if (v != kEos)
      bytes[v] = pieces[v % pieces.size()];
  return std::make_shared<const grammar::Vocabulary>(bytes, std::vector<int32_t>{kEos});
}

std::shared_ptr<const grammar::CompiledGrammar> compile_gbnf(const char *gbnf,
                                                             int32_t vocab = kVocab) {
  return grammar::compile(grammar::Grammar::parse(gbnf), list_vocabulary(vocab));
}

constexpr const char *kListGrammar = R"(root ::= "[" [0-9]+ ("," [0-9]+)* "]")";

// Masked and unmasked sequences share steps (and chunked prefills); each
// output is what the model gives the request alone, and a grammar's output
// is a sentence of it when it stops.
TEST_P(EngineTest, GrammarsMaskOnlyTheirOwnSequences) {
  StandInExecutor model(kVocab);
  EngineConfig config = small_config();
  config.max_num_batched_tokens = 16;
  Engine engine(model, config);
  const auto list = compile_gbnf(kListGrammar);
  std::map<uint64_t, std::pair<std::vector<int32_t>, SamplingParams>> sent;
  for (int i = 0; i < 24; ++i) {
    SamplingParams p;
    p.temperature = i % 3 ? 0.8f : 0.0f;
    p.max_tokens = 40;
    if (i % 2 == 0)
      p.grammar = list;
    if (i % 4 == 0)
      p.logit_bias = {{5, 3.0f}};
    auto tokens = prompt(3 + i * 5, i);
    sent[engine.add_request(tokens, p)] = {tokens, p};
  }
  auto got = run(engine);
  const auto vocabulary = list_vocabulary();
  int sentences = 0;
  for (auto &[id, req] : sent) {
    const SamplingParams &p = req.second;
    Reference ref = run_alone(model, req.first, p, default_seed(id), config.eos_token_ids,
                              config.max_model_len);
    EXPECT_EQ(got[id].tokens, ref.tokens) << "request " << id;
    EXPECT_EQ(got[id].reason, ref.reason) << "request " << id;
    if (!p.grammar || got[id].reason != FinishReason::kStop)
      continue;
    std::string text;
    for (int32_t token : got[id].tokens)
      text += vocabulary->token_bytes(token);
    EXPECT_TRUE(std::regex_match(text, std::regex(R"(\[[0-9]+(,[0-9]+)*\])"))) << text;
    EXPECT_EQ(got[id].tokens.back(), kEos);
    ++sentences;
  }
  EXPECT_GT(sentences, 3) << "the grammar's outputs should mostly end";
}

TEST_P(EngineTest, AGrammarThatDeadEndsFinishesTheRequestWithTheReason) {
  StandInExecutor model(kVocab);
  Engine engine(model, small_config());
  SamplingParams p;
  p.grammar = compile_gbnf(R"(root ::= "a" "q")"); // no token spells q
  const uint64_t id = engine.add_request(prompt(5, 1), p);
  auto got = run(engine);
  EXPECT_EQ(got[id].reason, FinishReason::kError);
  EXPECT_THAT(got[id].error, HasSubstr("the grammar allows no token after the 1 generated"));
  ASSERT_EQ(got[id].tokens.size(), 1u);
  EXPECT_EQ(list_vocabulary()->token_bytes(got[id].tokens[0]), "a");

  p.grammar = compile_gbnf(R"(root ::= "q")");
  EXPECT_THAT(error_of([&] { engine.add_request(prompt(5, 1), p); }),
              HasSubstr("request rejected: structured output: the grammar allows no first token"));
  p.grammar = compile_gbnf(kListGrammar, 100);
  EXPECT_THAT(error_of([&] { engine.add_request(prompt(5, 1), p); }),
              HasSubstr("its grammar is compiled for a vocabulary of 100 tokens, the model's "
                        "has 256"));
}

TEST_P(EngineTest, StopsOnEosStopTokensMinTokensAndLength) {
  StandInExecutor model(kVocab);
  int at = 0;
  std::vector<int32_t> eos_prompt = prompt_reaching(model, kEos, 200, &at);
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = 1000;

  SamplingParams p = greedy;
  p.max_tokens = 300;
  EngineConfig long_config = small_config();
  long_config.max_model_len = 1000;
  Engine long_engine(model, long_config);
  uint64_t eos = long_engine.add_request(eos_prompt, p);
  p.ignore_eos = true;
  uint64_t ignored = long_engine.add_request(eos_prompt, p);
  p.ignore_eos = false;
  p.min_tokens = at + 2;
  const SamplingParams min_params = p;
  uint64_t min_tokens = long_engine.add_request(eos_prompt, p);
  p = greedy;
  p.max_tokens = 300;
  p.stop_token_ids = {kEos};
  uint64_t stop_id = long_engine.add_request(eos_prompt, p);
  auto got = run(long_engine);
  EXPECT_EQ(got[eos].reason, FinishReason::kStop);
  EXPECT_EQ(got[eos].tokens.size(), size_t(at + 1)) << "EOS is the last token";
  EXPECT_EQ(got[eos].tokens.back(), kEos);
  EXPECT_EQ(got[ignored].reason, FinishReason::kLength);
  EXPECT_EQ(got[ignored].tokens.size(), 300u);
  EXPECT_GT(got[min_tokens].tokens.size(), size_t(at + 1));
  // Before min_tokens, EOS cannot be sampled (the step bans it) rather than
  // being sampled and ignored.
  const std::vector<int32_t> &early = got[min_tokens].tokens;
  EXPECT_EQ(std::count(early.begin(), early.begin() + at + 2, kEos), 0);
  EXPECT_EQ(early, run_alone(model, eos_prompt, min_params, default_seed(min_tokens),
                             long_config.eos_token_ids, long_config.max_model_len)
                       .tokens);
  EXPECT_EQ(got[stop_id].reason, FinishReason::kStop);
  EXPECT_EQ(got[stop_id].tokens.size(), size_t(at + 1));

  // max_model_len bounds prompt + output.
  StandInExecutor model2(kVocab);
  EngineConfig config = small_config();
  config.max_model_len = 40;
  Engine engine(model2, config);
  p = greedy;
  p.ignore_eos = true;
  uint64_t capped = engine.add_request(prompt(30, 1), p);
  uint64_t longest = engine.add_request(prompt(39, 2), p);
  auto capped_run = run(engine);
  EXPECT_EQ(capped_run[capped].reason, FinishReason::kLength);
  EXPECT_EQ(capped_run[capped].tokens.size(), 10u);
  EXPECT_EQ(capped_run[longest].reason, FinishReason::kLength);
  EXPECT_EQ(capped_run[longest].tokens.size(), 1u);
}

TEST_P(EngineTest, AbortAndFinishEndRequestsWhereverTheyAre) {
  StandInExecutor model(kVocab);
  EngineConfig config = small_config();
  config.max_num_seqs = 2;
  Engine engine(model, config);
  SamplingParams p;
  p.ignore_eos = true;
  p.max_tokens = 50;
  uint64_t a = engine.add_request(prompt(20, 0), p);
  uint64_t b = engine.add_request(prompt(20, 1), p);
  uint64_t waiting = engine.add_request(prompt(20, 2), p);
  engine.step();
  engine.step();
  engine.abort(a);
  engine.finish(b); // a stop string matched in b's text
  engine.abort(waiting);
  engine.abort(12345); // unknown ids are ignored
  std::map<uint64_t, RequestOutput> ended;
  const std::vector<RequestOutput> outputs = engine.step();
  for (const RequestOutput &o : outputs)
    ended[o.id] = o;
  // Overlapped, the second step was still running: its tokens are dropped.
  ASSERT_EQ(outputs.size(), 3u);
  ASSERT_EQ(ended.size(), 3u);
  EXPECT_EQ(ended[a].finish_reason, FinishReason::kAbort);
  EXPECT_EQ(ended[b].finish_reason, FinishReason::kStop);
  EXPECT_EQ(ended[waiting].finish_reason, FinishReason::kAbort);
  EXPECT_EQ(ended[a].token, -1);
  EXPECT_EQ(ended[a].num_output_tokens, GetParam() ? 1 : 2);
  EXPECT_FALSE(engine.has_work());
  engine.abort(a); // already finished
  EXPECT_TRUE(engine.step().empty());
  engine.check_invariants();
  EXPECT_EQ(engine.kv_pool().num_free_blocks() + engine.radix_cache().num_cached_blocks(),
            engine.kv_pool().num_blocks());
  EngineStats s = engine.stats();
  EXPECT_EQ(s.num_finished[int(FinishReason::kAbort)], 2u);
  EXPECT_EQ(s.num_finished[int(FinishReason::kStop)], 1u);
  EXPECT_EQ(s.num_running + s.num_waiting, 0);
}

class FailingExecutor : public StandInExecutor {
public:
  FailingExecutor() : StandInExecutor(kVocab) {}
  void launch(const StepBatch &b) override {
    if (refuse_launch)
      throw std::invalid_argument("launch refused");
    StandInExecutor::launch(b);
  }
  void wait(StepOutput &out) override {
    StandInExecutor::wait(out);
    if (fail_next) {
      fail_next = false;
      throw std::runtime_error("device lost");
    }
    if (short_output)
      out.next_tokens.pop_back();
  }
  bool fail_next = false;
  bool short_output = false;
  bool refuse_launch = false;
};

TEST_P(EngineTest, ExecutorFailureEndsTheStepsRequestsAndServingGoesOn) {
  FailingExecutor model;
  EngineConfig config = small_config();
  Engine engine(model, config);
  // Overlapped, the first call launches a step and completes none.
  auto step_until_outputs = [&] {
    std::vector<RequestOutput> outputs;
    for (int i = 0; i < 2 && outputs.empty(); ++i)
      outputs = engine.step();
    return outputs;
  };
  SamplingParams p;
  p.max_tokens = 5;
  p.ignore_eos = true;
  engine.add_request(prompt(10, 0), p);
  engine.add_request(prompt(10, 1), p);
  model.fail_next = true;
  auto outputs = step_until_outputs();
  ASSERT_EQ(outputs.size(), 2u);
  for (const RequestOutput &o : outputs) {
    EXPECT_EQ(o.finish_reason, FinishReason::kError);
    EXPECT_EQ(o.error, "executor failed: device lost");
  }
  engine.check_invariants();
  EXPECT_EQ(engine.kv_pool().num_free_blocks(), engine.kv_pool().num_blocks());
  EXPECT_TRUE(run(engine).empty()) << "a step launched after the failed one reports nothing";

  engine.add_request(prompt(10, 2), p);
  model.short_output = true;
  outputs = step_until_outputs();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].error, "executor returned 0 tokens for 1 sequences");
  model.short_output = false;
  run(engine);

  // A step the executor refuses to launch fails its requests; the step
  // launched before it still completes.
  const uint64_t first = engine.add_request(prompt(10, 3), p);
  outputs = step_until_outputs();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_GE(outputs[0].token, 0);
  const uint64_t second = engine.add_request(prompt(10, 4), p);
  model.refuse_launch = true;
  auto got = run(engine);
  model.refuse_launch = false;
  EXPECT_EQ(got[first].reason, FinishReason::kError);
  EXPECT_EQ(got[second].reason, FinishReason::kError);
  EXPECT_EQ(got[second].error, "executor failed: launch refused");
  EXPECT_TRUE(got[second].tokens.empty());

  uint64_t ok = engine.add_request(prompt(10, 5), p);
  got = run(engine);
  EXPECT_EQ(got[ok].reason, FinishReason::kLength);
  EXPECT_EQ(engine.stats().num_finished[int(FinishReason::kError)], 5u);
}

// An engine that goes away with a step in flight waits for it: the executor
// reads the batch, which the engine owns, until then.
TEST_P(EngineTest, GoingAwayWaitsForTheStepInFlight) {
  StandInExecutor model(kVocab);
  {
    Engine engine(model, small_config());
    SamplingParams p;
    p.max_tokens = 8;
    engine.add_request(prompt(10, 0), p);
    engine.step();
    engine.step();
    EXPECT_EQ(model.num_launched(), GetParam() ? 1u : 0u);
  }
  EXPECT_EQ(model.num_launched(), 0u);
}

TEST_P(EngineTest, UnseededSamplingIsReproducibleWhateverTheBatch) {
  // The same requests, alone one after another and all at once with a tiny
  // token budget, give the same tokens.
  auto outputs = [this](int32_t max_num_seqs, int32_t budget, bool one_at_a_time) {
    StandInExecutor model(kVocab);
    EngineConfig c = small_config();
    c.max_num_seqs = max_num_seqs;
    c.max_num_batched_tokens = budget;
    Engine engine(model, c);
    std::vector<std::vector<int32_t>> result;
    std::map<uint64_t, Collected> all;
    for (int i = 0; i < 6; ++i) {
      SamplingParams p;
      p.max_tokens = 12;
      p.ignore_eos = true;
      engine.add_request(prompt(30 + i, i), p);
      if (one_at_a_time)
        for (auto &[id, got] : run(engine))
          all[id] = got;
    }
    for (auto &[id, got] : run(engine))
      all[id] = got;
    for (auto &[id, got] : all)
      result.push_back(got.tokens);
    return result;
  };
  auto alone = outputs(1, 64, true);
  EXPECT_EQ(alone, outputs(8, 8, false));
  EXPECT_EQ(alone.size(), 6u);
  EXPECT_NE(alone[0], alone[1]);
}

TEST_P(EngineTest, ReusesPrefixesAcrossRequestsAndTurns) {
  StandInExecutor model(kVocab);
  Engine engine(model, small_config());
  SamplingParams p;
  p.ignore_eos = true;
  p.max_tokens = 7;
  std::vector<int32_t> system = prompt(48, 9);
  uint64_t first = engine.add_request(system, p);
  auto got = run(engine);
  EXPECT_EQ(got[first].num_cached_tokens, 0);
  std::vector<int32_t> second_turn = system;
  second_turn.insert(second_turn.end(), got[first].tokens.begin(), got[first].tokens.end());
  second_turn.insert(second_turn.end(), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  uint64_t second = engine.add_request(second_turn, p);
  got = run(engine);
  EXPECT_EQ(got[second].num_cached_tokens, 48) << "the first turn's whole blocks";
  EngineStats s = engine.stats();
  EXPECT_EQ(s.prefix_cache_hit_tokens, 48u);
  EXPECT_EQ(s.prefix_cache_query_tokens, 47u + 64u);

  EngineConfig off = small_config();
  off.enable_prefix_caching = false;
  StandInExecutor model2(kVocab);
  Engine uncached(model2, off);
  uncached.add_request(system, p);
  run(uncached);
  uint64_t again = uncached.add_request(system, p);
  EXPECT_EQ(run(uncached)[again].num_cached_tokens, 0);
  EXPECT_EQ(uncached.kv_pool().num_free_blocks(), uncached.kv_pool().num_blocks());
}

TEST_P(EngineTest, ReportsStats) {
  StandInExecutor model(kVocab);
  Engine engine(model, small_config());
  SamplingParams p;
  p.ignore_eos = true;
  p.max_tokens = 4;
  engine.add_request(prompt(40, 0), p);
  engine.add_request(prompt(40, 1), p);
  engine.step();
  EngineStats s = engine.stats();
  EXPECT_EQ(s.num_running, 2);
  EXPECT_EQ(s.num_waiting, 0);
  EXPECT_EQ(s.num_kv_blocks, 64);
  EXPECT_DOUBLE_EQ(s.kv_usage, 5.0 / 64); // 3 + 2 blocks
  EXPECT_EQ(s.num_batched_tokens, 64u);   // 40 + 24 of the second prompt
  run(engine);
  s = engine.stats();
  EXPECT_EQ(s.num_generated_tokens, 8u);
  EXPECT_EQ(s.num_finished[int(FinishReason::kLength)], 2u);
  EXPECT_DOUBLE_EQ(s.kv_usage, 0.0) << "cached blocks count as free";
  EXPECT_GT(s.num_cached_kv_blocks, 0);
}

// A step() call's timing: how long it scheduled, spent in the executor and
// post-processed, and the executor's idle time before the step it completed,
// reported only for steps launched back to back (not after a call that
// launched nothing, nor after a wait_for_work that blocked).
TEST_P(EngineTest, TimesItsStepsAndTheExecutorsIdleGaps) {
  StandInExecutor model(kVocab);
  Engine engine(model, small_config());
  const bool overlapped = GetParam();
  SamplingParams p;
  p.ignore_eos = true;
  p.max_tokens = 3;
  // Each call's timing until the engine is idle.
  auto serve = [&] {
    std::vector<StepTiming> calls;
    while (engine.has_work()) {
      engine.step();
      calls.push_back(engine.last_step_timing());
    }
    return calls;
  };
  // Overlapped, the first call completes no step, and the last one
  // completes the last step and launches none.
  const size_t first_completed = overlapped ? 1 : 0;

  engine.add_request(prompt(8, 0), p);
  std::vector<StepTiming> calls = serve();
  ASSERT_EQ(calls.size(), overlapped ? 4u : 3u);
  for (const StepTiming &t : calls) {
    EXPECT_TRUE(t.executed);
    EXPECT_GE(t.schedule_seconds, 0.0);
    EXPECT_GT(t.execute_seconds, 0.0);
    EXPECT_GE(t.postprocess_seconds, 0.0);
  }
  EXPECT_FALSE(calls[0].gap_seconds);
  EXPECT_FALSE(calls[first_completed].gap_seconds) << "no step ran before";
  for (size_t i = first_completed + 1; i < calls.size(); ++i) {
    ASSERT_TRUE(calls[i].gap_seconds) << "back to back";
    EXPECT_GE(*calls[i].gap_seconds, 0.0);
  }
  if (!overlapped) // the stand-in runs a step when it is waited for
    EXPECT_GE(*calls[1].gap_seconds, calls[1].schedule_seconds);

  engine.step(); // nothing to run
  EXPECT_FALSE(engine.last_step_timing().executed);
  engine.add_request(prompt(8, 1), p);
  calls = serve();
  EXPECT_FALSE(calls[first_completed].gap_seconds) << "the call before launched nothing";
  EXPECT_TRUE(calls.back().gap_seconds);

  EXPECT_FALSE(engine.wait_for_work(std::chrono::milliseconds(1))) << "blocks, then times out";
  engine.add_request(prompt(8, 2), p);
  calls = serve();
  EXPECT_FALSE(calls[first_completed].gap_seconds) << "the engine waited for work";
  EXPECT_TRUE(calls.back().gap_seconds);

  const EngineStats s = engine.stats();
  EXPECT_EQ(s.num_steps, 9u);
  EXPECT_GT(s.execute_seconds, 0.0);
  EXPECT_GT(s.postprocess_seconds, 0.0);
}

TEST_P(EngineTest, TimestampsFollowTheRequestsLife) {
  StandInExecutor model(kVocab);
  EngineConfig config = small_config();
  config.max_num_batched_tokens = 16; // the prompt takes three steps
  config.max_num_seqs = 8;
  Engine engine(model, config);
  SamplingParams p;
  p.ignore_eos = true;
  p.max_tokens = 5;
  Clock::time_point before = Clock::now();
  engine.add_request(prompt(40, 0), p);
  std::vector<RequestOutput> outputs;
  while (engine.has_work())
    for (RequestOutput &o : engine.step())
      outputs.push_back(std::move(o));
  ASSERT_EQ(outputs.size(), 5u);
  const RequestTimes &t = outputs.back().times;
  EXPECT_LE(before, t.arrival);
  EXPECT_LE(t.arrival, t.first_scheduled);
  EXPECT_LT(t.first_scheduled, t.first_token) << "two prompt chunks ran in between";
  EXPECT_EQ(t.first_token, outputs.front().time);
  for (size_t i = 1; i < outputs.size(); ++i)
    EXPECT_LE(outputs[i - 1].time, outputs[i].time);
  EXPECT_EQ(t.finish, outputs.back().time);
  EXPECT_EQ(outputs.back().num_output_tokens, 5);
  EXPECT_EQ(outputs.back().num_prompt_tokens, 40);
}

TEST_P(EngineTest, AcceptsRequestsFromAnotherThreadWhileStepping) {
  StandInExecutor model(kVocab);
  EngineConfig config = small_config();
  Engine engine(model, config);
  constexpr int kRequests = 300;
  std::vector<uint64_t> ids(kRequests);
  std::vector<std::vector<int32_t>> prompts(kRequests);
  std::atomic<bool> submitted{false};
  std::thread server([&] {
    for (int i = 0; i < kRequests; ++i) {
      SamplingParams p;
      p.max_tokens = 1 + i % 9;
      p.seed = i;
      prompts[i] = prompt(1 + i % 40, i);
      ids[i] = engine.add_request(prompts[i], p);
      if (i % 10 == 9)
        engine.abort(ids[i - 3]);
      if (i % 50 == 0)
        std::this_thread::yield();
    }
    submitted = true;
  });
  std::map<uint64_t, Collected> got;
  while (!submitted || engine.has_work()) {
    if (!engine.wait_for_work(std::chrono::milliseconds(50)))
      continue;
    for (const RequestOutput &o : engine.step()) {
      Collected &c = got[o.id];
      if (o.token >= 0)
        c.tokens.push_back(o.token);
      if (o.finished) {
        c.reason = o.finish_reason;
        ++c.finished_events;
      }
    }
    engine.check_invariants();
  }
  server.join();
  ASSERT_EQ(got.size(), size_t(kRequests));
  for (int i = 0; i < kRequests; ++i) {
    const Collected &c = got[ids[i]];
    EXPECT_EQ(c.finished_events, 1);
    SamplingParams p;
    p.max_tokens = 1 + i % 9;
    Reference ref = run_alone(model, prompts[i], p, i, config.eos_token_ids, config.max_model_len);
    if (c.reason == FinishReason::kAbort) {
      ASSERT_LE(c.tokens.size(), ref.tokens.size());
      EXPECT_TRUE(std::equal(c.tokens.begin(), c.tokens.end(), ref.tokens.begin()));
    } else {
      EXPECT_EQ(c.tokens, ref.tokens) << "request " << i;
    }
  }
  EXPECT_FALSE(engine.wait_for_work(std::chrono::milliseconds(1)));
}

} // namespace
} // namespace llmserve
