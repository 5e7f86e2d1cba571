// Property tests against reference.h's Earley recognizer, on random walks
// with fixed seeds: a token is allowed exactly when the text stays a prefix
// of some sentence, a stop token exactly when the text is a sentence, and
// walks through allowed tokens stay valid.
#include "grammar/lower.h"
#include "grammar_test_util.h"
#include "json_grammar.h"
#include "reference.h"

#include <gtest/gtest.h>

#include <random>

namespace llmserve::grammar {
namespace {

using testing::Reference;

struct Case {
  const char *name;
  const char *gbnf;
  std::vector<std::string> alphabet; // characters the grammar's sentences use
};

const std::vector<Case> &cases() {
  static const std::vector<Case> all = {
      {"nested", R"g(root ::= "(" root ")" root | "")g", {"(", ")", "x"}},
      {"lists", "root ::= item (\",\" item)*\nitem ::= [a-c]+ | \"[\" root? \"]\"",
       {"a", "b", "c", ",", "[", "]", "d"}},
      {"unicode", R"(root ::= [α-ω]+ (" " [^a-z ]{1,3})*)",
       {"\u03b1", "\u03b2", "\u03c9", "a", " ", "z", "\u00e9", "\u65e5", "\U0001F642"}},
      {"bounded", R"(root ::= ("ab" | "a"){2,4} "c"?)", {"a", "b", "c"}},
      {"ambiguous", "root ::= x* \".\"\nx ::= \"a\" | \"aa\" | \"a\" \"a\" y\ny ::= \"b\"?",
       {"a", "b", "."}},
      {"nullable", "root ::= a b c \"!\"\na ::= \"x\"?\nb ::= \"y\"*\nc ::= \"z\" | \"\"",
       {"x", "y", "z", "!"}},
      {"words", "root ::= (ws word)+ ws \".\"\nword ::= [a-z]+\nws ::= \" \"*", {"a", "b", " ", "."}},
      {"any", R"(root ::= ("<" .{0,3} ">" | "\\" ["nt])+)",
       {"<", ">", "\\", "\"", "n", "t", "\u00e9", "\U0001F642"}},
      {"shared-rules",
       "root ::= \"k\" ws \"=\" ws val (ws \",\" ws val)*\nval ::= [0-9]+ | \"\\\"\" [a-z]* \"\\\"\"\nws ::= [ ]?",
       {"k", "=", " ", ",", "1", "2", "\"", "a"}},
      {"recursion", "root ::= \"[\" list \"]\"\nlist ::= | elem (\",\" elem)*\nelem ::= \"x\" | root",
       {"[", "]", ",", "x"}},
      // Calls that continue alike share a copy (call_site_copies.h).
      {"shared-copies",
       "root ::= \"{\" pair (\",\" pair)* \"}\" ws \".\"\npair ::= key \":\" ws val\n"
       "key ::= \"'\" [a-z]{1,3} \"'\"\nval ::= key | \"[\" ws (key (\",\" ws key)*)? \"]\"\nws ::= \" \"?",
       {"{", "}", "'", "a", "z", ":", ",", " ", "[", "]", "."}},
      // Counted repetitions (lower.h); CountedRepetitionsNearTheirBounds
      // walks to the bounds of shorter ones.
      {"long-string", "root ::= \"'\" char{0,5000} \"'\"\nchar ::= [^'\\\\] | \"\\\\\" ['n]",
       {"'", "\\", "n", "a", "\u00e9", "\U0001F642"}},
      {"long-word", "root ::= [a-z]{3,2000} \".\"", {"a", "z", ".", "A"}},
      {"long-choice", "root ::= (\"ab\" | \"c\"){0,700} \"!\"", {"a", "b", "c", "!"}},
      {"json", testing::kJsonGrammar,
       {"{", "}", "[", "]", "\"", ",", ":", " ", "\n", "0", "1", "9", ".", "-", "e", "t", "r", "u",
        "n", "l", "\\", "\u00e9", "a"}},
  };
  return all;
}

