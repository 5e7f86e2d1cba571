// regex_to_gbnf: the GBNF of patterns, what its grammars match through the
// engine (whole texts only), JSON string output, and every refusal.
#include "grammar/regex_to_gbnf.h"
#include "grammar_test_util.h"

#include <gtest/gtest.h>

namespace llmserve::grammar {
namespace {

std::string error_of(const std::string &pattern) {
  try {
    regex_to_gbnf(pattern);
  } catch (const GrammarError &e) {
    return e.what();
  }
  return "";
}

// Whether the grammar of `pattern` accepts all of `text`.
bool full_match(const std::string &pattern, const std::string &text) {
  return testing::match(regex_to_gbnf(pattern), text) == "complete";
}

void expect_matches(const std::string &pattern, const std::vector<std::string> &matching,
                    const std::vector<std::string> &not_matching) {
  for (const std::string &text : matching)
    EXPECT_TRUE(full_match(pattern, text)) << pattern << " on " << text;
  for (const std::string &text : not_matching)
    EXPECT_FALSE(full_match(pattern, text)) << pattern << " on " << text;
}

TEST(RegexToGbnf, Grammars) {
  EXPECT_EQ(regex_to_gbnf("^[A-Z]{2,3}-\\d+$"), "root ::= [A-Z]{2,3} \"-\" [0-9]+\n");
  EXPECT_EQ(regex_to_gbnf("(ab|cd)*?e"), "root ::= (\"ab\" | \"cd\")* \"e\"\n");
  EXPECT_EQ(regex_to_gbnf("colou?r"), "root ::= \"colo\" \"u\"? \"r\"\n");
  EXPECT_EQ(regex_to_gbnf("x|"), "root ::= (\"x\")?\n");
  // A quantifier repeats a whole literal, but a repetition only in parentheses.
  EXPECT_EQ(regex_to_gbnf("(abc)+(d?)*"), "root ::= \"abc\"+ (\"d\"?)*\n");
  EXPECT_EQ(regex_to_gbnf(""), "root ::= \"\"\n");
  // '\\', ']' and '^' are adjacent: one range.
  EXPECT_EQ(regex_to_gbnf("[-^\\]\\\\]"), "root ::= [\\x2D\\\\-\\x5E]\n");
  // `.` stops at every line terminator of ECMAScript or Python.
  EXPECT_EQ(regex_to_gbnf("a.b"),
            "root ::= \"a\" [\\x00-\\t\\x0B\\x0C\\x0E-\\u2027\\u202A-\\uD7FF\\uE000-\\U0010FFFF] \"b\"\n");
  // A negated shorthand takes what neither reading counts as a digit.
  EXPECT_EQ(regex_to_gbnf("\\D"), "root ::= [\\x00-/:-\\u065F]\n");
}

TEST(RegexToGbnf, MatchesWholeTextsOnly) {
  expect_matches("\\d{3}-\\d{4}", {"555-1234"}, {"555-12345", "x555-1234", "555-123"});
  expect_matches("^(?:abc|def)$|^ghi$", {"abc", "def", "ghi"}, {"abcghi", ""});
  expect_matches("a{2,4}?b+?", {"aab", "aaaabbb"}, {"ab", "aaaaab"});
  expect_matches("[^a-z]+", {"ABC", "1 2", "\u00e9", "\n"}, {"aB", ""});
  expect_matches("[\\w-]+(\\.[\\w-]+)*", {"a-b.c_d.e1"}, {"a..b", ".a", "\u00e9"});
  expect_matches(".{2}", {"ab", "\u00e9\U0001F600"}, {"a\n", "a\r", "a\u2028", "abc"});
  expect_matches("\\s\\S", {" x", "\tA"}, {"  ", "x ", "\u00a0x"});
  expect_matches("\\x41\\u0042\\t\\0[\\b]", {std::string("AB\t\0\b", 5)}, {"AB\t0\b"});
  expect_matches("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\/", {".*+?()[]{}|^$/"}, {""});
  expect_matches("}]", {"}]"}, {"}"});
  expect_matches("\u00e9+\U0001F600{2}", {"\u00e9\u00e9\U0001F600\U0001F600"}, {"\u00e9\U0001F600"});
}

TEST(RegexToGbnf, JsonStringText) {
  // Inside a JSON string, quotes, backslashes and controls are escaped.
  RegexBody body = regex_rule_body("^\"[\\\\\\n]\"$", RegexText::JsonString);
  EXPECT_EQ(body.gbnf, "\"\\\\\\\"\" (\"\\\\n\" | \"\\\\\\\\\") \"\\\\\\\"\"");
  EXPECT_EQ(body.min_chars, 3u);
  EXPECT_EQ(body.max_chars, 3u);
  // Controls without a short escape are \u00XX.
  body = regex_rule_body("[\\x01-\\x03\\x1f]", RegexText::JsonString);
  EXPECT_EQ(body.gbnf, "\"\\\\u000\" [1-3] | \"\\\\u001\" [f]");
  EXPECT_EQ(regex_rule_body("a+(bc)?", RegexText::Raw).max_chars, RegexBody::kUnbounded);
}

TEST(RegexToGbnf, OpenRepetitionsCutToAMaximumLength) {
  RegexBody body = regex_rule_body("x+(-y*)?", RegexText::Raw, 7);
  EXPECT_EQ(body.gbnf, "\"x\"{1,3} (\"-\" \"y\"{0,3})?");
  EXPECT_EQ(body.max_chars, 7u);
  EXPECT_EQ(regex_rule_body("ab{2}", RegexText::Raw, 3).gbnf, "\"a\" \"b\"{2}");
  try {
    regex_rule_body("a{3}b*", RegexText::Raw, 2);
    FAIL();
  } catch (const GrammarError &e) {
    EXPECT_STREQ(e.what(), "regex: the pattern has matches longer than 2 characters");
  }
}

TEST(RegexToGbnf, RefusedConstructs) {
  const std::pair<const char *, const char *> cases[] = {
      {"(a)\\1", "regex: backreference '\\1' at offset 3 is not supported"},
      {"(?<y>a)\\k<y>", "regex: backreference '\\k' at offset 7 is not supported"},
      {"a(?=b)", "regex: lookaround at offset 1 is not supported"},
      {"(?<!a)b", "regex: lookaround at offset 0 is not supported"},
      {"(?i)abc", "regex: group syntax '(?i' at offset 0 is not supported"},
      {"a^b", "regex: '^' inside the pattern at offset 1 is not supported"},
      {"a$b", "regex: '$' inside the pattern at offset 1 is not supported"},
      {"(^a)", "regex: '^' inside the pattern at offset 1 is not supported"},
      {"\\bword\\b", "regex: word boundary '\\b' at offset 0 is not supported"},
      {"\\p{L}", "regex: Unicode property escape at offset 0 is not supported"},
      {"\\u{1F600}", "regex: '\\u{...}' (a /u flag escape) at offset 0 is not supported"},
      {"\\uD83D\\uDE00", "regex: surrogate escape at offset 0 is not supported"},
      {"\\012", "regex: octal escape at offset 0 is not supported"},
      {"\\cJ", "regex: control escape '\\c' at offset 0 is not supported"},
      {"\\q", "regex: unknown escape '\\q' at offset 0"},
      {"[]", "regex: '[]' at offset 0 is not supported"},
      {"[^]", "regex: '[^]' at offset 0 is not supported"},
      {"[\\d-z]", "regex: a range with a class shorthand as an end at offset 1 is not supported"},
      {"[z-a]", "regex: range out of order at offset 1"},
      {"[abc", "regex: unterminated character class at offset 0"},
      {"(ab", "regex: unterminated group at offset 0"},
      {"ab)", "regex: unmatched ')' at offset 2"},
      {"*a", "regex: nothing to repeat before '*' at offset 0"},
      {"a**", "regex: a quantifier after a quantifier at offset 2"},
      {"a{2}{3}", "regex: a quantifier after a quantifier at offset 4"},
      {"a{,3}", "regex: '{' must be escaped when it does not start a quantifier {m,n} at offset 1"},
      {"{1}", "regex: '{' must be escaped when it does not follow an atom at offset 0"},
      {"a{3,2}", "regex: repetition {3,2} out of order at offset 1"},
      {"a{10001}", "regex: a repetition count over 10000 at offset 1"},
      {"\\x4", "regex: malformed hexadecimal escape at offset 0"},
      {"ab\\", "regex: trailing backslash at offset 2"},
      {"[^\\s\\S]", "regex: the pattern matches nothing"},
      {"(a{1000}){1000}", "regex: the pattern is too large once its repetitions are expanded (over 100000 characters)"},
      {"\xff", "regex: invalid UTF-8 at offset 0"},
  };
  for (const auto &[pattern, message] : cases)
    EXPECT_EQ(error_of(pattern), message) << pattern;
  EXPECT_EQ(error_of(std::string(40, '(') + std::string(40, ')')), "regex: groups nested deeper than 32 at offset 32");
}

} // namespace
} // namespace llmserve::grammar
