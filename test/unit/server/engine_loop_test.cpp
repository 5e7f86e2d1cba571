// EngineLoop and Generation over the stand-in model: routing of outputs to
// their queues, the in-flight limit, stop strings, aborts.
#include "server/engine_loop.h"
#include "server/generation.h"

#include "support/stand_in_executor.h"
#include "tokenizer/test_tokenizers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace llmserve {
namespace {

using namespace std::chrono_literals;

// The stand-in model, but a step waits while the test holds it: what is in
// flight stays in flight however the threads are scheduled.
class HoldableExecutor : public StandInExecutor {
public:
  using StandInExecutor::StandInExecutor;

  void wait(StepOutput &out) override {
    std::unique_lock lock(mutex_);
    released_.wait(lock, [&] { return !held_; });
    StandInExecutor::wait(out);
  }
  void hold() {
    std::lock_guard lock(mutex_);
    held_ = true;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      held_ = false;
    }
    released_.notify_all();
  }

private:
  std::mutex mutex_;
  std::condition_variable released_;
  bool held_ = false;
};

// Every test runs with overlapped scheduling on and off.
class EngineLoopTest : public ::testing::TestWithParam<bool> {
protected:
  EngineLoopTest()
      : tokenizer_(Tokenizer::from_json(testing::sentencepiece_json().dump())),
        executor_(int32_t(tokenizer_.vocab_size())), engine_(executor_, config()) {}

  EngineConfig config() const {
    EngineConfig c;
    c.overlap_scheduling = GetParam();
    c.max_num_seqs = 8;
    c.max_num_batched_tokens = 64;
    c.max_model_len = 64;
    c.num_kv_blocks = 64;
    return c;
  }

  static Submission greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return {std::move(prompt), p};
  }

  // Pops outputs until every id in `ids` has finished; tokens by id.
  static std::map<uint64_t, std::vector<int32_t>> drain(OutputQueue &queue, size_t count) {
    std::map<uint64_t, std::vector<int32_t>> tokens;
    size_t finished = 0;
    for (int i = 0; i < 1000 && finished < count; ++i)
      for (const RequestOutput &o : queue.pop(100ms)) {
        if (o.token >= 0)
          tokens[o.id].push_back(o.token);
        finished += o.finished;
      }
    EXPECT_EQ(finished, count);
    return tokens;
  }

  Tokenizer tokenizer_;
  HoldableExecutor executor_;
  Engine engine_;
};

TEST_P(EngineLoopTest, RoutesEachOutputToItsQueue) {
  EngineLoop loop(engine_, 16);
  auto a = std::make_shared<OutputQueue>();
  auto b = std::make_shared<OutputQueue>();
  std::vector<uint64_t> ids_a = loop.submit({greedy({5, 6}, 4), greedy({5, 6}, 4)}, a);
  std::vector<uint64_t> ids_b = loop.submit({greedy({7}, 3)}, b);
  auto tokens_a = drain(*a, 2);
  auto tokens_b = drain(*b, 1);
  ASSERT_EQ(tokens_a.size(), 2u);
  EXPECT_EQ(tokens_a[ids_a[0]].size(), 4u);
  EXPECT_EQ(tokens_a[ids_a[0]], tokens_a[ids_a[1]]); // greedy, same prompt
  EXPECT_EQ(tokens_b[ids_b[0]].size(), 3u);
  EXPECT_EQ(loop.num_in_flight(), 0);
}

TEST_P(EngineLoopTest, InFlightLimitRefusesWholeSubmissions) {
  EngineLoop loop(engine_, 2);
  auto queue = std::make_shared<OutputQueue>();
  EXPECT_THROW(loop.submit({greedy({5}, 1), greedy({5}, 1), greedy({5}, 1)}, queue),
               std::invalid_argument); // could never fit
  executor_.hold();
  loop.submit({greedy({5}, 40)}, queue);
  EXPECT_THROW(loop.submit({greedy({5}, 1), greedy({5}, 1)}, queue), QueueFullError);
  EXPECT_EQ(loop.num_in_flight(), 1);
  loop.submit({greedy({6}, 40)}, queue);
  EXPECT_THROW(loop.submit({greedy({7}, 1)}, queue), QueueFullError);
  loop.abort_all();
  executor_.release();
  drain(*queue, 2);
  EXPECT_EQ(loop.num_in_flight(), 0);
  EXPECT_EQ(engine_.stats().num_finished[static_cast<int>(FinishReason::kAbort)], 2u);
}

