#include "bench/workload.h"

#include "test_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

namespace llmserve::bench {
namespace {

TEST(LengthRange, RatioAndExplicitRange) {
  LengthRange r = parse_length_range("--random-input-len", "100", 0.5);
  EXPECT_EQ(r.min, 50);
  EXPECT_EQ(r.max, 150);
  r = parse_length_range("--random-input-len", "100:1024", 0.9);
  EXPECT_EQ(r.min, 100);
  EXPECT_EQ(r.max, 1024);
}

TEST(LengthRange, BadValuesNameTheFlag) {
  for (const char *bad : {"", "0", "-3", "12x", "5:2", ":4", "4:"})
    EXPECT_THROW(
        {
          try {
            parse_length_range("--random-output-len", bad, 0.0);
          } catch (const std::invalid_argument &e) {
            EXPECT_NE(std::string(e.what()).find("--random-output-len"), std::string::npos);
            throw;
          }
        },
        std::invalid_argument)
        << bad;
  EXPECT_THROW(parse_length_range("--random-input-len", "10", 1.0), std::invalid_argument);
}

TEST(RandomWorkload, TokenIdsWithoutATokenizer) {
  const auto requests = random_workload(200, {5, 9}, {3, 4}, {nullptr, 50}, 7);
  ASSERT_EQ(requests.size(), 200u);
  std::set<size_t> lengths;
  for (const BenchRequest &r : requests) {
    EXPECT_TRUE(r.prompt.empty());
    lengths.insert(r.prompt_tokens.size());
    for (int32_t id : r.prompt_tokens) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, 50);
    }
    EXPECT_GE(r.output_len, 3);
    EXPECT_LE(r.output_len, 4);
  }
  EXPECT_EQ(lengths, (std::set<size_t>{5, 6, 7, 8, 9}));
  // Reproducible from the seed, different across seeds.
  EXPECT_EQ(random_workload(200, {5, 9}, {3, 4}, {nullptr, 50}, 7)[17].prompt_tokens,
            requests[17].prompt_tokens);
  EXPECT_NE(random_workload(200, {5, 9}, {3, 4}, {nullptr, 50}, 8)[17].prompt_tokens,
            requests[17].prompt_tokens);
}

TEST(RandomWorkload, TextPromptsEncodeToTheExactLength) {
  const Tokenizer tokenizer = testing::make_test_tokenizer();
  // The byte tokens of 'é' are in the vocabulary; 'é' is made of them.
  ASSERT_EQ(tokenizer.encode("\xC3\xA9", false).size(), 2u);
  for (int32_t length : {2, 37, 300}) {
    const auto requests = random_workload(20, {length, length}, {1, 1}, {&tokenizer, 0}, 3);
    for (const BenchRequest &r : requests) {
      ASSERT_FALSE(r.prompt.empty());
      EXPECT_EQ(tokenizer.encode(r.prompt, true), r.prompt_tokens);
      EXPECT_EQ(r.prompt_tokens.front(), 1); // <s>, counted in the length
      EXPECT_EQ(r.prompt_tokens.size(), static_cast<size_t>(length)) << r.prompt;
      EXPECT_EQ(r.prompt.find("\xEF\xBF\xBD"), std::string::npos) << "U+FFFD in " << r.prompt;
    }
  }
}

TEST(RandomWorkload, TheSeedGivesTheSameLengthsWithOrWithoutATokenizer) {
  const Tokenizer tokenizer = testing::make_test_tokenizer();
  const auto text = random_workload(30, {2, 200}, {1, 50}, {&tokenizer, 0}, 11);
  const auto ids = random_workload(30, {2, 200}, {1, 50}, {nullptr, 1000}, 11);
  for (size_t i = 0; i < text.size(); ++i) {
    EXPECT_EQ(text[i].prompt_tokens.size(), ids[i].prompt_tokens.size()) << i;
    EXPECT_EQ(text[i].output_len, ids[i].output_len) << i;
  }
}

TEST(RandomWorkload, NeedsTokensToDrawFrom) {
  EXPECT_THROW(random_workload(1, {1, 1}, {1, 1}, {nullptr, 0}, 0), std::invalid_argument);
}

