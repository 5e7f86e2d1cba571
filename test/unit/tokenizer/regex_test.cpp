#include "tokenizer/regex.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace llmserve {
namespace {

using Matches = std::vector<std::pair<size_t, size_t>>;

Matches find_all(const std::string &pattern, std::string_view text) {
  std::vector<Span> spans;
  Regex(pattern).find_all(text, spans);
  Matches matches;
  for (const Span &s : spans)
    matches.emplace_back(s.start, s.end);
  return matches;
}

template <typename F> std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

TEST(Regex, FindAllStepsOverEmptyMatchesAsTheOnigCrate) {
  EXPECT_EQ(find_all("\\d+", "a12b2"), (Matches{{1, 3}, {4, 5}}));
  // An empty match right after a match is skipped; others are kept.
  EXPECT_EQ(find_all("\\d*", "a1bbb2"), (Matches{{0, 0}, {1, 2}, {3, 3}, {4, 4}, {5, 6}}));
  EXPECT_EQ(find_all("\\b", "test string"), (Matches{{0, 0}, {4, 4}, {5, 5}, {11, 11}}));
  EXPECT_EQ(find_all("", "\u00e9a"), (Matches{{0, 0}, {2, 2}, {3, 3}})); // by characters
}

TEST(Regex, OnigurumaSyntaxAndUnicode) {
  EXPECT_EQ(find_all("(?i:'s)|\\p{L}+", "IT'S \u00c9t\u00e9"), (Matches{{0, 2}, {2, 4}, {5, 10}}));
  EXPECT_EQ(find_all("\\s+(?!\\S)", "a  b"), (Matches{{1, 2}}));
  EXPECT_EQ(find_all("[\\p{P}]", "a,\u3002"), (Matches{{1, 2}, {2, 5}}));
  EXPECT_EQ(find_all("a$", "a\nab"), (Matches{{0, 1}})); // $ ends lines
}

TEST(Regex, CompileErrorsAreWorded) {
  EXPECT_EQ(error_of([] { Regex("(ab"); }),
            "Oniguruma cannot compile '(ab': end pattern with unmatched parenthesis");
  EXPECT_NE(error_of([] { Regex("\\p{NoSuchProperty}"); }).find("invalid character property name"),
            std::string::npos);
  EXPECT_NE(error_of([] { Regex("[b-a]"); }).find("empty range in char class"), std::string::npos);
}

TEST(Regex, ExponentialBacktrackingFailsInsteadOfHanging) {
  std::string message = error_of([] { find_all("(a|aa)+c", std::string(1000, 'a')); });
  EXPECT_NE(message.find("'(a|aa)+c'"), std::string::npos) << message;
  EXPECT_NE(message.find("retry-limit-in-match over"), std::string::npos) << message;
}

TEST(Regex, QuadraticSearchesFailAfterTheTimeLimit) {
  // Each search backtracks over the rest of the text, within the limits of
  // one search, so only the time limit stops the whole.
  std::string message = error_of([] { find_all("(\\s)+x|.", std::string(1'000'000, ' ')); });
  EXPECT_NE(message.find("ran longer than 10 s"), std::string::npos) << message;
}

} // namespace
} // namespace llmserve
