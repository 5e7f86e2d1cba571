// GBNF syntax (each feature, matched on bytes) and every error with its
// message.
#include "grammar/grammar.h"
#include "grammar_test_util.h"
#include "json_grammar.h"

#include <gtest/gtest.h>

#include <random>

namespace llmserve::grammar {
namespace {

using testing::match;

// The message of the GrammarError `gbnf` throws, or "" when it parses.
std::string error_of(const std::string &gbnf) {
  try {
    Grammar::parse(gbnf);
  } catch (const GrammarError &e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR(gbnf, expected) EXPECT_NE(error_of(gbnf).find(expected), std::string::npos) << error_of(gbnf)

TEST(GbnfSyntax, LiteralsAndEscapes) {
  EXPECT_EQ(match(R"(root ::= "ab" "c")", "abc"), "complete");
  EXPECT_EQ(match(R"(root ::= "ab" "c")", "ab"), "prefix");
  EXPECT_EQ(match(R"(root ::= "ab" "c")", "abd"), "no");
  EXPECT_EQ(match(R"(root ::= "\n\t\r\\\"\[\]")", "\n\t\r\\\"[]"), "complete");
  // \x, \u and \U name code points, matched as their UTF-8.
  EXPECT_EQ(match(R"(root ::= "\x41\xe9\u4f60\U0001F642")", "A\u00e9\u4f60\U0001F642"), "complete");
  EXPECT_EQ(match(R"(root ::= "h\u00e9")", "h\xC3"), "prefix");
  EXPECT_EQ(match(R"(root ::= "日本")", "日本"), "complete");
  EXPECT_EQ(match(R"(root ::= "")", ""), "complete");
}

TEST(GbnfSyntax, CharacterClasses) {
  const std::string word = "root ::= [a-z0-9_]+";
  EXPECT_EQ(match(word, "ab_9"), "complete");
  EXPECT_EQ(match(word, "aB"), "no");
  const std::string not_quote = R"(root ::= [^"\\]*)";
  EXPECT_EQ(match(not_quote, "x y \u00e9 \U0001F642"), "complete");
  EXPECT_EQ(match(not_quote, "a\"" ), "no");
  EXPECT_EQ(match(not_quote, "a\\"), "no");
  EXPECT_EQ(match(not_quote, "\xFF"), "no"); // not UTF-8: no character
  EXPECT_EQ(match(not_quote, "\xED\xA0\x80"), "no"); // a surrogate
  EXPECT_EQ(match(R"(root ::= [\x00-\x1F])", "\x1F"), "complete");
  EXPECT_EQ(match(R"(root ::= [\x00-\x1F])", " "), "no");
  EXPECT_EQ(match("root ::= [a-]+", "-a-"), "complete"); // a final '-' is itself
  EXPECT_EQ(match(R"(root ::= [\]\[]+)", "[]"), "complete");
  EXPECT_EQ(match("root ::= [α-ω]", "λ"), "complete");
  EXPECT_EQ(match("root ::= [α-ω]", "\xCE"), "prefix");
  EXPECT_EQ(match("root ::= [α-ω]", "A"), "no");
  EXPECT_EQ(match("root ::= [\\u0800-\\U0010FFFF]", "\u0800"), "complete");
  EXPECT_EQ(match("root ::= [\\u0800-\\U0010FFFF]", "\U0010FFFF"), "complete");
  EXPECT_EQ(match("root ::= [\\u0800-\\U0010FFFF]", "\u07FF"), "no");
  EXPECT_EQ(match("root ::= [^a] \"!\"", "\U0001F642!"), "complete");
}

TEST(GbnfSyntax, AnyCharacter) {
  EXPECT_EQ(match("root ::= . .", "a\u00e9"), "complete");
  EXPECT_EQ(match("root ::= . .", "\U0001F642\x7F"), "complete");
  EXPECT_EQ(match("root ::= .", "\xC0\x80"), "no"); // overlong
  EXPECT_EQ(match("root ::= .", "\xF4\x90\x80\x80"), "no"); // past U+10FFFF
  EXPECT_EQ(match("root ::= .", "\xF0\x9F\x99"), "prefix");
}

TEST(GbnfSyntax, GroupsAlternationAndRules) {
  const std::string g = R"(
# a comment line
root ::= greeting " " ( name | "world" ) # a trailing comment
greeting ::= "hi" | "hello"
name ::= [A-Z] [a-z]*
)";
  EXPECT_EQ(match(g, "hello world"), "complete");
  EXPECT_EQ(match(g, "hi Ann"), "complete");
  EXPECT_EQ(match(g, "hi ann"), "no");
  // Newlines may follow ::= and |, and may appear anywhere inside parentheses.
  const std::string multiline = "root ::=\n  \"a\" (\n    \"b\"\n  | \"c\"\n  ) |\n  \"d\"\nr-2 ::= \"x\"\n";
  EXPECT_EQ(match(multiline, "ab"), "complete");
  EXPECT_EQ(match(multiline, "ac"), "complete");
  EXPECT_EQ(match(multiline, "d"), "complete");
  EXPECT_EQ(match("root ::= | \"a\"", ""), "complete");
  EXPECT_EQ(match("root ::= x-1 X2\nx-1 ::= \"a\"\nX2 ::= \"b\"", "ab"), "complete");
}