TEST(SharedPrefixWorkload, GroupsShareTheirSystemPrompt) {
  SharedPrefixSpec spec;
  spec.num_groups = 3;
  spec.prompts_per_group = 4;
  spec.system_prompt_len = 64;
  spec.question_len = 8;
  spec.output_len = 5;
  const auto requests = shared_prefix_workload(spec, {nullptr, 1000}, 1);
  ASSERT_EQ(requests.size(), 12u);
  std::map<std::vector<int32_t>, int> groups;
  for (const BenchRequest &r : requests) {
    ASSERT_EQ(r.prompt_tokens.size(), 72u);
    EXPECT_EQ(r.output_len, 5);
    ++groups[std::vector<int32_t>(r.prompt_tokens.begin(), r.prompt_tokens.begin() + 64)];
  }
  EXPECT_EQ(groups.size(), 3u);
  for (const auto &[prefix, count] : groups)
    EXPECT_EQ(count, 4);
  // Shuffled: the first four requests are not one group.
  std::set<std::vector<int32_t>> first_four;
  for (int i = 0; i < 4; ++i)
    first_four.insert(std::vector<int32_t>(requests[i].prompt_tokens.begin(),
                                           requests[i].prompt_tokens.begin() + 64));
  EXPECT_GT(first_four.size(), 1u);
}

TEST(SharedPrefixWorkload, TextPromptsShareTheirPrefixText) {
  const Tokenizer tokenizer = testing::make_test_tokenizer();
  SharedPrefixSpec spec{2, 3, 100, 10, 4};
  const auto requests = shared_prefix_workload(spec, {&tokenizer, 0}, 5);
  std::set<std::string> prefixes;
  for (const BenchRequest &r : requests) {
    const size_t split = r.prompt.find("\n\n");
    ASSERT_NE(split, std::string::npos);
    prefixes.insert(r.prompt.substr(0, split));
    EXPECT_EQ(tokenizer.encode(r.prompt, true), r.prompt_tokens);
  }
  EXPECT_EQ(prefixes.size(), 2u);
}

TEST(SharedPrefixWorkload, RejectsEmptyGroups) {
  SharedPrefixSpec spec;
  spec.prompts_per_group = 0;
  EXPECT_THROW(shared_prefix_workload(spec, {nullptr, 10}, 0), std::invalid_argument);
}

class JsonlWorkload : public ::testing::Test {
protected:
  std::string write(const std::string &text) {
    const std::string path =
        (std::filesystem::temp_directory_path() /
         ("bench_jsonl_" + std::to_string(::getpid()) + "_" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl"))
            .string();
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const std::string &p : paths_)
      std::filesystem::remove(p);
  }
  const Tokenizer tokenizer_ = testing::make_test_tokenizer();
  std::vector<std::string> paths_;
};

TEST_F(JsonlWorkload, ReadsPromptsAndOutputLengths) {
  const std::string path =
      write("{\"prompt\": \"the cat\", \"output_len\": 7}\n\n{\"prompt\": \"an ant\"}\n"
            "{\"prompt\": \"third\"}\n");
  const auto requests = jsonl_workload(path, 2, 9, tokenizer_);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].prompt, "the cat");
  EXPECT_EQ(requests[0].output_len, 7);
  EXPECT_EQ(requests[0].prompt_tokens, tokenizer_.encode("the cat", true));
  EXPECT_EQ(requests[1].output_len, 9);
  EXPECT_EQ(jsonl_workload(path, 0, 9, tokenizer_).size(), 3u);
}

TEST_F(JsonlWorkload, ErrorsNameTheFileAndLine) {
  const std::pair<const char *, const char *> cases[] = {
      {"{\"prompt\": \"ok\"}\nnot json\n", ":2: not JSON"},
      {"{\"prompt\": \"ok\", \"output_len\": 1e999}\n", ":1: not JSON"},
      {"[1, 2]\n", ":1: expected an object"},
      {"{\"prompt\": \"\"}\n", ":1: expected an object with a non-empty string"},
      {"{\"prompt\": 3}\n", ":1: expected an object"},
      {"{\"prompt\": \"a\", \"output_len\": 0}\n", ":1: \"output_len\" must be"},
      {"{\"prompt\": \"a\", \"output_len\": \"5\"}\n", ":1: \"output_len\" must be"},
      {"\n\n", "no prompts"},
  };
  for (const auto &[text, message] : cases) {
    const std::string path = write(text);
    try {
      jsonl_workload(path, 0, 1, tokenizer_);
      ADD_FAILURE() << "no error for " << text;
    } catch (const std::runtime_error &e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(jsonl_workload("/nonexistent/prompts.jsonl", 0, 1, tokenizer_),
               std::runtime_error);
}

} // namespace
} // namespace llmserve::bench
