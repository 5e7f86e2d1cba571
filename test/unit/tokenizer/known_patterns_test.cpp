#include "tokenizer/known_patterns.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(KnownPattern p, std::string_view text) {
  std::vector<Span> spans;
  match_known(p, text, spans);
  Pieces pieces;
  for (const Span &s : spans)
    pieces.emplace_back(text.substr(s.start, s.end - s.start));
  return pieces;
}

TEST(KnownPatterns, Gpt2) {
  EXPECT_EQ(split(KnownPattern::Gpt2, "Hello world's 42 cats!!"),
            (Pieces{"Hello", " world", "'s", " 42", " cats", "!!"}));
  // \s+(?!\S) leaves the last space to the word after it.
  EXPECT_EQ(split(KnownPattern::Gpt2, "a   b  "), (Pieces{"a", "  ", " b", "  "}));
  EXPECT_EQ(split(KnownPattern::Gpt2, "\n\nx"), (Pieces{"\n", "\n", "x"}));
  EXPECT_EQ(split(KnownPattern::Gpt2, "IT'S"), (Pieces{"IT", "'", "S"})); // case-sensitive
}

TEST(KnownPatterns, Cl100k) {
  EXPECT_EQ(split(KnownPattern::Cl100k, "IT'S 12345 (x)\n\n  y"),
            (Pieces{"IT", "'S", " ", "123", "45", " (", "x", ")\n\n", " ", " y"}));
  EXPECT_EQ(split(KnownPattern::Cl100k, "a \n \n b"), (Pieces{"a", " \n \n", " b"}));
  EXPECT_EQ(split(KnownPattern::Cl100k, "'\xC5\xBF"), (Pieces{"'\xC5\xBF"})); // 'ſ folds to 's
  EXPECT_EQ(split(KnownPattern::Cl100k, "\u4e2d\u6587\u3002\u4f60"),
            (Pieces{"\u4e2d\u6587", "\u3002\u4f60"}));
}

TEST(KnownPatterns, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(split(KnownPattern::Qwen2, "x123"), (Pieces{"x", "1", "2", "3"}));
}

TEST(KnownPatterns, O200kSplitsAtLetterCase) {
  EXPECT_EQ(split(KnownPattern::O200k, "HelloWorld HTTPServer iOS DON'T a/b\n"),
            (Pieces{"Hello", "World", " HTTPServer", " i", "OS", " DON'T", " a", "/b", "\n"}));
  EXPECT_EQ(split(KnownPattern::O200k, "x /// \u0301y"), (Pieces{"x", " ///", " \u0301y"}));
}

TEST(KnownPatterns, RecognizedByTheirExactText) {
  for (KnownPattern p : kKnownPatterns)
    EXPECT_EQ(known_pattern(known_pattern_regex(p)), p);
  EXPECT_EQ(known_pattern("\\w+"), std::nullopt);
  EXPECT_EQ(known_pattern(std::string("(?:") + known_pattern_regex(KnownPattern::Gpt2) + ")"),
            std::nullopt);
}

// The corpus-wide proof is test/unit/tokenizer/fast_path_parity.cpp (run by
// tokenizer_parity); this is its quick form on the hard cases above.
TEST(KnownPatterns, MatchOnigurumaOnHardCases) {
  const char *texts[] = {"Hello world's 42 cats!!  \n\n\t x", "IT'S 12345 (x)\n\n  y \r\n",
                         "HelloWorld HTTPServer iOS DON'T a/b\n//x \u0301y \u01c5ungla",
                         "'\xC5\xBF 'S \u00a0\u3000x\u2028y \U0001F600\u200d\U0001F600 \u0663\u216b"};
  for (KnownPattern p : kKnownPatterns) {
    Regex regex(known_pattern_regex(p));
    for (std::string_view text : texts) {
      std::vector<Span> fast, oniguruma;
      match_known(p, text, fast);
      regex.find_all(text, oniguruma);
      ASSERT_EQ(fast.size(), oniguruma.size()) << text;
      for (size_t i = 0; i < fast.size(); ++i) {
        EXPECT_EQ(fast[i].start, oniguruma[i].start) << text;
        EXPECT_EQ(fast[i].end, oniguruma[i].end) << text;
      }
    }
  }
}

} // namespace
} // namespace llmserve
