// choices_to_gbnf: exactly one of the strings, whatever they hold.
#include "grammar/choice.h"
#include "grammar_test_util.h"

#include <gtest/gtest.h>

namespace llmserve::grammar {
namespace {

TEST(Choices, OneLiteralEach) {
  EXPECT_EQ(choices_to_gbnf({"yes", "no"}), "root ::= \"yes\" | \"no\"\n");
  EXPECT_EQ(choices_to_gbnf({"say \"hi\"", "a\\b", "line\nbreak\ttab\r", "\x01"}),
            "root ::= \"say \\\"hi\\\"\" | \"a\\\\b\" | \"line\\nbreak\\ttab\\r\" | \"\\x01\"\n");
}

TEST(Choices, MatchExactlyOneString) {
  std::vector<std::string> choices = {"positive", "negative", "say \"hi\"\\", "\u65e5\u672c\U0001F600", "", "a\nb"};
  std::string gbnf = choices_to_gbnf(choices);
  for (const std::string &choice : choices)
    EXPECT_EQ(testing::match(gbnf, choice), "complete") << choice;
  EXPECT_EQ(testing::match(gbnf, "pos"), "prefix");
  EXPECT_EQ(testing::match(gbnf, "positives"), "no");
  EXPECT_EQ(testing::match(gbnf, "Positive"), "no");
}

TEST(Choices, Refused) {
  for (const auto &[choices, message] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{}, "choice: the list of choices is empty"},
           {{"ok", "\xc3("}, "choice: choice 1 is not valid UTF-8"}}) {
    try {
      choices_to_gbnf(choices);
      ADD_FAILURE() << message;
    } catch (const GrammarError &e) {
      EXPECT_EQ(e.what(), message);
    }
  }
}

} // namespace
} // namespace llmserve::grammar