TEST(GbnfSyntax, LongChoiceLists) {
  std::string choices = "root ::= \"w0\"";
  for (int i = 1; i < 5000; ++i)
    choices += " | \"w" + std::to_string(i) + "\"";
  EXPECT_EQ(match(choices, "w4999"), "complete");
  EXPECT_EQ(match(choices, "w499"), "complete");
  EXPECT_EQ(match(choices, "w5000"), "no");
}

TEST(GbnfSyntax, Repetitions) {
  EXPECT_EQ(match(R"(root ::= "a"*)", ""), "complete");
  EXPECT_EQ(match(R"(root ::= "a"*)", "aaaa"), "complete");
  EXPECT_EQ(match(R"(root ::= "a"+)", ""), "prefix");
  EXPECT_EQ(match(R"(root ::= "a"+ "b")", "aaab"), "complete");
  EXPECT_EQ(match(R"(root ::= "a"? "b")", "b"), "complete");
  EXPECT_EQ(match(R"(root ::= "a"? "b")", "aab"), "no");
  const std::string three = R"(root ::= "ab"{3})";
  EXPECT_EQ(match(three, "ababab"), "complete");
  EXPECT_EQ(match(three, "abab"), "prefix");
  EXPECT_EQ(match(three, "abababa"), "no");
  const std::string at_least = R"(root ::= [0-9]{2,})";
  EXPECT_EQ(match(at_least, "1"), "prefix");
  EXPECT_EQ(match(at_least, "12345678901234567890"), "complete");
  const std::string bounded = R"(root ::= ("x" | "yz"){ 1 , 3 } "!")";
  EXPECT_EQ(match(bounded, "!"), "no");
  EXPECT_EQ(match(bounded, "yzx!"), "complete");
  EXPECT_EQ(match(bounded, "xyzx!"), "complete");
  EXPECT_EQ(match(bounded, "xxxx"), "no");
  EXPECT_EQ(match(R"(root ::= "a"{0} "b")", "b"), "complete");
  EXPECT_EQ(match(R"(root ::= "a"{2}{2})", "aaaa"), "complete"); // repeated repetition
  // Long repetitions stay flat on the stack and fast to match.
  EXPECT_EQ(match(R"(root ::= [a]{0,10000})", std::string(10000, 'a')), "complete");
  EXPECT_EQ(match(R"(root ::= [a]{0,10000})", std::string(10001, 'a')), "no");
  // Counted ones (lower.h), nested, with a minimum, of what may match "".
  const std::string nested = R"(root ::= ("x" [0-9]{2,12} ","){10,20})";
  std::string ten;
  for (int i = 0; i < 10; ++i)
    ten += "x" + std::string(2 + i, '7') + ",";
  EXPECT_EQ(match(nested, ten), "complete");
  EXPECT_EQ(match(nested, ten.substr(0, ten.size() - 1)), "prefix");
  EXPECT_EQ(match(nested, ten + ten), "complete");
  EXPECT_EQ(match(nested, ten + ten + "x"), "no");
  EXPECT_EQ(match(nested, "x7,"), "no");
  EXPECT_EQ(match(nested, "x" + std::string(13, '7')), "no");
  EXPECT_EQ(match(R"(root ::= ("ab"{10000}){10000})", "abababa"), "prefix");
  EXPECT_EQ(match(R"(root ::= ("a"? "b"?){20} "c")", "abbac"), "complete");
  EXPECT_EQ(match(R"(root ::= ("a"? "b"?){0,20} "c")", std::string(20, 'a') + "c"), "complete");
  EXPECT_EQ(match(R"(root ::= ("a"? "b"?){0,20} "c")", std::string(21, 'a')), "no");
}