// Every character of the alphabet, each byte of those, random strings of
// 2 to `longest` of them, a stop token and a special token.
std::shared_ptr<const Vocabulary> synthetic_vocabulary(const std::vector<std::string> &alphabet,
                                                       std::mt19937 &rng, size_t longest = 5) {
  std::vector<std::string> tokens = alphabet;
  for (const auto &c : alphabet)
    if (c.size() > 1)
      for (char b : c)
        tokens.push_back(std::string(1, b));
  for (int i = 0; i < 150; ++i) {
    std::string t;
    for (size_t n = 2 + rng() % (longest - 1); n > 0; --n)
      t += alphabet[rng() % alphabet.size()];
    if (rng() % 8 == 0) // a token ending inside a character
      t.pop_back();
    tokens.push_back(t.empty() ? "x" : t);
  }
  int32_t stop = static_cast<int32_t>(tokens.size());
  tokens.push_back("");
  tokens.push_back(""); // special
  return std::make_shared<const Vocabulary>(std::move(tokens), std::vector<int32_t>{stop});
}

// Per token: whether the reference allows it after its text. Tokens are
// taken in byte order so each shares the chart of the prefix it shares with
// the one before (what keeps this affordable on 32k tokens).
std::vector<bool> reference_mask(Reference &ref, const Vocabulary &vocabulary) {
  std::vector<bool> ok(vocabulary.size(), false);
  for (int32_t id : vocabulary.stop_tokens())
    ok[id] = ref.complete();
  const size_t base = ref.length();
  size_t dead_at = SIZE_MAX; // a prefix this long of the last token is no prefix of a sentence
  for (size_t i = 0; i < vocabulary.sorted().size(); ++i) {
    const int32_t id = vocabulary.sorted()[i];
    const std::string &bytes = vocabulary.token_bytes(id);
    size_t shared = std::min<size_t>(i ? vocabulary.shared_prefix(i) : 0, ref.length() - base);
    if (shared >= dead_at)
      continue;
    dead_at = SIZE_MAX;
    ref.truncate(base + shared);
    for (size_t j = shared; j < bytes.size() && dead_at == SIZE_MAX; ++j)
      if (!ref.push(bytes.substr(j, 1)))
        dead_at = j + 1;
    ok[id] = dead_at == SIZE_MAX;
  }
  ref.truncate(base);
  return ok;
}

// Compares the mask with the reference for every token, then steps through a
// random allowed token, for `steps` steps or until the walk stops; from
// `text`, a prefix of the grammar's sentences.
void walk(const Grammar &grammar, std::shared_ptr<const Vocabulary> vocabulary, uint32_t seed,
          int steps, const std::string &name, std::string text = "") {
  std::mt19937 rng(seed);
  Matcher m(compile(grammar, vocabulary));
  const Grammar written_out = write_out_counted_rules(grammar); // the reference does not count
  Reference ref(written_out);
  ASSERT_TRUE(m.accept_bytes(text) && ref.push(text)) << name << ": '" << text << "'";
  std::vector<uint32_t> mask(vocabulary->mask_words());
  for (int step = 0; step < steps; ++step) {
    size_t count = m.fill_next_token_mask(mask.data());
    std::vector<bool> expected = reference_mask(ref, *vocabulary);
    size_t expected_count = 0;
    for (int32_t id = 0; static_cast<size_t>(id) < vocabulary->size(); ++id) {
      expected_count += expected[id];
      ASSERT_EQ(testing::allowed(mask, id), expected[id])
          << name << " seed " << seed << " after '" << text << "': token " << id << " '"
          << vocabulary->token_bytes(id) << "'";
    }
    ASSERT_EQ(count, expected_count);
    ASSERT_EQ(m.can_end(), ref.complete()) << name << " after '" << text << "'";
    int32_t id = testing::random_allowed(mask, *vocabulary, rng);
    if (id < 0)
      return; // a dead end: the reference agreed that nothing may follow
    ASSERT_TRUE(m.accept_token(id));
    if (vocabulary->is_stop(id)) {
      ASSERT_TRUE(m.is_finished());
      ASSERT_TRUE(ref.complete()) << name << ": stopped after '" << text << "'";
      return;
    }
    ASSERT_TRUE(ref.push(vocabulary->token_bytes(id)));
    text += vocabulary->token_bytes(id);
  }
}

