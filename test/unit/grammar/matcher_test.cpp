// The matcher on small vocabularies: stop and special tokens, dead ends,
// rollback, copies, threads, limits; and the vocabulary and token sets.
#include "grammar/matcher.h"
#include "grammar/token_set.h"
#include "grammar_test_util.h"
#include "json_grammar.h"

#include <gtest/gtest.h>

#include <thread>

namespace llmserve::grammar {
namespace {

using testing::allowed;
using testing::compile_text;

// Tokens "a" "b" "c" "é" "\xC3" "\xA9" "ab", a stop token (7) and a special one (8).
std::shared_ptr<const Vocabulary> small_vocabulary() {
  return std::make_shared<const Vocabulary>(
      std::vector<std::string>{"a", "b", "c", "\u00e9", "\xC3", "\xA9", "ab", "", ""},
      std::vector<int32_t>{7});
}

// The ids allowed next.
std::vector<int32_t> next_tokens(const Matcher &m) {
  std::vector<uint32_t> mask(m.grammar().vocabulary().mask_words());
  size_t count = m.fill_next_token_mask(mask.data());
  std::vector<int32_t> ids;
  for (int32_t id = 0; static_cast<size_t>(id) < m.grammar().vocabulary().size(); ++id)
    if (allowed(mask, id))
      ids.push_back(id);
  EXPECT_EQ(count, ids.size());
  return ids;
}

using Ids = std::vector<int32_t>;

TEST(Matcher, StopTokensOnlyWhereTheGrammarMayEnd) {
  Matcher m(compile_text(R"(root ::= "a"+)", small_vocabulary()));
  EXPECT_EQ(next_tokens(m), (Ids{0}));
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept_token(7));
  EXPECT_TRUE(m.accept_token(0));
  EXPECT_TRUE(m.can_end());
  EXPECT_EQ(next_tokens(m), (Ids{0, 7}));
  EXPECT_TRUE(m.accept_token(7));
  EXPECT_TRUE(m.is_finished());
  EXPECT_EQ(next_tokens(m), Ids{});
  EXPECT_FALSE(m.accept_token(0));
  EXPECT_FALSE(m.accept_bytes("a"));
}

TEST(Matcher, RejectedTokensLeaveTheStateAlone) {
  Matcher m(compile_text(R"(root ::= "ab" "c")", small_vocabulary()));
  EXPECT_EQ(next_tokens(m), (Ids{0, 6}));
  EXPECT_FALSE(m.accept_token(1));
  EXPECT_FALSE(m.accept_token(8));  // special: no bytes, never allowed
  EXPECT_FALSE(m.accept_token(9));  // no such token
  EXPECT_FALSE(m.accept_token(-1));
  EXPECT_FALSE(m.accept_bytes("ac"));
  EXPECT_EQ(m.accepted(), 0u);
  EXPECT_TRUE(m.accept_token(0));
  EXPECT_EQ(next_tokens(m), (Ids{1}));
  EXPECT_TRUE(m.accept_bytes("")); // nothing, accepted
  EXPECT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.accept_bytes("c"));
  EXPECT_TRUE(m.can_end());
  EXPECT_EQ(next_tokens(m), (Ids{7}));
}

TEST(Matcher, TokensMaySplitACharacter) {
  Matcher m(compile_text(R"(root ::= [^a-z]+)", small_vocabulary()));
  EXPECT_EQ(next_tokens(m), (Ids{3, 4})); // "é" and its first byte, not its second
  EXPECT_TRUE(m.accept_token(4));
  EXPECT_FALSE(m.can_end());
  EXPECT_EQ(next_tokens(m), (Ids{5}));
  EXPECT_TRUE(m.accept_token(5));
  EXPECT_EQ(next_tokens(m), (Ids{3, 4, 7}));
}

TEST(Matcher, DeadEndAllowsNothing) {
  // No token has the "d" that must follow "a".
  Matcher m(compile_text(R"(root ::= "a" "d")", small_vocabulary()));
  EXPECT_TRUE(m.accept_token(0));
  std::vector<uint32_t> mask(m.grammar().vocabulary().mask_words(), ~0u);
  EXPECT_EQ(m.fill_next_token_mask(mask.data()), 0u);
  EXPECT_EQ(mask, std::vector<uint32_t>(mask.size(), 0u));
  // At the end of a grammar with no stop token in the vocabulary, too.
  auto no_stop = std::make_shared<const Vocabulary>(std::vector<std::string>{"a"}, std::vector<int32_t>{});
  Matcher ended(compile_text(R"(root ::= "a")", no_stop));
  EXPECT_TRUE(ended.accept_token(0));
  EXPECT_TRUE(ended.can_end());
  EXPECT_EQ(ended.fill_next_token_mask(mask.data()), 0u);
}