TEST(GbnfSyntax, PrintsCountedRepetitions) {
  EXPECT_EQ(Grammar::parse(R"(root ::= [0-9]{2,20} "x"{8})").to_string(),
            "root ::= [0-9] [0-9] root_1 [x] [x] [x] [x] [x] [x] [x] [x]\nroot_1 ::= [0-9]{0,18}\n");
}

TEST(GbnfSyntax, RecursionAndNullableRepetition) {
  const std::string nested = R"g(root ::= "(" root ")" | "")g";
  EXPECT_EQ(match(nested, "((()))"), "complete");
  EXPECT_EQ(match(nested, "(()"), "prefix");
  EXPECT_EQ(match(nested, "())"), "no");
  // A repetition of something that matches "" is a tail call of itself, not
  // left recursion.
  EXPECT_EQ(match(R"(root ::= ("a"?)* "b")", "aab"), "complete");
  EXPECT_EQ(match("root ::= (ws | \"x\")+\nws ::= \" \"*", " x "), "complete");
}

TEST(GbnfSyntax, PrintsTheLoweredRules) {
  std::string text = Grammar::parse(R"(root ::= "a" [0-9]* )").to_string();
  EXPECT_EQ(text, "root ::= [a] root_1\nroot_1 ::= [0-9] root_1 |\n");
}

TEST(GbnfSyntax, DropsWhatCannotComplete) {
  // b only recurses and [] matches nothing: those alternatives go.
  auto g = Grammar::parse("root ::= \"a\" | b | [] \"c\"\nb ::= \"x\" b");
  EXPECT_EQ(g.to_string(), "root ::= [a]\n");
  EXPECT_EQ(match("root ::= \"a\" | b\nb ::= \"x\" b", "x"), "no");
}

TEST(GbnfSyntax, ParsesTheJsonGrammar) {
  EXPECT_EQ(match(testing::kJsonGrammar, R"({"a": [1, -2.5e3, true, null, {"b": "\u00e9\n"}]})"),
            "complete");
  EXPECT_EQ(match(testing::kJsonGrammar, R"({"a": 01})"), "no");
}

TEST(GbnfErrors, MalformedTextNamesLineColumnAndWhatWasExpected) {
  EXPECT_ERROR("root ::= \"abc", "GBNF line 1, column 10: unterminated string literal");
  EXPECT_ERROR("root ::= \"a\"\nx ::= [abc", "GBNF line 2, column 7: unterminated character class");
  EXPECT_ERROR("root ::= \"\\q\"", "line 1, column 11: unknown escape '\\q'");
  EXPECT_ERROR("root ::= \"\\x4\"", "expected 2 hex digits");
  EXPECT_ERROR("root ::= \"\\uD800\"", "U+D800, which is no Unicode scalar value");
  EXPECT_ERROR("root ::= \"\\U00110000\"", "no Unicode scalar value");
  EXPECT_ERROR("root ::= [z-a]", "backwards");
  EXPECT_ERROR("root \"x\"", "line 1, column 6: expected '::=' after rule name 'root'");
  EXPECT_ERROR("::= \"x\"", "line 1, column 1: expected a rule name");
  EXPECT_ERROR("root ::= (\"a\" \"b\"\n", "expected ')' to close the '(' at 1:10");
  EXPECT_ERROR("root ::= \"a\" )", "line 1, column 14: expected the end of rule 'root'");
  EXPECT_ERROR("root ::= * \"a\"", "expected an item before '*'");
  EXPECT_ERROR("root ::= \"a\" \xFF", "line 1, column 14: invalid UTF-8");
}