TEST_P(EngineLoopTest, InvalidRequestLeavesNothingBehind) {
  EngineLoop loop(engine_, 8);
  auto queue = std::make_shared<OutputQueue>();
  Submission penalized = greedy({5}, 4);
  penalized.params.presence_penalty = 2.5f;
  try {
    loop.submit({greedy({5}, 40), penalized}, queue);
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("presence_penalty"), std::string::npos);
  }
  // The first was added, then aborted.
  drain(*queue, 0);
  for (int i = 0; i < 100 && engine_.has_work(); ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(engine_.has_work());
  EXPECT_EQ(loop.num_in_flight(), 0);
}

TEST_P(EngineLoopTest, StoppingWithWorkInFlightEnds) {
  auto queue = std::make_shared<OutputQueue>();
  {
    EngineLoop loop(engine_, 8);
    loop.submit({greedy({5}, 60)}, queue);
  }
  EXPECT_EQ(engine_.stats().num_running, 0);
}

class GenerationTest : public EngineLoopTest {
protected:
  ModelInfo model() { return {"tiny", 64, &tokenizer_, nullptr}; }

  // Text and finish reason of each choice of a completions request.
  std::vector<Choice> run(const nlohmann::json &body, EngineLoop &loop, Usage *usage = nullptr) {
    Generation generation(parse_completion_request(body, model()), 64, tokenizer_, loop);
    std::vector<Choice> choices(generation.num_choices());
    auto apply = [&](const std::vector<Generation::Delta> &deltas) {
      for (const auto &d : deltas) {
        choices[d.index].text += d.text;
        if (!d.finish_reason.empty())
          choices[d.index].finish_reason = d.finish_reason;
      }
    };
    apply(generation.start());
    for (int i = 0; i < 1000 && !generation.done(); ++i)
      if (auto deltas = generation.next(100ms))
        apply(*deltas);
    EXPECT_TRUE(generation.done());
    if (usage)
      *usage = generation.usage();
    return choices;
  }
};

TEST_P(GenerationTest, ChoicesEchoStopStringsAndUsage) {
  EngineLoop loop(engine_, 8);
  nlohmann::json body = {{"prompt", "ab"}, {"max_tokens", 12}, {"temperature", 0},
                         {"ignore_eos", true}, {"n", 2}};
  Usage usage;
  std::vector<Choice> plain = run(body, loop, &usage);
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0].text, plain[1].text);
  EXPECT_EQ(plain[0].finish_reason, "length");
  EXPECT_EQ(usage.prompt_tokens, 2);
  EXPECT_EQ(usage.completion_tokens, 24);

  body["echo"] = true;
  EXPECT_EQ(run(body, loop)[1].text, "ab" + plain[1].text);
  body["echo"] = false;

  // Stop at a piece of the middle of the text.
  const std::string &text = plain[0].text;
  ASSERT_GE(text.size(), 6u);
  std::string stop = text.substr(text.size() / 2, 2);
  body["stop"] = stop;
  std::vector<Choice> stopped = run(body, loop, &usage);
  EXPECT_EQ(stopped[0].text, text.substr(0, text.find(stop)));
  EXPECT_EQ(stopped[0].finish_reason, "stop");
  EXPECT_LT(usage.completion_tokens, 24);
  // Up to 10 s: the engine thread may be descheduled on a loaded machine.
  for (int i = 0; i < 1000 && loop.num_in_flight() > 0; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(loop.num_in_flight(), 0);
}

TEST_P(GenerationTest, DroppingAGenerationAbortsIt) {
  EngineLoop loop(engine_, 8);
  // Held, the engine cannot finish the 60 tokens before the drop aborts
  // them, however the threads are scheduled.
  executor_.hold();
  {
    Generation generation(parse_completion_request({{"prompt", "ab"}, {"max_tokens", 60},
                                                    {"ignore_eos", true}},
                                                   model()),
                          64, tokenizer_, loop);
    EXPECT_EQ(loop.num_in_flight(), 1);
  }
  executor_.release();
  // Up to 10 s: the engine thread may be descheduled on a loaded machine.
  for (int i = 0; i < 1000 && loop.num_in_flight() > 0; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(loop.num_in_flight(), 0);
  EXPECT_EQ(engine_.stats().num_finished[static_cast<int>(FinishReason::kAbort)], 1u);
}

std::string schedule_name(const ::testing::TestParamInfo<bool> &info) {
  return info.param ? "Overlapped" : "Serial";
}
INSTANTIATE_TEST_SUITE_P(, EngineLoopTest, ::testing::Bool(), schedule_name);
INSTANTIATE_TEST_SUITE_P(, GenerationTest, ::testing::Bool(), schedule_name);

} // namespace
} // namespace llmserve