TEST(ReferenceProperty, MasksOnSyntheticVocabularies) {
  for (const Case &c : cases()) {
    Grammar grammar = Grammar::parse(c.gbnf);
    for (uint32_t seed = 1; seed <= 12; ++seed) {
      std::mt19937 rng(seed);
      walk(grammar, synthetic_vocabulary(c.alphabet, rng), seed, 40, c.name);
      if (HasFatalFailure())
        return;
    }
  }
}

// Counted repetitions (lower.h), walked to their bounds and past them from
// texts that leave fewer repetitions than the longest tokens (up to 24
// characters) have characters: nested, with minimums, cut by what follows.
TEST(ReferenceProperty, CountedRepetitionsNearTheirBounds) {
  struct Bounded {
    const char *name, *gbnf;
    std::vector<std::string> alphabet;
    std::string start; // a prefix of a sentence
  };
  const std::vector<Bounded> all = {
      {"string", R"(root ::= "\"" char{0,60} "\"" "."?
char ::= [^"\\] | "\\" (["n] | "u" [0-9a-f]{4}))",
       {"a", "\u00e9", "\\", "n", "u", "0", "f", "\"", "."}, "\"" + std::string(48, 'a')},
      {"letters", R"(root ::= [a-z]{3,40} "." [a-z]{12})", {"a", "z", ".", "0"}, std::string(30, 'a')},
      {"choice", R"(root ::= ("ab" | "c"){0,30} "!")", {"a", "b", "c", "!"}, "ab" + std::string(20, 'c')},
      {"nested", R"(root ::= "[" ([a-c]{9,12} ("," [a-c]{9,12}){0,10})? "]")", {"a", "c", ",", "[", "]"},
       "[" + std::string(9, 'a') + ",abcabcabc,ccccccccccc,aaaaaaaaaaaa,bbbbbbbbb,"},
      {"minimum", R"(root ::= ("x" [0-9]{2,12} ","){10,20})", {"x", "1", "0", ","}, "x11,x000,x1010101,"},
  };
  for (const Bounded &b : all) {
    Grammar grammar = Grammar::parse(b.gbnf);
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      std::mt19937 rng(seed);
      for (const std::string &start : {std::string(), b.start}) {
        walk(grammar, synthetic_vocabulary(b.alphabet, rng, 24), seed, 30, b.name, start);
        if (HasFatalFailure())
          return;
      }
    }
  }
}

// Bytes, not tokens: random strings are accepted exactly when they are
// prefixes, and end exactly when they are sentences.
TEST(ReferenceProperty, AcceptBytesOnRandomStrings) {
  for (const Case &c : cases()) {
    Grammar grammar = Grammar::parse(c.gbnf);
    auto compiled = compile(grammar, testing::byte_vocabulary());
    const Grammar written_out = write_out_counted_rules(grammar);
    std::mt19937 rng(99);
    for (int i = 0; i < 400; ++i) {
      std::string text;
      for (size_t n = rng() % 12; n > 0; --n)
        text += c.alphabet[rng() % c.alphabet.size()];
      if (rng() % 4 == 0 && !text.empty())
        text.pop_back(); // may end inside a character
      Reference ref(written_out);
      Matcher m(compiled);
      bool prefix = ref.prefix_with(text);
      ASSERT_EQ(m.accept_bytes(text), prefix) << c.name << ": '" << text << "'";
      ASSERT_EQ(prefix && m.can_end(), ref.complete_with(text)) << c.name << ": '" << text << "'";
    }
  }
}

TEST(ReferenceProperty, JsonMasksOnTheLlama2Vocabulary) {
  auto vocabulary = testing::real_vocabulary("llama2");
  if (!vocabulary)
    GTEST_SKIP() << "test/node/node_modules/@lenml is missing; run tools/install-deps.sh";
  Grammar grammar = Grammar::parse(testing::kJsonGrammar);
  for (uint32_t seed : {3u, 4u})
    walk(grammar, vocabulary, seed, 12, "json/llama2");
}

} // namespace
} // namespace llmserve::grammar