TEST(GbnfErrors, BadRepetitionBounds) {
  EXPECT_ERROR("root ::= \"a\"{3,1}", "repetition {3,1}: the maximum is below the minimum");
  EXPECT_ERROR("root ::= \"a\"{,3}", "expected a number in the repetition");
  EXPECT_ERROR("root ::= \"a\"{3", "expected '}' to end the repetition");
  EXPECT_ERROR("root ::= \"a\"{3 4}", "expected '}' to end the repetition");
  EXPECT_ERROR("root ::= \"a\"{10001}", "repetition bound above the limit of 10000");
  EXPECT_ERROR("root ::= \"a\"{1,99999999999999999999}", "above the limit");
}

TEST(GbnfErrors, RulesThatAreMissingTwiceDefinedOrLeftRecursive) {
  EXPECT_ERROR("root ::= item\nitem ::= \"a\" | other", "GBNF line 2, column 16: undefined rule 'other'");
  EXPECT_ERROR("item ::= \"a\"", "no rule 'root'");
  EXPECT_ERROR("root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice");
  EXPECT_ERROR("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]",
               "left recursion: rule 'expr'");
  // Through a prefix that can match nothing, and through other rules.
  EXPECT_ERROR("root ::= opt root \"x\" | \"y\"\nopt ::= \"z\"?", "left recursion: rule 'root'");
  EXPECT_ERROR("root ::= a\na ::= b \"x\" | \"y\"\nb ::= \"\" a", "left recursion: rule 'a'");
  EXPECT_ERROR("root ::= (\"a\"? root) \"b\" | \"c\"", "left recursion: rule 'root'");
  EXPECT_ERROR("root ::= (\"a\" | root){9}", "left recursion: rule 'root'"); // through a counted rule
  EXPECT_ERROR("root ::= [^\\x00-\\U0010FFFF]", "matches no text");
  EXPECT_ERROR("root ::= \"a\" root", "matches no text");
}

TEST(GbnfErrors, LimitsOnHostileText) {
  EXPECT_ERROR(std::string("root ::= ") + std::string(100, '(') + "\"a\"" + std::string(100, ')'),
               "nesting deeper than 64");
  EXPECT_ERROR("root ::= \"a\"" + std::string(100, '*'), "nesting deeper than 64");
  std::string nested_repetitions = "\"a\"";
  for (int i = 0; i < 30; ++i)
    nested_repetitions = "(" + nested_repetitions + ")**";
  EXPECT_ERROR("root ::= " + nested_repetitions, "nesting deeper than 64");
  // What can match "" is written out when repeated (lower.h): 11 * 10000 elements.
  std::string written_out = "root ::=";
  for (int i = 0; i < 11; ++i)
    written_out += " (\"a\"?){10000}";
  EXPECT_ERROR(written_out, "too large");
  EXPECT_ERROR("root ::= x{0,10000}{0,10000}{0,10000}{0,10000}\nx ::= \"x\"", "too large");
  EXPECT_ERROR("root ::= \"" + std::string(kMaxGrammarBytes, 'a') + "\"", "over the limit");
}

// Mangled grammars never crash or hang: each parses or throws GrammarError.
TEST(GbnfErrors, MangledGrammarsFailCleanly) {
  const std::string json = testing::kJsonGrammar;
  const std::string alphabet = "\"\\[]()|*+?{},-^.:=# \nax0\x01\xC3\xA9";
  std::mt19937 rng(7);
  int parsed = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text = json;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % (text.size() + 1);
      switch (rng() % 3) {
      case 0: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      case 1: if (at < text.size()) text.erase(at, 1); break;
      default: if (at < text.size()) text[at] = alphabet[rng() % alphabet.size()]; break;
      }
    }
    try {
      Matcher m(compile(Grammar::parse(text), testing::byte_vocabulary()));
      std::vector<uint32_t> mask(testing::byte_vocabulary()->mask_words());
      m.fill_next_token_mask(mask.data());
      m.accept_bytes("{\"a\": [1, \"x\"]}");
      ++parsed;
    } catch (const GrammarError &) {
    }
  }
  EXPECT_GT(parsed, 100);
}

} // namespace
} // namespace llmserve::grammar