TEST(Matcher, RollbackRestoresEarlierStates) {
  Matcher m(compile_text(testing::kJsonGrammar, testing::byte_vocabulary()));
  std::vector<Ids> masks = {next_tokens(m)};
  for (char c : std::string(R"({"a": [1, "x"]})")) {
    ASSERT_TRUE(m.accept_token(static_cast<unsigned char>(c)));
    masks.push_back(next_tokens(m));
  }
  EXPECT_TRUE(m.accept_token(256));
  EXPECT_TRUE(m.is_finished());
  EXPECT_THROW(m.rollback(17), std::out_of_range);
  m.rollback(1);
  EXPECT_FALSE(m.is_finished());
  EXPECT_EQ(next_tokens(m), masks[15]);
  m.rollback(9);
  EXPECT_EQ(next_tokens(m), masks[6]);
  EXPECT_EQ(m.accepted(), 6u);
  EXPECT_TRUE(m.accept_bytes("\"b\"}"));
  EXPECT_TRUE(m.can_end());
}

TEST(Matcher, CopiesAreIndependent) {
  Matcher a(compile_text(R"(root ::= "a" ("b" | "c"))", small_vocabulary()));
  ASSERT_TRUE(a.accept_token(0));
  Matcher b = a;
  EXPECT_TRUE(a.accept_token(1));
  EXPECT_FALSE(b.accept_token(0));
  EXPECT_TRUE(b.accept_token(2));
  EXPECT_TRUE(a.can_end() && b.can_end());
  b = Matcher(compile_text(R"(root ::= "b")", small_vocabulary()));
  EXPECT_EQ(next_tokens(b), (Ids{1}));
}

TEST(Matcher, RightRecursionRunsLong) {
  Matcher m(compile_text(R"(root ::= item* "!"
item ::= "a" | "b" item)", testing::byte_vocabulary()));
  std::string text;
  for (int i = 0; i < 50000; ++i)
    text += "ba";
  EXPECT_TRUE(m.accept_bytes(text));
  EXPECT_EQ(next_tokens(m), (Ids{'!', 'a', 'b'}));
}

TEST(Matcher, AmbiguityBeyondTheLimitIsAnError) {
  // Every "a" doubles the stacks: "b" or "c" closes each.
  Matcher m(compile_text(R"(root ::= x
x ::= "a" x "b" | a x "c" | ""
a ::= "a")", testing::byte_vocabulary()));
  EXPECT_THROW(
      {
        for (int i = 0; i < 30; ++i)
          m.accept_bytes("a");
      },
      GrammarError);
  EXPECT_LT(m.accepted(), 30u);
}

TEST(Matcher, OneCompiledGrammarServesManyThreads) {
  auto compiled = compile_text(testing::kJsonGrammar, testing::byte_vocabulary());
  const std::string text = R"({"key": [1.5, {"x": "y\n"}, true], "n": -0})";
  std::vector<std::vector<Ids>> seen(4);
  std::vector<std::thread> threads;
  for (auto &masks : seen)
    threads.emplace_back([&] {
      Matcher m(compiled);
      for (char c : text) {
        masks.push_back(next_tokens(m));
        if (!m.accept_token(static_cast<unsigned char>(c)))
          return;
      }
    });
  for (auto &t : threads)
    t.join();
  ASSERT_EQ(seen[0].size(), text.size());
  for (const auto &masks : seen)
    EXPECT_EQ(masks, seen[0]);
}

TEST(Vocabulary, StopTokensAndTheTrie) {
  EXPECT_THROW(Vocabulary({"a"}, {1}), GrammarError);
  Vocabulary v({"b", "ab", "", "a", "abc", "b"}, {5});
  EXPECT_TRUE(v.is_stop(5));
  EXPECT_EQ(v.mask_words(), 1u);
  EXPECT_EQ(v.sorted(), (Ids{3, 1, 4, 0})); // a ab abc b: no empty or stop tokens
  EXPECT_EQ(v.shared_prefix(1), 1u);
  EXPECT_EQ(v.shared_prefix(2), 2u);
  EXPECT_EQ(v.shared_prefix(3), 0u);
  EXPECT_EQ(v.first_with('a'), 0u);
  EXPECT_EQ(v.end_with('a'), 3u);
  EXPECT_EQ(v.end_with('b'), 4u);
}

TEST(TokenSet, EachRepresentationSetsTheSameBits) {
  const size_t vocab = 1000; // not a multiple of 32
  std::vector<std::vector<int32_t>> sets = {{}, {0, 5, 999}, {}, {}};
  for (int32_t id = 0; id < 1000; id += 2)
    sets[2].push_back(id); // half: a bitset
  for (int32_t id = 0; id < 1000; ++id)
    if (id != 7 && id != 998)
      sets[3].push_back(id); // all but two: the tokens it lacks
  for (const auto &members : sets) {
    TokenSet set(members, vocab);
    EXPECT_EQ(set.size(), members.size());
    EXPECT_LE(set.memory_bytes(), (vocab + 31) / 32 * 4);
    std::vector<uint32_t> mask((vocab + 31) / 32, 0);
    set.add_to(mask.data());
    std::vector<int32_t> back;
    for (int32_t id = 0; id < 32 * static_cast<int32_t>(mask.size()); ++id)
      if (allowed(mask, id))
        back.push_back(id);
    EXPECT_EQ(back, members);
  }
}

} // namespace
} // namespace llmserve::grammar
