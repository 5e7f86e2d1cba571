#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

namespace llmserve {
namespace {

using Pieces = std::vector<std::string>;
using nlohmann::json;

Pieces split(const json &config, std::string_view text, bool at_start = true) {
  llmserve::Pieces out;
  PreTokenizer::from_json(config).split(text, at_start, out);
  Pieces pieces;
  for (const Piece &piece : out.list)
    pieces.emplace_back(piece.text);
  return pieces;
}

json split_config(json pattern, const char *behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}};
}

TEST(PreTokenizer, NoneKeepsTheText) {
  EXPECT_EQ(split(nullptr, "a b"), (Pieces{"a b"}));
  EXPECT_EQ(split(nullptr, ""), Pieces{});
}

TEST(PreTokenizer, SplitBehaviors) {
  // The examples of Hugging Face's SplitDelimiterBehavior.
  const std::pair<const char *, Pieces> cases[] = {
      {"Removed", {"the", "final", "countdown"}},
      {"Isolated", {"the", "-", "final", "-", "-", "countdown"}},
      {"MergedWithPrevious", {"the-", "final-", "-", "countdown"}},
      {"MergedWithNext", {"the", "-final", "-", "-countdown"}},
      {"Contiguous", {"the", "-", "final", "--", "countdown"}},
  };
  for (const auto &[behavior, expected] : cases)
    EXPECT_EQ(split(split_config({{"String", "-"}}, behavior), "the-final--countdown"), expected)
        << behavior;
}

TEST(PreTokenizer, InvertedSplitBehaviors) {
  // A regex for the words: with invert, the stretches between them are the
  // delimiters.
  const std::pair<const char *, Pieces> cases[] = {
      {"Removed", {"How", "are", "you", "doing", "?"}},
      {"Isolated", {"How", " ", "are", " ", "you", " ", "doing", "?"}},
      {"MergedWithPrevious", {"How ", "are ", "you ", "doing", "?"}},
      {"MergedWithNext", {"How", " are", " you", " doing", "?"}},
      {"Contiguous", {"How", " ", "are", " ", "you", " ", "doing?"}},
  };
  for (const auto &[behavior, expected] : cases)
    EXPECT_EQ(split(split_config({{"Regex", "\\w+|[^\\w\\s]+"}}, behavior, true),
                    "How are you doing?"),
              expected)
        << behavior;
}

TEST(PreTokenizer, EmptyMatchesAsOniguruma) {
  // \d* matches emptily too; an empty match right after a match is skipped.
  EXPECT_EQ(split(split_config({{"Regex", "\\d*"}}, "MergedWithPrevious"), "a1bbb2"),
            (Pieces{"a1", "b", "b", "b2"}));
  EXPECT_EQ(split(split_config({{"Regex", "\\d*"}}, "Removed", true), "a1bbb2"),
            (Pieces{"1", "2"}));
  EXPECT_EQ(split(split_config({{"Regex", "(?<=a)"}}, "Isolated"), "aaa"),
            (Pieces{"a", "a", "a"}));
}

TEST(PreTokenizer, ByteLevel) {
  json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(split(byte_level, "Hello world"), (Pieces{" Hello", " world"}));
  byte_level["use_regex"] = false;
  EXPECT_EQ(split(byte_level, "Hello world"), (Pieces{" Hello world"}));
  // After a split, every piece gets the space.
  json sequence = {{"type", "Sequence"},
                   {"pretokenizers", {split_config({{"String", " "}}, "Removed"), byte_level}}};
  EXPECT_EQ(split(sequence, "ab cd  ef"), (Pieces{" ab", " cd", " ef"}));
}

TEST(PreTokenizer, StepsAfterByteLevelSeeTheByteMap) {
  // The space is spelled Ġ there, which \s does not match; "é" is two mapped
  // bytes. The pieces come back as bytes.
  json sequence = {{"type", "Sequence"},
                   {"pretokenizers",
                    {{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}},
                     split_config({{"Regex", "\\s"}}, "Isolated"),
                     split_config({{"Regex", "\u00c3"}}, "MergedWithNext")}}};
  EXPECT_EQ(split(sequence, "ab c\u00e9"), (Pieces{"ab c", "\u00e9"}));
}

TEST(PreTokenizer, FixedSplitters) {
  EXPECT_EQ(split({{"type", "Whitespace"}}, "ab, cd!? e_f"),
            (Pieces{"ab", ",", "cd", "!?", "e_f"}));
  EXPECT_EQ(split({{"type", "WhitespaceSplit"}}, "ab, cd!?\u3000e_f"),
            (Pieces{"ab,", "cd!?", "e_f"}));
  EXPECT_EQ(split({{"type", "BertPreTokenizer"}}, "ab, cd!? e_f"),
            (Pieces{"ab", ",", "cd", "!", "?", "e", "_", "f"}));
  EXPECT_EQ(split({{"type", "Punctuation"}}, "a,b!!c$"), (Pieces{"a", ",", "b", "!", "!", "c", "$"}));
  EXPECT_EQ(split({{"type", "Punctuation"}, {"behavior", "Removed"}}, "a,b!!c"),
            (Pieces{"a", "b", "c"}));
  EXPECT_EQ(split({{"type", "Digits"}, {"individual_digits", false}}, "a12b3\u0663"),
            (Pieces{"a", "12", "b", "3\u0663"}));
  EXPECT_EQ(split({{"type", "Digits"}, {"individual_digits", true}}, "a12b3"),
            (Pieces{"a", "1", "2", "b", "3"}));
  EXPECT_EQ(split({{"type", "CharDelimiterSplit"}, {"delimiter", ","}}, "ab, cd"),
            (Pieces{"ab", " cd"}));
}

TEST(PreTokenizer, Metaspace) {
  json metaspace = {{"type", "Metaspace"}, {"replacement", "\u2581"},
                    {"prepend_scheme", "first"}, {"split", true}};
  EXPECT_EQ(split(metaspace, "a  b"), (Pieces{"\u2581a", "\u2581", "\u2581b"}));
  EXPECT_EQ(split(metaspace, "a b", false), (Pieces{"a", "\u2581b"}));
  EXPECT_EQ(split(metaspace, " a"), (Pieces{"\u2581a"})); // already starts with a space
  metaspace["split"] = false;
  EXPECT_EQ(split(metaspace, "a b"), (Pieces{"\u2581a\u2581b"}));
  // "first": only the piece at the start of the input, after a split too.
  json sequence = {{"type", "Sequence"},
                   {"pretokenizers", {split_config({{"String", " "}}, "Removed"), metaspace}}};
  EXPECT_EQ(split(sequence, "ab cd"), (Pieces{"\u2581ab", "cd"}));
  EXPECT_EQ(split(sequence, " ab cd"), (Pieces{"ab", "cd"}));
}

} // namespace
} // namespace llmserve
