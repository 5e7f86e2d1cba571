#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

std::vector<std::string> split(SplitPattern p, std::string_view text) {
  std::vector<std::string_view> pieces;
  split_text(p, text, pieces);
  return {pieces.begin(), pieces.end()};
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(split(SplitPattern::Gpt2, "Hello world's 42 cats!!"),
            (Pieces{"Hello", " world", "'s", " 42", " cats", "!!"}));
  // \s+(?!\S) leaves the last space to the word after it.
  EXPECT_EQ(split(SplitPattern::Gpt2, "a   b  "), (Pieces{"a", "  ", " b", "  "}));
  EXPECT_EQ(split(SplitPattern::Gpt2, "\n\nx"), (Pieces{"\n", "\n", "x"}));
  EXPECT_EQ(split(SplitPattern::Gpt2, "IT'S"), (Pieces{"IT", "'", "S"})); // case-sensitive
}

TEST(PreTokenizer, Cl100k) {
  EXPECT_EQ(split(SplitPattern::Cl100k, "IT'S 12345 (x)\n\n  y"),
            (Pieces{"IT", "'S", " ", "123", "45", " (", "x", ")\n\n", " ", " y"}));
  EXPECT_EQ(split(SplitPattern::Cl100k, "a \n \n b"), (Pieces{"a", " \n \n", " b"}));
  EXPECT_EQ(split(SplitPattern::Cl100k, "'\xC5\xBF"), (Pieces{"'\xC5\xBF"})); // 'ſ folds to 's
  EXPECT_EQ(split(SplitPattern::Cl100k, "\u4e2d\u6587\u3002\u4f60"),
            (Pieces{"\u4e2d\u6587", "\u3002\u4f60"}));
}

TEST(PreTokenizer, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(split(SplitPattern::Qwen2, "x123"), (Pieces{"x", "1", "2", "3"}));
}

TEST(PreTokenizer, O200kSplitsAtLetterCase) {
  EXPECT_EQ(split(SplitPattern::O200k, "HelloWorld HTTPServer iOS DON'T a/b\n"),
            (Pieces{"Hello", "World", " HTTPServer", " i", "OS", " DON'T", " a", "/b", "\n"}));
  EXPECT_EQ(split(SplitPattern::O200k, "x /// \u0301y"), (Pieces{"x", " ///", " \u0301y"}));
}

TEST(PreTokenizer, NoneKeepsTheText) {
  EXPECT_EQ(split(SplitPattern::None, "a b"), (Pieces{"a b"}));
  EXPECT_EQ(split(SplitPattern::None, ""), Pieces{});
}

TEST(PreTokenizer, Metaspace) {
  Metaspace m{"\u2581", Metaspace::Prepend::First, true};
  EXPECT_EQ(m.apply("a b", true), "\u2581a\u2581b");
  EXPECT_EQ(m.apply("a b", false), "a\u2581b");
  EXPECT_EQ(m.apply(" a", true), "\u2581a"); // already starts with a space
  std::vector<std::string_view> pieces;
  std::string text = m.apply("a  b", true);
  m.split_pieces(text, pieces);
  EXPECT_EQ(Pieces(pieces.begin(), pieces.end()), (Pieces{"\u2581a", "\u2581", "\u2581b"}));
}

TEST(PreTokenizer, UnknownRegexIsAnError) {
  EXPECT_THROW(split_pattern_from_regex("\\w+"), std::invalid_argument);
}

} // namespace
} // namespace llmserve
